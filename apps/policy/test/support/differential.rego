# Batch evaluation for the differential test (test/engine-differential.test.ts): one `opa eval` maps the
# explained decision (the decision plus the explanations of the policies that did not match) of
# apps/policy/rego/policy.rego over many (policy set, request) cases. Requests may carry drafts.
#   input.sets: [{"policies": {<id>: policy}, "index": <index>, "requests": [request, ...]}, ...]
# `scan` evaluates without the index (every policy is checked), `indexed` with the engine's index.
package secsvc.differential

import data.secsvc.authz

results := {"scan": scan, "indexed": indexed}

scan := [[d |
	some r in s.requests
	d := authz.explained with input as r with data.policies as s.policies
] |
	some s in input.sets
]

indexed := [[d |
	some r in s.requests
	d := authz.explained with input as r with data.policies as s.policies with data.index as s.index
] |
	some s in input.sets
]
