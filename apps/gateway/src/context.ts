import type { identity } from '@secsvc/proto';
import type { PromiseClient } from '@secsvc/shared';

export interface ServiceClients {
  identity: PromiseClient<identity.IdentityServiceClient>;
}

/** Who is calling, as resolved by the auth middleware. */
export interface Principal {
  type: 'api_key';
  id: string;
  keyType: string;
  environment: 'live' | 'test';
  plan: string;
}

/** What a route handler gets besides its validated input. */
export interface RouteContext {
  requestId: string;
  principal: Principal;
  clients: ServiceClients;
  /** Options for every gRPC call of this request: request id, deadline, and who/where for audit events. */
  call: { requestId: string; deadlineMs: number; headers: Record<string, string> };
}
