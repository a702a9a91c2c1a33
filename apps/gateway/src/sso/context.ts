import type { NextFunction, Request, Response } from 'express';
import { AppError, isId, type Logger } from '@secsvc/shared';
import type { identity } from '@secsvc/proto';
import type { ServiceClients } from '../context';
import { identityRequestStore, type RequestIdStore, type SpKeys, type SpSettings } from './sp';
import { originHeaders } from '../http/origin';

// What every SAML SP endpoint needs: its dependencies, the call options of a request, the SP keys, the
// connection of the path and the request-id store.

export interface SsoDeps extends SpSettings {
  clients: ServiceClients;
  deadlineMs: number;
  logger: Logger;
}

/** RelayState is at most 80 bytes (SAML bindings 3.4.3). */
export const RELAY_STATE_MAX = 80;

export function callOptions(deps: SsoDeps, req: Request) {
  return {
    requestId: req.requestId,
    deadlineMs: deps.deadlineMs,
    headers: { ...originHeaders(req), 'x-auth-method': 'saml' },
  };
}

export function keysOf(deps: SsoDeps): SpKeys {
  if (!deps.keys) throw new AppError('unavailable', 'SAML single sign-on is not configured on this gateway (SAML_SP_KEY_FILE, SAML_SP_CERT_FILE)');
  return deps.keys;
}

export async function connectionOf(deps: SsoDeps, req: Request): Promise<identity.SsoConnection> {
  const id = String(req.params.id);
  if (!isId('sso', id)) throw AppError.notFound('SSO connection');
  return deps.clients.identity.getSsoConnection({ environment: '', id, anyEnvironment: true }, callOptions(deps, req));
}

export const store = (deps: SsoDeps, req: Request): RequestIdStore => identityRequestStore(deps.clients.identity, callOptions(deps, req));

export const handler = (fn: (req: Request, res: Response) => Promise<void>) => (req: Request, res: Response, next: NextFunction) => void fn(req, res).catch(next);
