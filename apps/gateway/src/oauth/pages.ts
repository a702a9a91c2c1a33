import type { Response } from 'express';

// Server-rendered pages of the authorization endpoint: login, consent and errors. Plain HTML forms (they work
// without JavaScript), no script at all, one stylesheet from this server, every value HTML-escaped, and a
// strict Content-Security-Policy.

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
export const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => ESCAPES[c]!);

/** What each scope lets the application do, as the consent page says it. */
export const SCOPE_TEXT: Record<string, string> = {
  openid: 'Know who you are (your account id)',
  profile: 'See your name',
  email: 'See your email address',
  offline_access: 'Stay signed in and act while you are away (refresh tokens)',
  'read:users': 'Read user accounts',
  'write:users': 'Create, change and delete user accounts',
  'read:policies': 'Read access policies and simulate decisions',
  'write:policies': 'Create, change and delete access policies',
  'read:logs': 'Read and search audit logs',
  'export:logs': 'Export audit logs to files',
};

export const STYLESHEET = `
:root { color-scheme: light dark; font-family: system-ui, sans-serif; }
body { margin: 0; min-height: 100vh; display: grid; place-items: center; background: #f3f4f6; color: #111827; }
main { width: min(26rem, 92vw); background: #fff; border-radius: 12px; padding: 2rem; box-shadow: 0 4px 24px rgb(0 0 0 / 8%); }
h1 { font-size: 1.3rem; margin: 0 0 1rem; }
p { line-height: 1.45; }
label { display: block; margin: 1rem 0 .3rem; font-weight: 600; }
input[type=email], input[type=password] { width: 100%; box-sizing: border-box; padding: .6rem; border: 1px solid #9ca3af; border-radius: 6px; font-size: 1rem; }
button { margin-top: 1.4rem; padding: .65rem 1.2rem; border: 0; border-radius: 6px; font-size: 1rem; cursor: pointer; background: #1d4ed8; color: #fff; }
button.secondary { background: #e5e7eb; color: #111827; margin-left: .5rem; }
ul.scopes { padding-left: 1.2rem; }
.error { background: #fee2e2; color: #991b1b; padding: .6rem .8rem; border-radius: 6px; }
.muted { color: #6b7280; font-size: .9rem; }
code { word-break: break-all; }
@media (prefers-color-scheme: dark) { body { background: #111827; color: #f9fafb; } main { background: #1f2937; } .muted { color: #9ca3af; } }
`;

function layout(title: string, body: string, head = ''): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>${escapeHtml(title)}</title>
<link rel="stylesheet" href="/oauth/assets/style.css">
${head}</head>
<body>
<main>
${body}
</main>
</body>
</html>
`;
}

const hidden = (params: Record<string, string>) =>
  Object.entries(params)
    .filter(([, v]) => v !== '')
    .map(([k, v]) => `<input type="hidden" name="${escapeHtml(k)}" value="${escapeHtml(v)}">`)
    .join('\n');

export interface FormPage {
  clientName: string;
  /** The authorization request's parameters, carried through the form. */
  params: Record<string, string>;
  csrf: string;
}

export function loginPage(p: FormPage & { error?: string; email?: string; sso?: boolean }): string {
  return layout(
    `Sign in to ${p.clientName}`,
    `<h1>Sign in to continue to ${escapeHtml(p.clientName)}</h1>
${p.error ? `<p class="error" role="alert">${escapeHtml(p.error)}</p>` : ''}
<form method="post" action="/oauth/authorize">
${hidden({ ...p.params, csrf_token: p.csrf, action: 'login' })}
<label for="email">Email</label>
<input id="email" name="email" type="email" autocomplete="username" required maxlength="320" value="${escapeHtml(p.email ?? '')}">
<label for="password">Password</label>
<input id="password" name="password" type="password" autocomplete="current-password" required maxlength="256">
<button type="submit">Sign in</button>
</form>${p.sso ? ssoForm(p) : ''}`,
  );
}

/** "Sign in with SSO": the work email's domain picks the SAML connection (see sso/ in the gateway). */
function ssoForm(p: FormPage & { email?: string }): string {
  return `
<form method="post" action="/oauth/authorize" class="sso">
${hidden({ ...p.params, csrf_token: p.csrf, action: 'sso' })}
<label for="sso-email">Work email (single sign-on)</label>
<input id="sso-email" name="email" type="email" autocomplete="username" required maxlength="320" value="${escapeHtml(p.email ?? '')}">
<button type="submit" class="secondary">Sign in with SSO</button>
</form>`;
}

/**
 * On to the identity provider. A meta refresh rather than a redirect: the form's CSP (form-action) cannot
 * name the IdP's origin before the email is known, and a navigation that is not a form's is not bound by it.
 */
export function continuePage(url: string, label: string): string {
  return layout(label, `<h1>${escapeHtml(label)}</h1>\n<p><a href="${escapeHtml(url)}">Continue</a></p>`, `<meta http-equiv="refresh" content="0;url=${escapeHtml(url)}">\n`);
}

export function consentPage(p: FormPage & { scopes: string[]; userEmail: string }): string {
  const items = p.scopes.map((s) => `<li><strong>${escapeHtml(s)}</strong>: ${escapeHtml(SCOPE_TEXT[s] ?? s)}</li>`).join('\n');
  return layout(
    `Allow ${p.clientName}?`,
    `<h1>${escapeHtml(p.clientName)} wants to access your account</h1>
<p class="muted">Signed in as ${escapeHtml(p.userEmail)}</p>
<p>It asks to:</p>
<ul class="scopes">
${items}
</ul>
<form method="post" action="/oauth/authorize">
${hidden({ ...p.params, csrf_token: p.csrf, action: 'consent' })}
<button type="submit" name="consent" value="allow">Allow</button>
<button type="submit" name="consent" value="deny" class="secondary">Deny</button>
</form>`,
  );
}

export function errorPage(error: string, description: string): string {
  return layout(
    'Authorization error',
    `<h1>This request cannot be completed</h1>
<p class="error" role="alert"><code>${escapeHtml(error)}</code>: ${escapeHtml(description)}</p>
<p class="muted">The application that sent you here made an invalid request. You can close this page.</p>`,
  );
}

/**
 * Sends a page with the security headers: no script may run (default-src 'none'), styles only from this
 * server, forms may post only here and (through the redirects that follow) to the client's registered
 * redirect URI, no framing, no caching, no referrer.
 */
export function sendPage(res: Response, status: number, html: string, formTarget?: string): void {
  const formAction = ["'self'", formTarget ? new URL(formTarget).origin : ''].filter(Boolean).join(' ');
  res.setHeader(
    'Content-Security-Policy',
    `default-src 'none'; style-src 'self'; img-src 'self'; form-action ${formAction}; frame-ancestors 'none'; base-uri 'none'`,
  );
  res.setHeader('X-Frame-Options', 'DENY');
  res.setHeader('X-Content-Type-Options', 'nosniff');
  res.setHeader('Referrer-Policy', 'no-referrer');
  res.setHeader('Cache-Control', 'no-store');
  res.status(status).type('html').send(html);
}
