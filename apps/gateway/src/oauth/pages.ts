import type { Response } from 'express';

// Server-rendered pages of the authorization endpoint: login, the second step of a login (MFA), consent and
// errors. Plain HTML forms (they work without JavaScript), one stylesheet from this server, every value
// HTML-escaped, and a strict Content-Security-Policy. No script at all, except on pages offering a passkey:
// those load the one script of this server (/oauth/assets/passkey.js, passkey-script.ts) and allow only it.

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
  'read:api_keys': 'See API keys (never their secrets)',
  'write:api_keys': 'Create, rotate and revoke API keys: a key acts with full access to its environment',
  'read:clients': 'See OAuth client applications',
  'write:clients': 'Register, change and delete OAuth client applications: a client acts for users who sign in to it',
  'read:sso': 'See SSO connections',
  'write:sso': 'Create, change and delete SSO connections (who can sign in through which identity provider)',
};

export const STYLESHEET = `
:root { color-scheme: light dark; font-family: system-ui, sans-serif; }
body { margin: 0; min-height: 100vh; display: grid; place-items: center; background: #f3f4f6; color: #111827; }
main { width: min(26rem, 92vw); background: #fff; border-radius: 12px; padding: 2rem; box-shadow: 0 4px 24px rgb(0 0 0 / 8%); }
h1 { font-size: 1.3rem; margin: 0 0 1rem; }
p { line-height: 1.45; }
label { display: block; margin: 1rem 0 .3rem; font-weight: 600; }
[hidden] { display: none !important; }
input[type=email], input[type=password], input[type=text] { width: 100%; box-sizing: border-box; padding: .6rem; border: 1px solid #9ca3af; border-radius: 6px; font-size: 1rem; }
button { margin-top: 1.4rem; padding: .65rem 1.2rem; border: 0; border-radius: 6px; font-size: 1rem; cursor: pointer; background: #1d4ed8; color: #fff; }
button.secondary { background: #e5e7eb; color: #111827; margin-left: .5rem; }
ul.scopes { padding-left: 1.2rem; }
.error { background: #fee2e2; color: #991b1b; padding: .6rem .8rem; border-radius: 6px; }
.muted { color: #6b7280; font-size: .9rem; }
form.passkey, details.recovery { margin-top: 1.4rem; }
details.recovery summary { cursor: pointer; color: #1d4ed8; }
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

/** A WebAuthn ceremony the page offers: the request options (PublicKeyCredentialRequestOptionsJSON) and its challenge. */
export interface PasskeyOffer {
  optionsJson: string;
  /** The challenge of a passwordless login or of a step-up (absent: the login challenge's own). */
  challengeId?: string;
}

/** The script of the pages that offer a passkey (it reads the options, asks the browser, posts the form). */
export const PASSKEY_SCRIPT_PATH = '/oauth/assets/passkey.js';
const scriptTag = `<script src="${PASSKEY_SCRIPT_PATH}" defer></script>\n`;

/** A page and whether it runs the passkey script (then its CSP allows script-src 'self'). */
export interface Page {
  html: string;
  script: boolean;
}

/**
 * JSON inside a `<script type="application/json">` data block: re-serialized (so it is JSON and nothing
 * else), with every character that could end the element or the data escaped as \uXXXX. Undefined when the
 * text is not a JSON object.
 */
export function jsonDataBlock(json: string): string | undefined {
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  return JSON.stringify(value).replace(/[<>&\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** The page's alert region: the error, or (on pages with the passkey script) an empty one the script fills. */
const alertRegion = (error: string | undefined, script: boolean) =>
  error ? `<p class="error" role="alert" id="alert">${escapeHtml(error)}</p>\n` : script ? '<p class="error" role="alert" id="alert" hidden></p>\n' : '';

/**
 * The passkey form: hidden fields, the credential the script fills in, and a button the script shows when the
 * browser can use passkeys (without script nothing of it is visible). Undefined when the options are not JSON.
 */
/** The authorization endpoint: where the OAuth pages' forms post. */
const AUTHORIZE_PATH = '/oauth/authorize';

function passkeyForm(fields: Record<string, string>, offer: PasskeyOffer, label: string, formAction = AUTHORIZE_PATH): string | undefined {
  const data = jsonDataBlock(offer.optionsJson);
  if (data === undefined) return undefined;
  return `
<form method="post" action="${escapeHtml(formAction)}" class="passkey" id="passkey-form">
${hidden({ ...fields, ...(offer.challengeId ? { challenge_id: offer.challengeId } : {}) })}
<input type="hidden" name="credential" value="">
<button type="button" id="passkey-button" class="secondary" hidden>${escapeHtml(label)}</button>
</form>
<script type="application/json" id="passkey-options">${data}</script>`;
}

/** The login page; with `passkey`, a "Sign in with a passkey" form (action=passkey) that needs the script. */
export function loginPage(p: FormPage & { error?: string; email?: string; sso?: boolean; passkey?: PasskeyOffer }): Page {
  const passkey = p.passkey ? passkeyForm({ ...p.params, csrf_token: p.csrf, action: 'passkey' }, p.passkey, 'Sign in with a passkey') : undefined;
  const script = passkey !== undefined;
  const html = layout(
    `Sign in to ${p.clientName}`,
    `<h1>Sign in to continue to ${escapeHtml(p.clientName)}</h1>
${alertRegion(p.error, script)}<form method="post" action="/oauth/authorize">
${hidden({ ...p.params, csrf_token: p.csrf, action: 'login' })}
<label for="email">Email</label>
<input id="email" name="email" type="email" autocomplete="username" required maxlength="320" value="${escapeHtml(p.email ?? '')}">
<label for="password">Password</label>
<input id="password" name="password" type="password" autocomplete="current-password" required maxlength="256">
<button type="submit">Sign in</button>
</form>${p.sso ? ssoForm(p) : ''}${passkey ?? ''}`,
    script ? scriptTag : '',
  );
  return { html, script };
}

/** The ways a user can answer a second step, as the MFA page offers them. */
export interface MfaMethods {
  totp: boolean;
  recoveryCode: boolean;
  passkey?: PasskeyOffer;
}

/**
 * The second step of a login (action=mfa with the login's `mfa_token`) or a step-up of the browser's session
 * (action=step_up, when the client asked for acr_values=urn:secsvc:acr:mfa): a 6-digit authenticator code, a
 * recovery code (behind a disclosure, no script needed), or a passkey. `state` are hidden fields every form
 * carries so that a refused answer can show the same page again.
 */
export function mfaPage(
  p: FormPage & {
    action: 'mfa' | 'step_up';
    state: Record<string, string>;
    methods: MfaMethods;
    error?: string;
    /** Where the forms post (default: the authorization endpoint; the SAML second step posts to its own). */
    formAction?: string;
  },
): Page {
  const base = { ...p.params, csrf_token: p.csrf, action: p.action, ...p.state };
  const { methods } = p;
  const formAction = escapeHtml(p.formAction ?? AUTHORIZE_PATH);
  const passkey = methods.passkey ? passkeyForm({ ...base, mfa_type: 'passkey' }, methods.passkey, 'Use a passkey', p.formAction) : undefined;
  const script = passkey !== undefined;
  const totp = methods.totp
    ? `
<form method="post" action="${formAction}">
${hidden({ ...base, mfa_type: 'totp' })}
<label for="code">Enter the 6-digit code from your authenticator app</label>
<input id="code" name="code" type="text" inputmode="numeric" autocomplete="one-time-code" pattern="[0-9]{6}" minlength="6" maxlength="6" required autofocus>
<button type="submit">Verify</button>
</form>`
    : '';
  const recovery = methods.recoveryCode
    ? `
<details class="recovery"${methods.totp || script ? '' : ' open'}>
<summary>Use a recovery code</summary>
<form method="post" action="${formAction}">
${hidden({ ...base, mfa_type: 'recovery_code' })}
<label for="recovery-code">Recovery code</label>
<input id="recovery-code" name="code" type="text" autocomplete="off" autocapitalize="none" spellcheck="false" maxlength="64" required>
<button type="submit" class="secondary">Use recovery code</button>
</form>
</details>`
    : '';
  const none =
    !methods.totp && !methods.recoveryCode && !script
      ? '\n<p>Your account must use two-step verification, but it has no authenticator app or passkey that can be used here. Ask your administrator to set one up.</p>'
      : '';
  const html = layout(
    `Two-step verification for ${p.clientName}`,
    `<h1>Two-step verification</h1>
<p class="muted">${p.action === 'step_up' ? `${escapeHtml(p.clientName)} asks you to confirm it is you` : `Signing in to ${escapeHtml(p.clientName)}`}</p>
${alertRegion(p.error, script)}${totp.trimStart()}${recovery}${passkey ?? ''}${none}`,
    script ? scriptTag : '',
  );
  return { html, script };
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

/** The end-session endpoint's question when the request does not show it comes from the signed-in user's client. */
export function logoutPage(p: { params: Record<string, string>; csrf: string; email: string; action: string }): string {
  return layout(
    'Sign out?',
    `<h1>Sign out?</h1>
<p>You are signed in as <strong>${escapeHtml(p.email)}</strong>. Signing out ends this sign-in for every application that uses it.</p>
<form method="post" action="${escapeHtml(p.action)}">
${hidden({ ...p.params, csrf_token: p.csrf, action: 'confirm' })}
<button type="submit">Sign out</button>
</form>`,
  );
}

export function signedOutPage(): string {
  return layout('Signed out', `<h1>You are signed out</h1>\n<p class="muted">You can close this page.</p>`);
}

export function errorPage(error: string, description: string): string {
  return layout(
    'Authorization error',
    `<h1>This request cannot be completed</h1>
<p class="error" role="alert"><code>${escapeHtml(error)}</code>: ${escapeHtml(description)}</p>
<p class="muted">The application that sent you here made an invalid request. You can close this page.</p>`,
  );
}

/** The Content-Security-Policy of a page: no script unless `script` (then only this server's: the passkey script). */
export function pageCsp(formTarget: string | undefined, script = false): string {
  const formAction = ["'self'", formTarget ? new URL(formTarget).origin : ''].filter(Boolean).join(' ');
  return `default-src 'none'; ${script ? "script-src 'self'; " : ''}style-src 'self'; img-src 'self'; form-action ${formAction}; frame-ancestors 'none'; base-uri 'none'`;
}

/**
 * Sends a page with the security headers: no script may run (default-src 'none') unless the page offers a
 * passkey (`script`: then only scripts of this server), styles only from this server, forms may post only
 * here and (through the redirects that follow) to the client's registered redirect URI, no framing, no
 * caching, no referrer.
 */
export function sendPage(res: Response, status: number, page: string | Page, formTarget?: string): void {
  const { html, script } = typeof page === 'string' ? { html: page, script: false } : page;
  res.setHeader('Content-Security-Policy', pageCsp(formTarget, script));
  res.setHeader('X-Frame-Options', 'DENY');
  res.setHeader('X-Content-Type-Options', 'nosniff');
  res.setHeader('Referrer-Policy', 'no-referrer');
  res.setHeader('Cache-Control', 'no-store');
  res.status(status).type('html').send(html);
}
