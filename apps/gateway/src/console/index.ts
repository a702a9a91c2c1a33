import express, { type NextFunction, type Request, type Response } from 'express';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { ServiceClients } from '../context';
import { escapeHtml } from '../oauth/pages';

/**
 * The admin console's pages (apps/console, a single-page app built to static files): the strictest policy its
 * build allows. Scripts and styles are files of this origin (no inline code), API and token calls go to this
 * origin only, and nothing may frame it.
 */
export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "font-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

/**
 * CONSOLE_DIR's default: the @secsvc/console workspace's build output beside the gateway's package
 * (apps/console/dist). The path is the same from src/ and dist/, in the repository and in the gateway image,
 * which carries the console's dist at that path (see the Dockerfile). The gateway does not depend on the
 * console's package: it serves its files, never loads its code.
 */
export const DEFAULT_CONSOLE_DIR = path.resolve(__dirname, '..', '..', '..', 'console', 'dist');

/** Where the console's files are: CONSOLE_DIR when set, else the workspace's build output. */
export function resolveConsoleDir(configured: string | undefined): string {
  return path.resolve(configured ?? DEFAULT_CONSOLE_DIR);
}

export interface ConsoleDeps {
  /** The console's build output (index.html, assets/); read per request, so a build after start-up is served. */
  dir: string;
  /** The public origin (ISSUER): the console's OAuth issuer. */
  issuer: string;
  clients: Pick<ServiceClients, 'identity'>;
  deadlineMs: number;
  /** How long identity's answer about the console's clients is reused (ms). */
  clientsTtlMs?: number;
}

/** What the console learns before signing in (GET /console/config.json): public facts only, no secret. */
export interface ConsoleConfig {
  issuer: string;
  redirectUri: string;
  scope: string;
  /** The first-party public client of each environment (absent: none, e.g. ISSUER gives no valid redirect URI). */
  environments: { live?: { clientId: string }; test?: { clientId: string } };
}

function securityHeaders(_req: Request, res: Response, next: NextFunction): void {
  res.setHeader('Content-Security-Policy', CONSOLE_CSP);
  res.setHeader('X-Content-Type-Options', 'nosniff');
  res.setHeader('Referrer-Policy', 'no-referrer');
  res.setHeader('X-Frame-Options', 'DENY');
  res.locals.route = '/console';
  next();
}


/** The page of /console when the console has not been built (or CONSOLE_DIR holds no index.html). */
export function notBuiltPage(dir: string): string {
  return [
    '<!doctype html>',
    '<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">',
    '<title>Admin console not built</title></head>',
    '<body><main><h1>The admin console is not built</h1>',
    `<p>No <code>index.html</code> in <code>${escapeHtml(dir)}</code>. Build it with <code>npm run build</code> (or <code>npx nx run @secsvc/console:build</code>), or point <code>CONSOLE_DIR</code> at a build.</p>`,
    '</main></body></html>',
    '',
  ].join('\n');
}

/**
 * The admin console at /console: hashed assets (/console/assets/*, cached for a year, immutable), the other
 * files of the build (an hour), index.html for /console and every other /console/* path so the app's own
 * routes load (never cached), and /console/config.json (the issuer and the console's OAuth client of each
 * environment, from identity). Every answer carries CONSOLE_CSP, nosniff and no-referrer.
 */
export function consoleRouter(deps: ConsoleDeps): express.Router {
  const router = express.Router();
  const ttl = deps.clientsTtlMs ?? 30_000;
  let cached: { at: number; value: ConsoleConfig } | undefined;

  router.use('/console', securityHeaders);

  router.get('/console/config.json', (req: Request, res: Response, next: NextFunction) => {
    const fresh = cached && Date.now() - cached.at < ttl ? cached.value : undefined;
    const answer = fresh
      ? Promise.resolve(fresh)
      : deps.clients.identity.getConsoleClients({}, { requestId: req.requestId, deadlineMs: deps.deadlineMs }).then((c) => {
          const value: ConsoleConfig = {
            issuer: deps.issuer,
            redirectUri: c.redirectUri,
            scope: c.scope,
            environments: { ...(c.liveClientId ? { live: { clientId: c.liveClientId } } : {}), ...(c.testClientId ? { test: { clientId: c.testClientId } } : {}) },
          };
          cached = { at: Date.now(), value };
          return value;
        });
    answer.then((value) => {
      res.setHeader('Cache-Control', 'no-cache');
      res.json(value);
    }, next);
  });

  router.use(
    '/console/assets',
    express.static(path.join(deps.dir, 'assets'), { index: false, fallthrough: true, redirect: false, setHeaders: (res) => res.setHeader('Cache-Control', 'public, max-age=31536000, immutable') }),
    // A missing asset is a 404, never index.html (a stale page would run HTML as its script).
    (_req: Request, res: Response) => void res.status(404).setHeader('Cache-Control', 'no-store').type('text/plain').send('Not found\n'),
  );

  const index = async (_req: Request, res: Response, next: NextFunction) => {
    let html: Buffer;
    try {
      html = await readFile(path.join(deps.dir, 'index.html'));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT' && (err as NodeJS.ErrnoException).code !== 'ENOTDIR') return next(err);
      res.setHeader('Cache-Control', 'no-store');
      return void res.status(404).type('text/html').send(notBuiltPage(deps.dir));
    }
    res.setHeader('Cache-Control', 'no-store');
    res.type('text/html').send(html);
  };

  // The build's other files (favicon...); index.html itself only through `index`, never cached.
  const files = express.static(deps.dir, { index: false, fallthrough: true, redirect: false, setHeaders: (res) => res.setHeader('Cache-Control', 'public, max-age=3600') });
  router.use('/console', (req: Request, res: Response, next: NextFunction) => (/^\/index\.html$/i.test(req.path) ? next() : files(req, res, next)));
  router.get(['/console', '/console/*splat'], index);
  return router;
}
