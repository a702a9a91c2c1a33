import type { PolicyContext } from '../context';
import { authorize } from './authorize';
import { createPolicy } from './create-policy';
import { deletePolicy } from './delete-policy';
import { getPolicy } from './get-policy';
import { listPolicies } from './list-policies';
import { simulate } from './simulate';
import { updatePolicy } from './update-policy';

/** Every PolicyService RPC over one context (the server's implementation, and the tests' "replica"). */
export function policyService(ctx: PolicyContext) {
  return {
    createPolicy: createPolicy(ctx),
    getPolicy: getPolicy(ctx),
    updatePolicy: updatePolicy(ctx),
    deletePolicy: deletePolicy(ctx),
    listPolicies: listPolicies(ctx),
    simulate: simulate(ctx),
    authorize: authorize(ctx),
  };
}
