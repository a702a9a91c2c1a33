# The access-policy semantics of the security service, written once. Compiled to WebAssembly
# (entry point secsvc/authz/decision) and evaluated in process by apps/policy/src/engine; `opa test`
# runs policy_test.rego against it. The data document and every rule are described in README.md.
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

# The matching policies with a known effect: denies (rank 0) before allows (rank 1), each group sorted by
# id (then name, for a total order).
matched := [{"id": row[1], "name": row[2], "effect": row[3]} |
	some row in sort([[rank, p.id, name_of(p), p.effect] |
		some key in matching_keys
		p := data.policies[key]
		rank := effect_rank[p.effect]
	])
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
	policy_matches(p)
}

matching_keys contains key if {
	some akey in action_keys
	some pkey in principal_keys
	some key, _ in data.index.by_action_principal[akey][pkey]
	policy_matches(data.policies[key])
}

# The principal keys a policy that could match this user is listed under (see principalKey in
# apps/policy/src/engine/data-document.ts): `*` for `*` and `user:${self}`, else the pattern itself.
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
principal_matches(pattern) if {
	pattern == "*"
} else if {
	pattern == "user:${self}"
} else if {
	startswith(pattern, "user:")
	pattern == concat("", ["user:", input.principal.id])
} else if {
	startswith(pattern, "role:")
	some role in input.principal.roles
	role == concat("", ["role_", substring(pattern, 5, -1)])
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
# does not know never holds (the policy service rejects unknown keys, so stored policies have none).
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
