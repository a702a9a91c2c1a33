import { createPolicyRoute, deletePolicyRoute, getPolicyRoute, listPoliciesRoute, updatePolicyRoute } from './crud';
import { simulateRoute } from './simulate';

// simulate before /policies/:id so that the literal path wins
export const policyRoutes = [listPoliciesRoute, createPolicyRoute, simulateRoute, getPolicyRoute, updatePolicyRoute, deletePolicyRoute];
