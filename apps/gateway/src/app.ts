import express, { type NextFunction, type Request, type Response } from 'express';
import { AppError, observeCertificateExpiry, readinessAnswer, type Logger, type Metrics, type Readiness } from '@secsvc/shared';
import type { AuthCache } from './auth/auth-cache';
import type { JwtVerifier } from './auth/jwt-verifier';
import type { UserCache } from './auth/user-cache';
import type { VerifyCache } from './auth/verify-cache';
import type { GatewayConfig } from './config';
import { ANONYMOUS, type Principal, type RouteContext, type ServiceClients } from './context';
import { authenticate } from './middleware/auth';
import { errorHandler, notFound } from './middleware/errors';
import { observe } from './middleware/observe';
import { rateLimits } from './middleware/rate-limit';
import { WINDOW_SECONDS, type Decision } from './rate-limit/gcra';
import type { RateLimiter } from './rate-limit/limiter';
import type { RateLimitPolicy, Subject } from './rate-limit/subjects';
import { checkUrl, jsonBody } from './middleware/input';
import { methodSemantics } from './middleware/methods';
import { RouteTable, type KnownRoute } from './middleware/route-table';
import { requestId } from './middleware/request-id';
import { oauthRouter } from './oauth';
import { openApiDocument } from './openapi';
import type { Route } from './routes/route';
import { routes } from './routes';
import { authorizePolicy, authorizeScope, callHeaders, checkKeyType, requireCredential, respond, validate, withEmail } from './routes/serve';
import { ssoRouter } from './sso/router';
import type { SpSettings } from './sso/sp';
import { downloadRouter, type DownloadSource } from './downloads';
import { consoleRouter } from './console';

export { routes };

export const BODY_LIMIT = '1mb';

export interface GatewayDeps {
  config: Pick<GatewayConfig, 'GRPC_DEADLINE_MS' | 'TRUST_PROXY' | 'HOST' | 'PORT'>;
  clients: ServiceClients;
  logger: Logger;
  metrics: Metrics;
  /** Dependencies reachable (for /readyz). */
  ready: () => Promise<Readiness>;
  /** TRACE_CONTINUE_INCOMING: continue a caller's traceparent (else a new trace, linked to it). */
  continueIncomingTrace?: boolean;
  /** True once the process is shutting down: /readyz answers 503 and every answer closes its connection. */
  draining?: () => boolean;
  /** Optional cache of API key authentications (see auth/auth-cache.ts). */
  authCache?: AuthCache;
  /** Verifies JWT access tokens; without it they are refused. */
  jwt?: JwtVerifier;
  verifyCache?: VerifyCache;
  userCache?: UserCache;
  /** The download host of export files (DOWNLOAD_BASE_URL; absent: not served). baseUrl is read per request. */
  downloads?: { baseUrl: string; open: DownloadSource };
  /** Rate limits of every response but the probes (see middleware/rate-limit.ts); absent = none. */
  rateLimit?: { limiter: RateLimiter; policy: RateLimitPolicy };
  /** The OAuth 2.0 authorization server's endpoints (/oauth/*, discovery), with the public origin; absent = not served. */
  oauth?: { issuer: string };
  /** SAML single sign-on: the SP endpoints under /v1/sso/saml (absent = not served) and the SP URLs of connections. */
  sso?: SpSettings;
  /** The admin console at /console: the folder of its build (absent = not served; needs `oauth`). */
  console?: { dir: string };
}

const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH']);

/** A body-carrying request must be JSON; an empty body is validated as missing fields. */
function requireJson(req: Request, _res: Response, next: NextFunction): void {
  const length = Number(req.get('content-length') ?? 0);
  const chunked = req.get('transfer-encoding') !== undefined;
  if (BODY_METHODS.has(req.method) && (length > 0 || chunked) && !req.is('application/json')) {
    return next(new AppError('unsupported_media_type', 'Request bodies must be application/json'));
  }
  next();
}

/** rate_limit.exceeded, recorded by identity (the gateway has no database); fire and forget. */
/** rate_limit.exceeded, written by identity before the first 429 of a window is answered (at most 1 s more). */
function reportExceeded(deps: GatewayDeps, req: Request, who: Subject, decision: Decision): Promise<void> {
  const principal = req.principal ?? ANONYMOUS;
  return deps.clients.identity
    .reportRateLimitExceeded(
      {
        environment: principal.environment,
        subjectType: who.kind,
        subjectId: who.kind === 'ip' ? '' : who.id,
        limit: decision.limit,
        windowSeconds: WINDOW_SECONDS,
      },
      { requestId: req.requestId, deadlineMs: Math.min(deps.config.GRPC_DEADLINE_MS, 1_000), headers: callHeaders(req, principal) },
    )
    .then(
      () => undefined,
      (err: unknown) => deps.logger.warn({ err: { message: (err as Error).message }, requestId: req.requestId }, 'could not report rate_limit.exceeded'),
    );
}

/** What a route handler gets besides its input; downloads.baseUrl is read per request (main.ts sets it once listening). */
function routeContext(deps: GatewayDeps, req: Request, principal: Principal): RouteContext {
  const call = { requestId: req.requestId, deadlineMs: deps.config.GRPC_DEADLINE_MS, headers: callHeaders(req, principal) };
  return { requestId: req.requestId, principal, clients: deps.clients, call, verifyCache: deps.verifyCache, userCache: deps.userCache, authenticationChanged: deps.authCache && ((id: string) => deps.authCache!.authenticationChanged(id)), downloadBaseUrl: deps.downloads?.baseUrl, sso: deps.sso };
}

/** Serves one /v1 route: the steps of routes/serve.ts in order, then the handler and its answer. */
function serveRoute(route: Route, deps: GatewayDeps, template: string) {
  return async (req: Request, res: Response, next: NextFunction) => {
    res.locals.route = template;
    const deadlineMs = deps.config.GRPC_DEADLINE_MS;
    try {
      const principal = await withEmail(req.principal ?? ANONYMOUS, req, deps.clients.identity, deadlineMs, deps.userCache);
      authorizeScope(route, principal, res);
      requireCredential(route, principal);
      await authorizePolicy(route, req, principal, deps.clients.policy, deadlineMs, res);
      checkKeyType(route, principal);
      const input = validate(route, req);
      respond(res, await route.handle(input, routeContext(deps, req, principal)));
    } catch (err) {
      next(err);
    }
  };
}

/**
 * The /v1 routes, found by one look-up of the request's documented path (RouteTable, as methodSemantics
 * matched it) and method, rather than by Express trying each route's pattern in turn. Parameters are the
 * path's segments under the template's `:name`s, percent-decoded (checkUrl refused paths that do not decode).
 */
function dispatchRoutes(routes: readonly Route[], deps: GatewayDeps, known: RouteTable) {
  const handlers = new Map<string, ReturnType<typeof serveRoute>>();
  for (const route of routes) {
    const template = `/v1${route.path}`;
    // The document is made from these routes, so the table knows each template; a route it resolved
    // elsewhere (an overlap the document orders differently) could never be reached.
    if (known.match(template)?.template !== template) throw new Error(`route ${template} is not the document's own match for its path`);
    handlers.set(`${route.method.toUpperCase()} ${template}`, serveRoute(route, deps, template));
  }
  return (req: Request, res: Response, next: NextFunction): void => {
    const path = `/v1${req.path}`;
    const match = (res.locals.knownRoute as KnownRoute | undefined) ?? known.match(path);
    const handler = match && handlers.get(`${req.method === 'HEAD' ? 'GET' : req.method} ${match.template}`);
    if (!handler) return next();
    const params: Record<string, string> = {};
    const names = match.template.split('/');
    const segments = path.split('/');
    names.forEach((name, i) => {
      if (name.startsWith(':')) params[name.slice(1)] = decodeURIComponent(segments[i]!);
    });
    req.params = params;
    void handler(req, res, next);
  };
}

export function createApp(deps: GatewayDeps): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('trust proxy', deps.config.TRUST_PROXY);
  app.use(requestId(deps.continueIncomingTrace));
  const draining = deps.draining;
  if (draining) {
    // While draining, no connection is kept for a next request: a proxy opens its next one elsewhere.
    app.use((_req, res, next) => {
      if (draining()) res.setHeader('connection', 'close');
      next();
    });
  }
  const openapi = openApiDocument({
    issuer: deps.oauth?.issuer ?? `http://${deps.config.HOST}:${deps.config.PORT}`,
    rateLimited: deps.rateLimit !== undefined,
    oauth: deps.oauth !== undefined,
    sso: deps.sso !== undefined,
    downloadBaseUrl: deps.downloads?.baseUrl,
  });
  // Every documented path: the route label of any request for it, and its methods (405, OPTIONS).
  const knownRoutes = new RouteTable(openapi.paths);
  app.use(observe(deps.metrics, deps.logger, knownRoutes));
  app.use(checkUrl);
  if (deps.sso?.keys) observeCertificateExpiry(deps.metrics, 'saml_sp', deps.sso.keys.certificate);

  const PROBES = new Set(['/healthz', '/readyz']);
  app.get('/healthz', (_req, res) => void res.json({ status: 'ok' }));
  app.get('/readyz', (_req, res, next) => {
    (draining?.() ? Promise.resolve(false) : deps.ready()).then((r) => {
      const answer = readinessAnswer(r);
      res.status(answer.status).json(answer.body);
    }, next);
  });

  // Everything below the probes is rate limited and carries the X-RateLimit headers.
  const limits = deps.rateLimit
    ? rateLimits(deps.rateLimit.limiter, deps.rateLimit.policy, (req, who, decision) => reportExceeded(deps, req, who, decision), deps.metrics)
    : undefined;
  const limited = limits ? [limits.apply] : [];
  // 405 + Allow for a documented path's other methods; OPTIONS answered from the document (counted by ip).
  app.use(methodSemantics(knownRoutes, limits ? (req, res, next) => (PROBES.has(req.path) ? next() : limits.apply(req, res, next)) : undefined));
  // Outside /v1 (the JWKS, unknown paths) callers are limited by client ip before anything runs; /v1 calls
  // after authentication, by their key or user.
  if (limits) app.use(limits.gate, limits.applyOutside('/v1'));

  // Export files by signed link (no API key): the download host of DOWNLOAD_BASE_URL.
  if (deps.downloads) app.use(new URL(deps.downloads.baseUrl).pathname.replace(/\/+$/, '') || '/', downloadRouter(deps.downloads.open));

  // The SAML service provider endpoints (no credential: browsers and identity providers call them).
  // Limited per client ip like the login pages.
  if (deps.sso) app.use('/v1/sso/saml', ...limited, ssoRouter({ ...deps.sso, clients: deps.clients, deadlineMs: deps.config.GRPC_DEADLINE_MS, logger: deps.logger }));

  // The API, before the routers of other paths: a /v1 request does not walk their routes (downloads and SSO
  // stay first, mounted at their own paths, which may lie under /v1).
  const v1 = express.Router();
  v1.get('/openapi.json', ...limited, (_req, res) => void res.json(openapi));
  const anonymousRoutes = new Set(routes.filter((r) => r.anonymous).map((r) => `${r.method.toUpperCase()} ${r.path}`));
  v1.use(authenticate(deps.clients, deps.config.GRPC_DEADLINE_MS, deps.authCache, anonymousRoutes, deps.jwt));
  if (limits) v1.use(limits.apply);
  v1.use(requireJson);
  v1.use(jsonBody(BODY_LIMIT));
  v1.use(dispatchRoutes(routes, deps, knownRoutes));
  app.use('/v1', v1);

  // The OAuth 2.0 authorization server (unversioned, as the standards name the paths), limited per client ip.
  if (deps.oauth) {
    app.use(
      oauthRouter({
        clients: deps.clients,
        issuer: deps.oauth.issuer,
        deadlineMs: deps.config.GRPC_DEADLINE_MS,
        logger: deps.logger,
        jwt: deps.jwt,
        authCache: deps.authCache,
        sso: deps.sso?.keys !== undefined,
      }),
    );
  }

  // The admin console (static files and its config.json), limited per client ip like the login pages.
  if (deps.console && deps.oauth) {
    app.use(consoleRouter({ dir: deps.console.dir, issuer: deps.oauth.issuer, clients: deps.clients, deadlineMs: deps.config.GRPC_DEADLINE_MS }));
  }

  // Public keys of the access-token signers (RFC 7517), for anyone verifying our JWTs.
  app.get('/.well-known/jwks.json', (req, res, next) => {
    deps.clients.identity.getJwks({}, { requestId: req.requestId, deadlineMs: deps.config.GRPC_DEADLINE_MS }).then((jwks) => {
      res.setHeader('Cache-Control', 'public, max-age=300');
      res.type('application/json').send(jwks.jwksJson);
    }, next);
  });


  app.use(notFound);
  if (limits) app.use(limits.onError);
  app.use(errorHandler(deps.logger));
  return app;
}
