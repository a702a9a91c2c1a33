// The one script of the authorization pages, served at /oauth/assets/passkey.js to the pages that offer a
// passkey (their CSP allows script-src 'self'; every other page runs no script at all). Plain ES2020, no
// library: it reads the WebAuthn request options from the page's JSON data block
// (<script type="application/json" id="passkey-options">), shows the passkey button when the browser can use
// passkeys, and on a click asks the browser for an assertion, writes it as JSON (AuthenticationResponseJSON:
// base64url fields) into the form's hidden `credential` field and submits the form. Failures are shown in the
// page's alert region (#alert). Without script the page still works with its other forms.

export const PASSKEY_SCRIPT = `'use strict';
(() => {
  const data = document.getElementById('passkey-options');
  const form = document.getElementById('passkey-form');
  const button = document.getElementById('passkey-button');
  const alertRegion = document.getElementById('alert');
  if (!data || !form || !button) return;
  if (!window.PublicKeyCredential || !navigator.credentials || typeof navigator.credentials.get !== 'function') return;

  const show = (message) => {
    if (!alertRegion) return;
    alertRegion.textContent = message;
    alertRegion.hidden = false;
  };

  const fromBase64url = (text) => {
    const base64 = text.replace(/-/g, '+').replace(/_/g, '/');
    const binary = atob(base64 + '==='.slice((base64.length + 3) % 4));
    const bytes = new Uint8Array(binary.length);
    for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
    return bytes.buffer;
  };

  const toBase64url = (buffer) => {
    const bytes = new Uint8Array(buffer);
    let binary = '';
    for (let i = 0; i < bytes.length; i++) binary += String.fromCharCode(bytes[i]);
    return btoa(binary).replace(/\\+/g, '-').replace(/\\//g, '_').replace(/=+$/, '');
  };

  let publicKey;
  try {
    const options = JSON.parse(data.textContent || '');
    publicKey = { ...options, challenge: fromBase64url(options.challenge) };
    if (Array.isArray(options.allowCredentials)) {
      publicKey.allowCredentials = options.allowCredentials.map((c) => ({ ...c, id: fromBase64url(c.id) }));
    }
  } catch {
    return;
  }

  // A PublicKeyCredential as AuthenticationResponseJSON (WebAuthn Level 3), binary fields in base64url.
  const serialize = (credential) => {
    const r = credential.response;
    const json = {
      id: credential.id,
      rawId: toBase64url(credential.rawId),
      type: credential.type,
      response: {
        clientDataJSON: toBase64url(r.clientDataJSON),
        authenticatorData: toBase64url(r.authenticatorData),
        signature: toBase64url(r.signature),
      },
      clientExtensionResults: typeof credential.getClientExtensionResults === 'function' ? credential.getClientExtensionResults() : {},
    };
    if (r.userHandle) json.response.userHandle = toBase64url(r.userHandle);
    if (credential.authenticatorAttachment) json.authenticatorAttachment = credential.authenticatorAttachment;
    return JSON.stringify(json);
  };

  let busy = false;
  button.hidden = false;
  button.addEventListener('click', async () => {
    if (busy) return;
    busy = true;
    button.disabled = true;
    try {
      const credential = await navigator.credentials.get({ publicKey });
      if (!credential) throw new Error('no credential');
      form.elements.namedItem('credential').value = serialize(credential);
      form.submit();
    } catch (err) {
      busy = false;
      button.disabled = false;
      show(
        err && err.name === 'NotAllowedError'
          ? 'The passkey request was cancelled or timed out. Try again, or sign in another way.'
          : 'Your passkey could not be used. Try again, or sign in another way.',
      );
    }
  });
})();
`;
