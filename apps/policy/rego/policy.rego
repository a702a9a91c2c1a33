# The access-policy semantics of the security service, written once. Compiled to WebAssembly
# (entry points secsvc/authz/decision and secsvc/authz/explained) and evaluated in process by
# apps/policy/src/engine; `opa test` runs policy_test.rego against it. The data document, the input and
# every rule are described in README.md.
package secsvc.authz

# The decision for one request:
#   {"allowed": bool, "effect": "allow"|"deny", "matched": [{"id", "name", "effect"}, ...]}
# Any matching deny wins; else any matching allow allows; else the default is deny with nothing matched.
# matched lists the denies first, then the allows, each group sorted by id.
decision := {
	"allowed": allowed,
	"effect": effect,
	"matched": matched,
}

# The matching policies with a known effect, stored ones and drafts alike: denies (rank 0) before allows
# (rank 1), each group sorted by id (then name, for a total order).
matched := [{"id": row[1], "name": row[2], "effect": row[3]} |
	some row in sort(array.concat(
		[[rank, p.id, name_of(p), p.effect] |
			some key in matching_keys
			p := data.policies[key]
			rank := effect_rank[p.effect]
		],
		[[rank, p.id, name_of(p), p.effect] |
			some i in matching_drafts
			p := input.drafts.policies[i]
			rank := effect_rank[p.effect]
		],
	))
]

effect_rank := {"deny": 0, "allow": 1}

default allowed := false

# Nothing matched is a deny, and so is any matching deny: it sorts first.
allowed if matched[0].effect == "allow"

effect := "allow" if {
	allowed
} else := "deny"

name_of(p) := p.name if {
	is_string(p.name)
} else := ""

# Keys (in data.policies) of the policies that match the request.
#
# With data.index, only the policies listed under one of the request's (action key, principal key) pairs are
# looked at. The index only prunes: each of them is still checked in full by policy_matches, so an index that
# lists too much is merely slower, while one that lists too little would be wrong. The engine's differential
# test compares indexed with unindexed evaluation for that reason. Without data.index every policy is checked
# (data.policies may then also be an array).
matching_keys contains key if {
	not data.index
	some key, p in data.policies
	in_play(p)
	policy_matches(p)
}

matching_keys contains key if {
	some akey in action_keys
	some pkey in principal_keys
	some key, _ in data.index.by_action_principal[akey][pkey]
	p := data.policies[key]
	in_play(p)
	policy_matches(p)
}

# --- Drafts -----------------------------------------------------------------------------------------
# A simulation may bring draft policies that are not stored, in the input:
#   input.drafts = {"mode": "merge" | "replace", "policies": [policy, ...]}
# "merge" (or no mode): the drafts are evaluated together with the stored policies, and a draft whose id is
# a stored policy's id stands in for that policy ("what if I changed it?"). "replace": only the drafts are
# evaluated. Drafts are never indexed: every draft is checked in full. Without input.drafts only the stored
# policies count.

# Whether a stored policy takes part in this decision. (The first branch keeps decisions without drafts as
# fast as before drafts existed: it is checked for every candidate.)
in_play(p) if {
	not input.drafts
} else if {
	not replaced_by_drafts
	not draft_ids[p.id]
}

default replaced_by_drafts := false

replaced_by_drafts if input.drafts.mode == "replace"

draft_ids contains p.id if some p in input.drafts.policies

# Positions (in input.drafts.policies) of the drafts that match the request.
matching_drafts contains i if {
	some i, p in input.drafts.policies
	policy_matches(p)
}

# The principal keys a policy that could match this user is listed under (see principalKey in
# apps/policy/src/engine/data-document.ts): `*` for `*` and `user:${self}`, else the pattern itself. They are
# also the patterns, besides `user:${self}`, that match this user (principal_matches).
principal_keys contains "*"

principal_keys contains key if {
	is_string(input.principal.id)
	key := concat("", ["user:", input.principal.id])
}

principal_keys contains key if {
	some role in input.principal.roles
	is_string(role)
	startswith(role, "role_")
	key := concat("", ["role:", substring(role, 5, -1)])
}

# The action keys: a policy is listed under each of its actions, `*` included.
action_keys contains "*"

action_keys contains input.action if is_string(input.action)

# --- Matching ---------------------------------------------------------------------------------------
# Chains of `else` stop at the first branch that holds; the cheapest and most selective tests come first.

# A policy matches when one of each of its resource, action and principal patterns matches and every
# condition holds.
policy_matches(p) if {
	any_resource_matches(p.resources)
	any_action_matches(p.actions)
	any_principal_matches(p.principals)
	conditions_hold(p)
}

any_resource_matches(patterns) if {
	some pattern in patterns
	resource_matches(pattern)
}

any_action_matches(patterns) if {
	some pattern in patterns
	action_matches(pattern)
}

any_principal_matches(patterns) if {
	some pattern in patterns
	principal_matches(pattern)
}

# `*` and `user:${self}` match any user; `user:<id>` that user; `role:<name>` users holding `role_<name>`.
# principal_keys holds exactly `*`, `user:<the user's id>` and `role:<name>` for each `role_<name>` held, so
# one set lookup decides (no string building per pattern).
principal_matches(pattern) if {
	principal_keys[pattern]
} else if {
	pattern == "user:${self}"
}

# `*` matches any action, anything else only itself.
action_matches(pattern) if pattern == "*"

action_matches(pattern) if {
	is_string(input.action)
	pattern == input.action
}

# `*` matches every resource; `/a/*` anything strictly below /a (not /a itself, nor `/a/`); anything else
# only the identical path. `${self}` standing as a whole path segment is first replaced by the user's id; a
# pattern with `${self}` matches nothing when the request has no user id.
resource_matches(pattern) if {
	pattern == "*"
} else if {
	is_string(pattern)
	not contains(pattern, "${self}")
	path_matches(pattern)
} else if {
	contains(pattern, "${self}")
	is_string(input.principal.id)
	path_matches(concat("/", [segment_with_self(segment, input.principal.id) | some segment in split(pattern, "/")]))
}

path_matches(path) if {
	endswith(path, "/*")
	prefix := trim_suffix(path, "*")
	startswith(input.resource, prefix)
	input.resource != prefix
} else if {
	not endswith(path, "/*")
	path == input.resource
}

segment_with_self(segment, id) := id if {
	segment == "${self}"
} else := segment

# Every condition holds. A missing or non-object `conditions` is no condition; a condition this program
# does not know never holds (the policy service rejects unknown keys, so stored policies have none). The known
# conditions are ip (below) and mfa.
conditions_hold(p) if {
	not p.conditions
} else if {
	p.conditions == {}
} else if {
	every key, condition in conditions_of(p) {
		condition_holds(key, condition)
	}
}

conditions_of(p) := p.conditions if {
	is_object(p.conditions)
} else := {}

# ip.allowlist: the request's context.ip lies inside one of the listed CIDRs, of the same family: an IPv4
# CIDR never contains an IPv6 address and an IPv6 CIDR never contains an IPv4 one. An IPv4-mapped IPv6
# address written `::ffff:a.b.c.d` (as Node reports IPv4 clients on a dual-stack socket) is the IPv4 address
# a.b.c.d; written any other way (`::ffff:a01:203`, `0:0:0:0:0:ffff:a.b.c.d`) it matches no CIDR. No ip,
# a non-string ip, a CIDR instead of an ip, or one that does not parse (net.cidr_contains is then
# undefined, and a trailing single `:` is refused up front) fails the condition. These rules make opa's Go and WebAssembly builtins agree (they differ on
# mixed families), which the differential test checks.
condition_holds("ip", condition) if {
	ip := request_ip
	some cidr in condition.allowlist
	is_string(cidr)
	contains(cidr, ":") == contains(ip, ":")
	net.cidr_contains(cidr, ip)
}

# mfa: the request's credential carries a completed multi-factor authentication (context.mfa is true) and,
# when the condition gives maxAgeSeconds, context.mfaAgeSeconds is a number from 0 to maxAgeSeconds. The
# condition is written `true` (any completed MFA) or as an object whose only key is the optional
# maxAgeSeconds (`{}` is any completed MFA too). No context.mfa, a context.mfa other than true, a missing or
# non-number age (or a negative one, or one above the maximum) while a maximum is set, a maximum that is not a
# number, and any other form of the condition (false, a string, an object with another key) fail it.
condition_holds("mfa", condition) if {
	input.context.mfa == true
	mfa_condition_satisfied(condition)
}

mfa_condition_satisfied(condition) if condition == true

mfa_condition_satisfied(condition) if {
	mfa_options(condition)
	not has_key(condition, "maxAgeSeconds")
}

mfa_condition_satisfied(condition) if {
	mfa_options(condition)
	max := condition.maxAgeSeconds
	is_number(max)
	age := input.context.mfaAgeSeconds
	is_number(age)
	age >= 0
	age <= max
}

# The object form of the mfa condition: `{}` or `{"maxAgeSeconds": ...}`, no other key.
mfa_options(condition) if {
	is_object(condition)
	every key, _ in condition {
		key == "maxAgeSeconds"
	}
}

# Whether the object x has the key k (whatever its value, false and null included).
has_key(x, k) if {
	_ = x[k]
}

# The request's ip as compared with the allowlist (undefined when there is none to compare).
request_ip := ip if {
	ip := input.context.ip
	is_string(ip)
	not contains(ip, "/")
	not contains(ip, ":")
} else := ip if {
	mapped := input.context.ip
	is_string(mapped)
	startswith(lower(mapped), "::ffff:")
	ip := substring(mapped, 7, -1)
	contains(ip, ".")
	not contains(ip, ":")
	not contains(ip, "/")
} else := ip if {
	ip := input.context.ip
	is_string(ip)
	not contains(ip, "/")
	contains(ip, ":")
	count(ip) >= 2
	not ends_in_single_colon(ip)
	not net.cidr_contains("::ffff:0:0/96", ip)
}

# `::ffff:` and the like are not addresses, but the WebAssembly parser reads one byte past a trailing `:`
# and may accept them (opa's Go parser does not).
ends_in_single_colon(ip) if {
	endswith(ip, ":")
	not endswith(ip, "::")
}

# --- Explanations -----------------------------------------------------------------------------------
# Entry point secsvc/authz/explained: the decision plus, for every policy in play that did not match, the
# first part that failed, in the order principal, action, resource, condition, with the values compared:
#   {"allowed", "effect", "matched", "not_matched": [explanation, ...], "not_matched_count": n}
#   explanation: {"id", "name", "effect",
#                 "failed": "principal" | "action" | "resource" | "condition",
#                 "condition": the condition that failed ("ip.allowlist", "mfa" or "mfa.maxAgeSeconds"),
#                              null for the other parts,
#                 "expected": the policy's patterns for that part (principals, actions or resources), the
#                             condition's CIDRs, or for mfa its maxAgeSeconds as a decimal string ([] when none),
#                 "actual": principal: the request's principal as patterns name it, `user:<id>` then
#                           `role:<name>` for each `role_<name>` held (sorted); action or resource: the
#                           request's; ip condition: the request's context.ip as given, null when absent; mfa
#                           condition: the request's context.mfaAgeSeconds as a decimal string when
#                           context.mfa is true and the age an integer, else null}
# not_matched lists the drafts first, then the stored policies; within each group the nearest misses come
# first (failed condition, then resource, action, principal), then by id. At most explain_limit entries are
# listed; not_matched_count counts them all. Matched policies get nothing extra.
explained := {
	"allowed": allowed,
	"effect": effect,
	"matched": matched,
	"not_matched": [explanation(policy_of(x), request) | some x in listed],
	"not_matched_count": count(failures.drafts) + count(failures.stored),
} if {
	listed := array.slice(array.concat(by_part(failures.drafts), by_part(failures.stored)), 0, explain_limit)
	request := {
		"principal": request_principals,
		"action": request_action,
		"resource": request_resource,
		"ip": request_given_ip,
		"mfa": request_mfa,
		"mfa_age": request_mfa_age,
	}
}

explain_limit := 100

# The policies in play that did not match, each [group (0 draft, 1 stored), position, failed part], in id
# order; position is the draft's index in input.drafts.policies or the stored policy's key in data.policies.
# The sets every policy is checked against are bound once, outside the comprehensions (a rule referenced
# inside one may be evaluated again for every element). Nothing here sorts the stored policies: `sort` in
# the WebAssembly runtime takes quadratic time, so the id order comes with the data document
# (data.index.order, see policy_order).
failures := {"drafts": draft_failures, "stored": stored_failures} if {
	matched_drafts := matching_drafts
	matched_keys := matching_keys
	stood_in_for := draft_ids
	replaced := replaced_by_drafts
	draft_failures := [[0, i, part] |
		some row in sort([[p.id, i] | some i, p in input.drafts.policies])
		i := row[1]
		not matched_drafts[i]
		part := failed_part(input.drafts.policies[i])
	]
	stored_failures := [[1, key, part] |
		replaced == false
		some key in policy_order
		p := data.policies[key]
		not stood_in_for[p.id]
		not matched_keys[key]
		part := failed_part(p)
	]
}

# Nearest misses first: a failed condition, then resource, action, principal; each part keeps the id order.
by_part(failures) := [x |
	some part in ["condition", "resource", "action", "principal"]
	some x in failures
	x[2] == part
]

# The keys of data.policies in policy id order: data.index.order, which the engine builds with the index,
# else sorted here (documents without an index, such as the unit tests').
policy_order := data.index.order if {
	is_array(data.index.order)
} else := [row[1] | some row in sort([[p.id, key] | some key, p in data.policies])]

policy_of(x) := input.drafts.policies[x[1]] if {
	x[0] == 0
} else := data.policies[x[1]]

# The first part of p that does not match, in the order principal, action, resource, condition. The
# predicates are the ones policy_matches uses, so a policy is explained exactly when it does not match.
failed_part(p) := "principal" if {
	not any_principal_matches(p.principals)
} else := "action" if {
	not any_action_matches(p.actions)
} else := "resource" if {
	not any_resource_matches(p.resources)
} else := "condition" if {
	not conditions_hold(p)
}

explanation(p, request) := {
	"id": p.id,
	"name": name_of(p),
	"effect": p.effect,
	"failed": f.failed,
	"condition": f.condition,
	"expected": f.expected,
	"actual": f.actual,
} if {
	f := failure(p, request)
}

# The part failed_part(p) names, with the values compared.
failure(p, request) := {"failed": "principal", "condition": null, "expected": list_of(p, "principals"), "actual": request.principal} if {
	not any_principal_matches(p.principals)
} else := {"failed": "action", "condition": null, "expected": list_of(p, "actions"), "actual": request.action} if {
	not any_action_matches(p.actions)
} else := {"failed": "resource", "condition": null, "expected": list_of(p, "resources"), "actual": request.resource} if {
	not any_resource_matches(p.resources)
} else := condition_failure(p, request)

# The first condition (by key) that does not hold.
condition_failure(p, request) := f if {
	conditions := conditions_of(p)
	failing := sort([key | some key, condition in conditions; not condition_holds(key, condition)])
	key := failing[0]
	f := condition_explanation(key, conditions[key], request)
}

condition_explanation(key, condition, request) := {
	"failed": "condition",
	"condition": "ip.allowlist",
	"expected": list_of(condition, "allowlist"),
	"actual": request.ip,
} if {
	key == "ip"
} else := {
	"failed": "condition",
	"condition": mfa_failed_part(condition, request.mfa),
	"expected": mfa_expected(condition),
	"actual": request.mfa_age,
} if {
	key == "mfa"
} else := {"failed": "condition", "condition": key, "expected": [], "actual": request.ip}

# "mfa.maxAgeSeconds" when the request carries an MFA but the condition's maximum age is not met (the MFA is
# too old, or its age unknown); "mfa" otherwise (no MFA, or a condition that cannot hold).
mfa_failed_part(condition, mfa) := "mfa.maxAgeSeconds" if {
	mfa == true
	mfa_options(condition)
	is_number(condition.maxAgeSeconds)
} else := "mfa"

# The condition's maxAgeSeconds as a decimal string, [] when it has none.
mfa_expected(condition) := [text] if {
	mfa_options(condition)
	text := decimal(condition.maxAgeSeconds)
} else := []

# An integer as a decimal string (undefined for anything else).
decimal(n) := format_int(n, 10) if {
	is_number(n)
	n == floor(n)
}

list_of(x, key) := x[key] if {
	is_array(x[key])
} else := []

request_principals := array.concat(
	sort([key | some key in principal_keys; startswith(key, "user:")]),
	sort([key | some key in principal_keys; startswith(key, "role:")]),
)

request_action := input.action if {
	is_string(input.action)
} else := null

request_resource := input.resource if {
	is_string(input.resource)
} else := null

request_given_ip := input.context.ip if {
	input.context.ip != null
} else := null

default request_mfa := false

request_mfa if input.context.mfa == true

# The age of the request's MFA as a decimal string: only when it carries one and the age is an integer.
request_mfa_age := text if {
	request_mfa
	text := decimal(input.context.mfaAgeSeconds)
} else := null
