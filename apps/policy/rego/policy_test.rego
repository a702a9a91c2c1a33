# Unit tests for policy.rego: `opa test apps/policy/rego -v` (or `npm run rego:test -w @secsvc/policy`).
# Most tests give data.policies as a plain array (no data.index: every policy is a candidate); the index
# tests at the end give the indexed document the engine builds.
package secsvc.authz_test

import data.secsvc.authz

alice := {"id": "user_alice", "roles": ["role_admin", "role_dev"]}

bob := {"id": "user_bob", "roles": []}

req(principal, action, resource) := {"principal": principal, "action": action, "resource": resource, "context": {}}

req_ip(principal, action, resource, ip) := {
	"principal": principal,
	"action": action,
	"resource": resource,
	"context": {"ip": ip},
}

pol(id, effect, principals, actions, resources) := {
	"id": id,
	"name": concat("", ["name of ", id]),
	"effect": effect,
	"principals": principals,
	"actions": actions,
	"resources": resources,
	"conditions": {},
}

req_ctx(principal, context) := {"principal": principal, "action": "read", "resource": "/x", "context": context}

pol_mfa(id, effect, condition) := object.union(
	pol(id, effect, ["*"], ["*"], ["*"]),
	{"conditions": {"mfa": condition}},
)

pol_ip(id, effect, allowlist) := object.union(
	pol(id, effect, ["*"], ["*"], ["*"]),
	{"conditions": {"ip": {"allowlist": allowlist}}},
)

# The decision for request r against the policies ps (no index).
decide(ps, r) := d if {
	d := authz.decision with data.policies as ps with input as r
}

# Whether the single policy p matches request r.
matches(p, r) if {
	decide([p], r).matched == [{"id": p.id, "name": p.name, "effect": p.effect}]
}

# --- principals --------------------------------------------------------------------------------------

test_principal_star_matches_any_user if {
	matches(pol("p", "allow", ["*"], ["read"], ["/x"]), req(alice, "read", "/x"))
	matches(pol("p", "allow", ["*"], ["read"], ["/x"]), req(bob, "read", "/x"))
}

test_principal_user_self_matches_any_user if {
	matches(pol("p", "allow", ["user:${self}"], ["read"], ["/x"]), req(alice, "read", "/x"))
	matches(pol("p", "allow", ["user:${self}"], ["read"], ["/x"]), req(bob, "read", "/x"))
}

test_principal_user_id_matches_only_that_user if {
	matches(pol("p", "allow", ["user:user_bob"], ["read"], ["/x"]), req(bob, "read", "/x"))
	not matches(pol("p", "allow", ["user:user_bob"], ["read"], ["/x"]), req(alice, "read", "/x"))
}

test_principal_user_id_is_exact if {
	not matches(pol("p", "allow", ["user:user_bo"], ["read"], ["/x"]), req(bob, "read", "/x"))
	not matches(pol("p", "allow", ["user:user_bob2"], ["read"], ["/x"]), req(bob, "read", "/x"))
	not matches(pol("p", "allow", ["user_bob"], ["read"], ["/x"]), req(bob, "read", "/x"))
}

test_principal_role_matches_holders_of_role_underscore_name if {
	matches(pol("p", "allow", ["role:admin"], ["read"], ["/x"]), req(alice, "read", "/x"))
	matches(pol("p", "allow", ["role:dev"], ["read"], ["/x"]), req(alice, "read", "/x"))
	not matches(pol("p", "allow", ["role:admin"], ["read"], ["/x"]), req(bob, "read", "/x"))
}

test_principal_role_is_exact if {
	not matches(pol("p", "allow", ["role:adm"], ["read"], ["/x"]), req(alice, "read", "/x"))
	not matches(pol("p", "allow", ["role:admin2"], ["read"], ["/x"]), req(alice, "read", "/x"))
	not matches(pol("p", "allow", ["role:role_admin"], ["read"], ["/x"]), req(alice, "read", "/x"))
	not matches(pol("p", "allow", ["role_admin"], ["read"], ["/x"]), req(alice, "read", "/x"))
}

test_principal_role_needs_role_prefix_on_the_user_side if {
	carol := {"id": "user_carol", "roles": ["admin"]}
	not matches(pol("p", "allow", ["role:admin"], ["read"], ["/x"]), req(carol, "read", "/x"))
}

test_principal_any_of_several_patterns if {
	p := pol("p", "allow", ["user:user_carol", "role:dev"], ["read"], ["/x"])
	matches(p, req(alice, "read", "/x"))
	not matches(p, req(bob, "read", "/x"))
}

test_principal_empty_list_matches_nobody if {
	not matches(pol("p", "allow", [], ["read"], ["/x"]), req(alice, "read", "/x"))
}

# --- actions -----------------------------------------------------------------------------------------

test_action_exact if {
	matches(pol("p", "allow", ["*"], ["read"], ["/x"]), req(bob, "read", "/x"))
	not matches(pol("p", "allow", ["*"], ["read"], ["/x"]), req(bob, "delete", "/x"))
	not matches(pol("p", "allow", ["*"], ["rea"], ["/x"]), req(bob, "read", "/x"))
	not matches(pol("p", "allow", ["*"], ["Read"], ["/x"]), req(bob, "read", "/x"))
}

test_action_star_matches_any_action if {
	matches(pol("p", "allow", ["*"], ["*"], ["/x"]), req(bob, "read", "/x"))
	matches(pol("p", "allow", ["*"], ["*"], ["/x"]), req(bob, "simulate", "/x"))
}

test_action_any_of_several if {
	p := pol("p", "allow", ["*"], ["create", "update"], ["/x"])
	matches(p, req(bob, "update", "/x"))
	not matches(p, req(bob, "read", "/x"))
}

# --- resources ---------------------------------------------------------------------------------------

test_resource_exact if {
	matches(pol("p", "allow", ["*"], ["read"], ["/a/b"]), req(bob, "read", "/a/b"))
	not matches(pol("p", "allow", ["*"], ["read"], ["/a/b"]), req(bob, "read", "/a/b/c"))
	not matches(pol("p", "allow", ["*"], ["read"], ["/a/b"]), req(bob, "read", "/a"))
	not matches(pol("p", "allow", ["*"], ["read"], ["/a/b"]), req(bob, "read", "/a/b/"))
}

test_resource_star_matches_everything if {
	matches(pol("p", "allow", ["*"], ["read"], ["*"]), req(bob, "read", "/"))
	matches(pol("p", "allow", ["*"], ["read"], ["*"]), req(bob, "read", "/a/b/c"))
}

test_resource_subtree_matches_strictly_below if {
	p := pol("p", "allow", ["*"], ["read"], ["/a/*"])
	matches(p, req(bob, "read", "/a/b"))
	matches(p, req(bob, "read", "/a/b/c/d"))
	not matches(p, req(bob, "read", "/a"))
	not matches(p, req(bob, "read", "/a/"))
	not matches(p, req(bob, "read", "/ab"))
	not matches(p, req(bob, "read", "/ab/c"))
	not matches(p, req(bob, "read", "/b/a/c"))
}

test_resource_root_subtree if {
	p := pol("p", "allow", ["*"], ["read"], ["/*"])
	matches(p, req(bob, "read", "/a"))
	not matches(p, req(bob, "read", "/"))
}

test_resource_nested_subtree if {
	p := pol("p", "allow", ["*"], ["read"], ["/a/b/*"])
	matches(p, req(bob, "read", "/a/b/c"))
	not matches(p, req(bob, "read", "/a/b"))
	not matches(p, req(bob, "read", "/a/c"))
}

test_resource_self_segment_is_the_user_id if {
	p := pol("p", "allow", ["*"], ["read"], ["/users/${self}"])
	matches(p, req(alice, "read", "/users/user_alice"))
	matches(p, req(bob, "read", "/users/user_bob"))
	not matches(p, req(bob, "read", "/users/user_alice"))
	not matches(p, req(bob, "read", "/users/${self}"))
}

test_resource_self_segment_in_the_middle_and_subtree if {
	p := pol("p", "allow", ["*"], ["read"], ["/users/${self}/keys/*"])
	matches(p, req(bob, "read", "/users/user_bob/keys/key_1"))
	not matches(p, req(bob, "read", "/users/user_bob/keys"))
	not matches(p, req(alice, "read", "/users/user_bob/keys/key_1"))
}

test_resource_self_subtree_below_the_user if {
	p := pol("p", "allow", ["*"], ["read"], ["/users/${self}/*"])
	matches(p, req(bob, "read", "/users/user_bob/sessions"))
	not matches(p, req(bob, "read", "/users/user_bob"))
}

test_resource_self_only_as_a_whole_segment if {
	p := pol("p", "allow", ["*"], ["read"], ["/users/x${self}"])
	not matches(p, req(bob, "read", "/users/xuser_bob"))
	matches(p, req(bob, "read", "/users/x${self}"))
}

test_resource_self_twice if {
	p := pol("p", "allow", ["*"], ["read"], ["/${self}/${self}"])
	matches(p, req(bob, "read", "/user_bob/user_bob"))
}

test_resource_self_without_user_id_matches_nothing if {
	p := pol("p", "allow", ["*"], ["read"], ["/users/${self}"])
	not matches(p, req({"roles": []}, "read", "/users/"))
	not matches(p, req({"roles": []}, "read", "/users"))
}

test_resource_any_of_several if {
	p := pol("p", "allow", ["*"], ["read"], ["/a", "/b/*"])
	matches(p, req(bob, "read", "/a"))
	matches(p, req(bob, "read", "/b/c"))
	not matches(p, req(bob, "read", "/b"))
}

# --- conditions --------------------------------------------------------------------------------------

test_no_conditions_always_hold if {
	p := pol("p", "allow", ["*"], ["read"], ["/x"])
	matches(p, req(bob, "read", "/x"))
	matches(object.remove(p, ["conditions"]), req(bob, "read", "/x"))
	matches(object.union(p, {"conditions": null}), req(bob, "read", "/x"))
}

test_ip_allowlist_ipv4 if {
	p := pol_ip("p", "allow", ["10.0.0.0/8", "192.168.1.0/24"])
	matches(p, req_ip(bob, "read", "/x", "10.1.2.3"))
	matches(p, req_ip(bob, "read", "/x", "192.168.1.255"))
	not matches(p, req_ip(bob, "read", "/x", "192.168.2.1"))
	not matches(p, req_ip(bob, "read", "/x", "11.0.0.1"))
}

test_ip_allowlist_single_host if {
	p := pol_ip("p", "allow", ["203.0.113.7/32"])
	matches(p, req_ip(bob, "read", "/x", "203.0.113.7"))
	not matches(p, req_ip(bob, "read", "/x", "203.0.113.8"))
}

test_ip_allowlist_ipv6 if {
	p := pol_ip("p", "allow", ["2001:db8::/32"])
	matches(p, req_ip(bob, "read", "/x", "2001:db8::1"))
	matches(p, req_ip(bob, "read", "/x", "2001:db8:ffff::1"))
	not matches(p, req_ip(bob, "read", "/x", "2001:db9::1"))
	not matches(p, req_ip(bob, "read", "/x", "10.0.0.1"))
}

test_ip_allowlist_families_do_not_mix if {
	not matches(pol_ip("p", "allow", ["::/0"]), req_ip(bob, "read", "/x", "10.0.0.1"))
	not matches(pol_ip("p", "allow", ["0.0.0.0/0"]), req_ip(bob, "read", "/x", "2001:db8::1"))
}

test_ip_v4_mapped_dotted_is_the_ipv4_address if {
	matches(pol_ip("p", "allow", ["10.0.0.0/8"]), req_ip(bob, "read", "/x", "::ffff:10.1.2.3"))
	matches(pol_ip("p", "allow", ["10.0.0.0/8"]), req_ip(bob, "read", "/x", "::FFFF:10.1.2.3"))
	not matches(pol_ip("p", "allow", ["11.0.0.0/8"]), req_ip(bob, "read", "/x", "::ffff:10.1.2.3"))
	not matches(pol_ip("p", "allow", ["::/0"]), req_ip(bob, "read", "/x", "::ffff:10.1.2.3"))
	not matches(pol_ip("p", "allow", ["::ffff:0:0/96"]), req_ip(bob, "read", "/x", "::ffff:10.1.2.3"))
	not matches(pol_ip("p", "allow", ["::ffff:0:0/96"]), req_ip(bob, "read", "/x", "10.1.2.3"))
}

test_ip_v4_mapped_other_spellings_match_nothing if {
	p := pol_ip("p", "allow", ["10.0.0.0/8", "::/0", "::ffff:0:0/96"])
	not matches(p, req_ip(bob, "read", "/x", "::ffff:a01:203"))
	not matches(p, req_ip(bob, "read", "/x", "0:0:0:0:0:ffff:10.1.2.3"))
	matches(p, req_ip(bob, "read", "/x", "2001:db8::1"))
}

test_ip_trailing_single_colon_is_not_an_address if {
	p := pol_ip("p", "allow", ["::/0"])
	not matches(p, req_ip(bob, "read", "/x", "::ffff:"))
	not matches(p, req_ip(bob, "read", "/x", "1::2:"))
	not matches(p, req_ip(bob, "read", "/x", ":"))
	matches(p, req_ip(bob, "read", "/x", "1::"))
	matches(p, req_ip(bob, "read", "/x", "::"))
}

test_ip_condition_fails_without_ip if {
	p := pol_ip("p", "allow", ["0.0.0.0/0", "::/0"])
	not matches(p, req(bob, "read", "/x"))
	not matches(p, object.remove(req(bob, "read", "/x"), ["context"]))
	not matches(p, req_ip(bob, "read", "/x", null))
}

test_ip_condition_fails_on_invalid_ip if {
	p := pol_ip("p", "allow", ["0.0.0.0/0", "::/0"])
	not matches(p, req_ip(bob, "read", "/x", "not-an-ip"))
	not matches(p, req_ip(bob, "read", "/x", ""))
	not matches(p, req_ip(bob, "read", "/x", "10.0.0.256"))
	not matches(p, req_ip(bob, "read", "/x", 167772161))
}

test_ip_condition_rejects_a_cidr_as_the_ip if {
	p := pol_ip("p", "allow", ["10.0.0.0/8"])
	not matches(p, req_ip(bob, "read", "/x", "10.1.0.0/16"))
}

test_ip_condition_invalid_cidr_in_list_is_skipped if {
	p := pol_ip("p", "allow", ["bogus", "10.0.0.0/8"])
	matches(p, req_ip(bob, "read", "/x", "10.0.0.1"))
	not matches(pol_ip("p", "allow", ["bogus"]), req_ip(bob, "read", "/x", "10.0.0.1"))
}

test_ip_condition_empty_allowlist_fails if {
	not matches(pol_ip("p", "allow", []), req_ip(bob, "read", "/x", "10.0.0.1"))
	p := object.union(pol("p", "allow", ["*"], ["*"], ["*"]), {"conditions": {"ip": {}}})
	not matches(p, req_ip(bob, "read", "/x", "10.0.0.1"))
}

test_unknown_condition_never_holds if {
	p := object.union(pol("p", "allow", ["*"], ["*"], ["*"]), {"conditions": {"time": {"after": "09:00"}}})
	not matches(p, req_ip(bob, "read", "/x", "10.0.0.1"))
}

test_mfa_true_holds_for_any_completed_mfa if {
	p := pol_mfa("p", "allow", true)
	matches(p, req_ctx(bob, {"mfa": true}))
	matches(p, req_ctx(bob, {"mfa": true, "mfaAgeSeconds": 0}))
	matches(p, req_ctx(bob, {"mfa": true, "mfaAgeSeconds": 31536000}))

	# the age is not looked at without a maximum, whatever it is
	matches(p, req_ctx(bob, {"mfa": true, "mfaAgeSeconds": -5}))
	matches(p, req_ctx(bob, {"mfa": true, "mfaAgeSeconds": "old"}))
}

test_mfa_object_without_max_age_holds_for_any_completed_mfa if {
	p := pol_mfa("p", "allow", {})
	matches(p, req_ctx(bob, {"mfa": true}))
	matches(p, req_ctx(bob, {"mfa": true, "mfaAgeSeconds": 999999}))
	not matches(p, req_ctx(bob, {"mfa": false}))
}

test_mfa_fails_without_a_completed_mfa if {
	every condition in [true, {}, {"maxAgeSeconds": 300}] {
		p := pol_mfa("p", "allow", condition)
		matches(p, req_ctx(bob, {"mfa": true, "mfaAgeSeconds": 0}))
		not matches(p, req(bob, "read", "/x"))
		not matches(p, object.remove(req(bob, "read", "/x"), ["context"]))
		not matches(p, req_ctx(bob, {"mfa": false, "mfaAgeSeconds": 0}))
		not matches(p, req_ctx(bob, {"mfa": null}))
		not matches(p, req_ctx(bob, {"mfa": "true", "mfaAgeSeconds": 0}))
		not matches(p, req_ctx(bob, {"mfa": 1, "mfaAgeSeconds": 0}))
		not matches(p, req_ctx(bob, {"mfaAgeSeconds": 0}))
		not matches(p, req_ctx(bob, {"ip": "10.0.0.1"}))
	}
}

test_mfa_max_age_holds_from_0_to_the_max if {
	p := pol_mfa("p", "allow", {"maxAgeSeconds": 300})
	matches(p, req_ctx(bob, {"mfa": true, "mfaAgeSeconds": 0}))
	matches(p, req_ctx(bob, {"mfa": true, "mfaAgeSeconds": 1}))
	matches(p, req_ctx(bob, {"mfa": true, "mfaAgeSeconds": 299.5}))
	matches(p, req_ctx(bob, {"mfa": true, "mfaAgeSeconds": 300}))
	not matches(p, req_ctx(bob, {"mfa": true, "mfaAgeSeconds": 301}))
	not matches(p, req_ctx(bob, {"mfa": true, "mfaAgeSeconds": 300.5}))
	not matches(p, req_ctx(bob, {"mfa": true, "mfaAgeSeconds": -1}))
}

test_mfa_max_age_fails_on_a_missing_or_non_number_age if {
	p := pol_mfa("p", "allow", {"maxAgeSeconds": 300})
	not matches(p, req_ctx(bob, {"mfa": true}))
	not matches(p, req_ctx(bob, {"mfa": true, "mfaAgeSeconds": null}))
	not matches(p, req_ctx(bob, {"mfa": true, "mfaAgeSeconds": "10"}))
	not matches(p, req_ctx(bob, {"mfa": true, "mfaAgeSeconds": true}))
	not matches(p, req_ctx(bob, {"mfa": true, "mfaAgeSeconds": [10]}))
}

test_mfa_other_condition_forms_never_hold if {
	every condition in [
		false, null, "true", 1, [], [true],
		{"maxAgeSeconds": "300"}, {"maxAgeSeconds": null}, {"maxAgeSeconds": false},
		{"maxAgeSeconds": 300, "other": 1}, {"other": 1},
	] {
		not matches(pol_mfa("p", "allow", condition), req_ctx(bob, {"mfa": true, "mfaAgeSeconds": 0}))
	}
}

test_mfa_and_ip_must_both_hold if {
	p := object.union(pol("p", "allow", ["*"], ["*"], ["*"]), {"conditions": {
		"ip": {"allowlist": ["10.0.0.0/8"]},
		"mfa": {"maxAgeSeconds": 60},
	}})
	matches(p, req_ctx(bob, {"ip": "10.0.0.1", "mfa": true, "mfaAgeSeconds": 60}))
	not matches(p, req_ctx(bob, {"ip": "11.0.0.1", "mfa": true, "mfaAgeSeconds": 60}))
	not matches(p, req_ctx(bob, {"ip": "10.0.0.1", "mfa": true, "mfaAgeSeconds": 61}))
	not matches(p, req_ctx(bob, {"ip": "10.0.0.1"}))
}

test_mfa_condition_on_a_deny if {
	# a deny with an mfa condition applies only to requests that carry one
	ps := [pol("a", "allow", ["*"], ["*"], ["*"]), pol_mfa("d", "deny", true)]
	decide(ps, req_ctx(bob, {})).allowed
	not decide(ps, req_ctx(bob, {"mfa": true})).allowed
}

test_all_parts_must_match if {
	p := object.union(
		pol("p", "allow", ["role:dev"], ["update"], ["/a/*"]),
		{"conditions": {"ip": {"allowlist": ["10.0.0.0/8"]}}},
	)
	matches(p, req_ip(alice, "update", "/a/b", "10.0.0.1"))
	not matches(p, req_ip(bob, "update", "/a/b", "10.0.0.1"))
	not matches(p, req_ip(alice, "read", "/a/b", "10.0.0.1"))
	not matches(p, req_ip(alice, "update", "/a", "10.0.0.1"))
	not matches(p, req_ip(alice, "update", "/a/b", "11.0.0.1"))
}

# --- decision ----------------------------------------------------------------------------------------

test_default_deny_with_nothing_matched if {
	decide([], req(alice, "read", "/x")) == {"allowed": false, "effect": "deny", "matched": []}
	decide([pol("p", "allow", ["*"], ["read"], ["/y"])], req(alice, "read", "/x")) == {
		"allowed": false,
		"effect": "deny",
		"matched": [],
	}
}

test_allow if {
	decide([pol("p1", "allow", ["*"], ["read"], ["/x"])], req(alice, "read", "/x")) == {
		"allowed": true,
		"effect": "allow",
		"matched": [{"id": "p1", "name": "name of p1", "effect": "allow"}],
	}
}

test_deny_overrides_allow if {
	ps := [
		pol("p1", "allow", ["*"], ["*"], ["*"]),
		pol("p2", "deny", ["role:dev"], ["delete"], ["/a/*"]),
	]
	decide(ps, req(alice, "delete", "/a/b")) == {
		"allowed": false,
		"effect": "deny",
		"matched": [
			{"id": "p2", "name": "name of p2", "effect": "deny"},
			{"id": "p1", "name": "name of p1", "effect": "allow"},
		],
	}
	decide(ps, req(alice, "read", "/a/b")).allowed == true
	decide(ps, req(bob, "delete", "/a/b")).allowed == true
}

test_only_deny_matches if {
	decide([pol("p1", "deny", ["*"], ["*"], ["*"])], req(bob, "read", "/x")) == {
		"allowed": false,
		"effect": "deny",
		"matched": [{"id": "p1", "name": "name of p1", "effect": "deny"}],
	}
}

test_matched_denies_first_each_group_sorted_by_id if {
	ps := [
		pol("pol_c", "allow", ["*"], ["*"], ["*"]),
		pol("pol_b", "deny", ["*"], ["*"], ["*"]),
		pol("pol_a", "allow", ["*"], ["*"], ["*"]),
		pol("pol_z", "deny", ["*"], ["*"], ["*"]),
		pol("pol_d", "deny", ["*"], ["*"], ["*"]),
		pol("pol_x", "allow", ["user:nobody"], ["*"], ["*"]),
	]
	ids := [m.id | some m in decide(ps, req(bob, "read", "/x")).matched]
	ids == ["pol_b", "pol_d", "pol_z", "pol_a", "pol_c"]
}

test_unknown_effect_is_ignored if {
	decide([pol("p1", "audit", ["*"], ["*"], ["*"])], req(bob, "read", "/x")) == {
		"allowed": false,
		"effect": "deny",
		"matched": [],
	}
}

test_missing_name_reads_as_empty if {
	p := object.remove(pol("p1", "allow", ["*"], ["*"], ["*"]), ["name"])
	decide([p], req(bob, "read", "/x")).matched == [{"id": "p1", "name": "", "effect": "allow"}]
}

# --- the index ---------------------------------------------------------------------------------------

indexed_policies := {
	"p_role": pol("p_role", "allow", ["role:dev"], ["read"], ["/a/*"]),
	"p_user": pol("p_user", "deny", ["user:user_alice"], ["*"], ["/a/secret"]),
	"p_any": pol("p_any", "allow", ["*", "user:${self}"], ["create", "read"], ["/users/${self}"]),
}

index := {"by_action_principal": {
	"read": {
		"role:dev": {"p_role": true},
		"*": {"p_any": true},
	},
	"create": {"*": {"p_any": true}},
	"*": {"user:user_alice": {"p_user": true}},
}}

decide_indexed(r) := d if {
	d := authz.decision with data.policies as indexed_policies with data.index as index with input as r
}

test_index_gives_the_same_decisions_as_a_scan if {
	requests := [
		req(alice, "read", "/a/b"),
		req(alice, "read", "/a/secret"),
		req(alice, "delete", "/a/secret"),
		req(bob, "read", "/a/b"),
		req(bob, "create", "/users/user_bob"),
		req(alice, "create", "/users/user_bob"),
	]
	every r in requests {
		decide_indexed(r) == decide(indexed_policies, r)
	}
	decide_indexed(req(alice, "read", "/a/secret")).matched == [
		{"id": "p_user", "name": "name of p_user", "effect": "deny"},
		{"id": "p_role", "name": "name of p_role", "effect": "allow"},
	]
}

test_index_only_prunes_candidates_are_checked_in_full if {
	# p_role listed under a principal key it does not match and an action it does not allow: still no match.
	loose := {"by_action_principal": {"*": {"*": {"p_role": true}}}}
	d := authz.decision with data.policies as indexed_policies with data.index as loose with input as req(bob, "read", "/a/b")
	d.matched == []
}

test_index_is_used_when_present if {
	# A policy the index does not list is not a candidate (this is what makes the index fast, and why the
	# engine must list every policy under every key it could match).
	empty := {"by_action_principal": {}}
	d := authz.decision with data.policies as indexed_policies with data.index as empty with input as req(alice, "read", "/a/b")
	d.matched == []
}

test_index_role_keys_come_from_role_underscore_names if {
	d := decide_indexed(req({"id": "u", "roles": ["role_dev"]}, "read", "/a/x"))
	d.allowed == true
	d2 := decide_indexed(req({"id": "u", "roles": ["dev"]}, "read", "/a/x"))
	d2.allowed == false
}

# --- drafts (input.drafts) ---------------------------------------------------------------------------

with_drafts(r, mode, drafts) := object.union(r, {"drafts": {"mode": mode, "policies": drafts}})

stored := {
	"pol_s1": pol("pol_s1", "allow", ["*"], ["read"], ["/docs/*"]),
	"pol_s2": pol("pol_s2", "deny", ["role:dev"], ["read"], ["/docs/secret"]),
}

decide_stored(r) := d if {
	d := authz.decision with data.policies as stored with input as r
}

test_drafts_merge_adds_to_the_stored_policies if {
	r := with_drafts(req(alice, "read", "/docs/a"), "merge", [pol("draft_0", "deny", ["role:admin"], ["read"], ["/docs/*"])])
	decide_stored(r) == {
		"allowed": false,
		"effect": "deny",
		"matched": [
			{"id": "draft_0", "name": "name of draft_0", "effect": "deny"},
			{"id": "pol_s1", "name": "name of pol_s1", "effect": "allow"},
		],
	}
}

test_drafts_merge_is_the_default_mode if {
	r := object.union(req(bob, "create", "/new"), {"drafts": {"policies": [pol("draft_0", "allow", ["*"], ["create"], ["/new"])]}})
	decide_stored(r).allowed == true
	r2 := object.union(req(bob, "read", "/docs/a"), {"drafts": {"policies": []}})
	decide_stored(r2).matched == [{"id": "pol_s1", "name": "name of pol_s1", "effect": "allow"}]
}

test_drafts_replace_ignores_the_stored_policies if {
	d := pol("draft_0", "allow", ["*"], ["create"], ["/new"])
	decide_stored(with_drafts(req(bob, "read", "/docs/a"), "replace", [d])) == {"allowed": false, "effect": "deny", "matched": []}
	decide_stored(with_drafts(req(bob, "create", "/new"), "replace", [d])).matched == [{"id": "draft_0", "name": "name of draft_0", "effect": "allow"}]
	decide_stored(with_drafts(req(bob, "read", "/docs/a"), "replace", [])).matched == []
}

test_a_draft_with_a_stored_id_stands_in_for_it if {
	# pol_s2 denies devs /docs/secret; the draft of the same id narrows it to /docs/other
	edited := pol("pol_s2", "deny", ["role:dev"], ["read"], ["/docs/other"])
	r := with_drafts(req(alice, "read", "/docs/secret"), "merge", [edited])
	decide_stored(req(alice, "read", "/docs/secret")).allowed == false
	decide_stored(r) == {"allowed": true, "effect": "allow", "matched": [{"id": "pol_s1", "name": "name of pol_s1", "effect": "allow"}]}
}

test_drafts_with_the_index if {
	d := pol("draft_0", "allow", ["user:user_bob"], ["delete"], ["/a/*"])
	r := with_drafts(req(bob, "delete", "/a/b"), "merge", [d])
	authz.decision.allowed with data.policies as indexed_policies with data.index as index with input as r
	overridden := pol("p_user", "deny", ["user:user_alice"], ["*"], ["/elsewhere"])
	r2 := with_drafts(req(alice, "read", "/a/secret"), "merge", [overridden])
	d2 := authz.decision with data.policies as indexed_policies with data.index as index with input as r2
	d2.matched == [{"id": "p_role", "name": "name of p_role", "effect": "allow"}]
}

# --- explanations (entry point explained) --------------------------------------------------------------

explain(ps, r) := d if {
	d := authz.explained with data.policies as ps with input as r
}

why(ps, r) := explain(ps, r).not_matched

test_explained_carries_the_decision if {
	ps := [pol("p1", "allow", ["*"], ["read"], ["/x"]), pol("p2", "deny", ["role:ops"], ["read"], ["/x"])]
	r := req(alice, "read", "/x")
	e := explain(ps, r)
	{"allowed": e.allowed, "effect": e.effect, "matched": e.matched} == decide(ps, r)
	e.not_matched_count == 1
}

test_explain_principal if {
	why([pol("p1", "allow", ["role:ops", "user:user_bob"], ["read"], ["/x"])], req(alice, "read", "/x")) == [{
		"id": "p1", "name": "name of p1", "effect": "allow", "failed": "principal", "condition": null,
		"expected": ["role:ops", "user:user_bob"], "actual": ["user:user_alice", "role:admin", "role:dev"],
	}]
}

test_explain_principal_lists_only_role_underscore_roles if {
	carol := {"id": "user_carol", "roles": ["role_b", "admin", "role_a"]}
	why([pol("p1", "allow", ["role:admin"], ["read"], ["/x"])], req(carol, "read", "/x"))[0].actual == ["user:user_carol", "role:a", "role:b"]
}

test_explain_action if {
	why([pol("p1", "allow", ["*"], ["create", "update"], ["/x"])], req(bob, "read", "/x")) == [{
		"id": "p1", "name": "name of p1", "effect": "allow", "failed": "action", "condition": null,
		"expected": ["create", "update"], "actual": "read",
	}]
}

test_explain_resource if {
	why([pol("p1", "deny", ["*"], ["read"], ["/a/*", "/users/${self}"])], req(bob, "read", "/a")) == [{
		"id": "p1", "name": "name of p1", "effect": "deny", "failed": "resource", "condition": null,
		"expected": ["/a/*", "/users/${self}"], "actual": "/a",
	}]
}

test_explain_condition if {
	p := pol_ip("p1", "allow", ["10.0.0.0/8"])
	why([p], req_ip(bob, "read", "/x", "192.0.2.1")) == [{
		"id": "p1", "name": "name of p1", "effect": "allow", "failed": "condition", "condition": "ip.allowlist",
		"expected": ["10.0.0.0/8"], "actual": "192.0.2.1",
	}]
	why([p], req(bob, "read", "/x"))[0].actual == null
	why([p], req_ip(bob, "read", "/x", "::ffff:11.0.0.1"))[0].actual == "::ffff:11.0.0.1"
	why([p], req_ip(bob, "read", "/x", "::ffff:10.0.0.1")) == []
}

test_explain_mfa_without_a_completed_mfa if {
	why([pol_mfa("p1", "allow", true)], req(bob, "read", "/x")) == [{
		"id": "p1", "name": "name of p1", "effect": "allow", "failed": "condition", "condition": "mfa",
		"expected": [], "actual": null,
	}]
	why([pol_mfa("p1", "allow", {})], req_ctx(bob, {"mfa": false, "mfaAgeSeconds": 5}))[0] == {
		"id": "p1", "name": "name of p1", "effect": "allow", "failed": "condition", "condition": "mfa",
		"expected": [], "actual": null,
	}

	# with a maximum age, the maximum is expected even when there was no MFA at all
	why([pol_mfa("p1", "allow", {"maxAgeSeconds": 300})], req_ctx(bob, {"ip": "10.0.0.1"}))[0] == {
		"id": "p1", "name": "name of p1", "effect": "allow", "failed": "condition", "condition": "mfa",
		"expected": ["300"], "actual": null,
	}
}

test_explain_mfa_too_long_ago if {
	p := pol_mfa("p1", "deny", {"maxAgeSeconds": 300})
	why([p], req_ctx(bob, {"mfa": true, "mfaAgeSeconds": 900})) == [{
		"id": "p1", "name": "name of p1", "effect": "deny", "failed": "condition", "condition": "mfa.maxAgeSeconds",
		"expected": ["300"], "actual": "900",
	}]

	# an age that is unknown, not a number, not an integer or negative: MFA was used, the age is not met
	[[e.condition, e.expected, e.actual] | some e in why([p], req_ctx(bob, {"mfa": true}))] == [["mfa.maxAgeSeconds", ["300"], null]]
	[[e.condition, e.actual] | some e in why([p], req_ctx(bob, {"mfa": true, "mfaAgeSeconds": "9"}))] == [["mfa.maxAgeSeconds", null]]
	[[e.condition, e.actual] | some e in why([p], req_ctx(bob, {"mfa": true, "mfaAgeSeconds": 300.5}))] == [["mfa.maxAgeSeconds", null]]
	[[e.condition, e.actual] | some e in why([p], req_ctx(bob, {"mfa": true, "mfaAgeSeconds": -1}))] == [["mfa.maxAgeSeconds", "-1"]]
	why([p], req_ctx(bob, {"mfa": true, "mfaAgeSeconds": 300})) == []
}

test_explain_mfa_condition_that_cannot_hold if {
	# forms validation refuses: named "mfa", nothing expected; actual is still the request's age
	every condition in [false, {"maxAgeSeconds": "300"}, {"maxAgeSeconds": 300, "other": 1}] {
		why([pol_mfa("p1", "allow", condition)], req_ctx(bob, {"mfa": true, "mfaAgeSeconds": 7})) == [{
			"id": "p1", "name": "name of p1", "effect": "allow", "failed": "condition", "condition": "mfa",
			"expected": [], "actual": "7",
		}]
	}
}

test_explain_the_first_failing_condition_by_key if {
	p := object.union(pol("p1", "allow", ["*"], ["*"], ["*"]), {"conditions": {
		"mfa": true,
		"ip": {"allowlist": ["10.0.0.0/8"]},
	}})
	[[e.condition, e.actual] | some e in why([p], req_ctx(bob, {"ip": "11.0.0.1"}))] == [["ip.allowlist", "11.0.0.1"]]
	[[e.condition, e.actual] | some e in why([p], req_ctx(bob, {"ip": "10.0.0.1"}))] == [["mfa", null]]
	why([p], req_ctx(bob, {"ip": "10.0.0.1", "mfa": true})) == []
}

test_explain_reports_the_first_failing_part if {
	# everything fails: the principal is reported; then the action once the principal matches; and so on
	p := object.union(pol("p1", "allow", ["role:ops"], ["delete"], ["/y"]), {"conditions": {"ip": {"allowlist": ["10.0.0.0/8"]}}})
	why([p], req(bob, "read", "/x"))[0].failed == "principal"
	why([object.union(p, {"principals": ["*"]})], req(bob, "read", "/x"))[0].failed == "action"
	why([object.union(p, {"principals": ["*"], "actions": ["*"]})], req(bob, "read", "/x"))[0].failed == "resource"
	why([object.union(p, {"principals": ["*"], "actions": ["*"], "resources": ["*"]})], req(bob, "read", "/x"))[0].failed == "condition"
}

test_explain_matched_policies_get_nothing if {
	e := explain([pol("p1", "allow", ["*"], ["*"], ["*"])], req(bob, "read", "/x"))
	e.not_matched == []
	e.not_matched_count == 0
}

test_explain_order_drafts_first_then_nearest_misses_then_id if {
	ps := [
		pol("s_principal", "allow", ["role:none"], ["read"], ["/x"]),
		pol("s_action", "allow", ["*"], ["delete"], ["/x"]),
		pol_ip("s_condition", "allow", ["10.0.0.0/8"]),
		pol("s_resource_b", "allow", ["*"], ["read"], ["/y"]),
		pol("s_resource_a", "allow", ["*"], ["read"], ["/z"]),
	]
	drafts := [pol("draft_1", "allow", ["role:none"], ["read"], ["/x"]), pol("draft_0", "allow", ["*"], ["read"], ["/y"])]
	ids := [e.id | some e in why(ps, with_drafts(req(bob, "read", "/x"), "merge", drafts))]
	ids == ["draft_0", "draft_1", "s_condition", "s_resource_a", "s_resource_b", "s_action", "s_principal"]
}

test_explain_only_the_policies_in_play if {
	r := with_drafts(req(bob, "read", "/nothing"), "replace", [pol("draft_0", "allow", ["*"], ["read"], ["/y"])])
	[e.id | some e in explain(stored, r).not_matched] == ["draft_0"]
	edited := pol("pol_s1", "allow", ["*"], ["read"], ["/edited"])
	r2 := with_drafts(req(bob, "read", "/nothing"), "merge", [edited])
	e2 := explain(stored, r2).not_matched
	[[e.id, e.expected] | some e in e2] == [["pol_s1", ["/edited"]], ["pol_s2", ["role:dev"]]]
}

test_explain_lists_at_most_the_limit_and_counts_all if {
	ps := [pol(sprintf("p%03d", [i]), "allow", ["*"], ["read"], ["/y"]) | some i in numbers.range(1, 150)]
	e := explain(ps, req(bob, "read", "/x"))
	count(e.not_matched) == authz.explain_limit
	e.not_matched_count == 150
	e.not_matched[0].id == "p001"
	e.not_matched[99].id == "p100"
}

test_explain_with_the_index_lists_every_policy_not_matched if {
	e := authz.explained with data.policies as indexed_policies with data.index as index with input as req(bob, "read", "/a/b")
	[x.id | some x in e.not_matched] == ["p_any", "p_role", "p_user"]
	[x.failed | some x in e.not_matched] == ["resource", "principal", "principal"]
}

test_explain_lists_stored_policies_in_the_order_the_index_gives if {
	# the engine's index carries the ids sorted (sorting 10,000 of them in the program would be slow)
	ordered := object.union(index, {"order": ["p_user", "p_role", "p_any"]})
	e := authz.explained with data.policies as indexed_policies with data.index as ordered with input as req(bob, "read", "/a/b")
	[x.id | some x in e.not_matched] == ["p_any", "p_user", "p_role"]
}
