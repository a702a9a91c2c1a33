import { CopyValue } from '../../components/CopyButton';
import { formatTime } from '../../forms';
import type { SsoConnection } from './sso';

/** What the identity provider's administrator needs from this side: the SP metadata URL, or its parts, to copy. */
export function ServiceProviderFacts({ connection: c }: { connection: SsoConnection }) {
  const rows: [string, string, string][] = [
    ['SP metadata URL', c.sp.metadataUrl, 'the SP metadata URL'],
    ['Entity id (audience)', c.sp.entityId, 'the entity id'],
    ['ACS URL (assertion consumer, HTTP-POST)', c.sp.acsUrl, 'the ACS URL'],
    ['Single logout URL', c.sp.sloUrl, 'the single logout URL'],
    ['SP-initiated login URL', c.sp.loginUrl, 'the login URL'],
  ];
  return (
    <section aria-labelledby="sp-title" className="card">
      <h2 id="sp-title">For the identity provider</h2>
      <p>
        Give the IdP the SP metadata URL (or the file it answers): it has the entity id, the ACS and logout URLs and the SP certificate, signed. Or
        enter the values one by one.{' '}
        <a href={c.sp.metadataUrl} target="_blank" rel="noreferrer">
          Open the SP metadata
        </a>
      </p>
      <dl className="facts facts-wide">
        {rows.map(([term, value, what]) => (
          <div key={term}>
            <dt>{term}</dt>
            <dd>
              <CopyValue value={value} what={what} />
            </dd>
          </div>
        ))}
      </dl>
    </section>
  );
}

/** What the service read from the IdP's metadata. */
export function IdentityProviderFacts({ connection: c }: { connection: SsoConnection }) {
  return (
    <section aria-labelledby="idp-title" className="card">
      <h2 id="idp-title">Identity provider</h2>
      <dl className="facts facts-wide">
        <div>
          <dt>Entity id</dt>
          <dd>
            <code>{c.idp.entityId}</code>
          </dd>
        </div>
        <div>
          <dt>SSO URL (HTTP-Redirect)</dt>
          <dd>
            <code>{c.idp.ssoUrl}</code>
          </dd>
        </div>
        <div>
          <dt>Single logout URL</dt>
          <dd>{c.idp.sloUrl ? <code>{c.idp.sloUrl}</code> : <span className="muted">none in its metadata</span>}</dd>
        </div>
        {c.idp.certificates.map((cert, i) => (
          <div key={cert.fingerprint256}>
            <dt>
              Signing certificate{c.idp.certificates.length > 1 ? ` ${i + 1}` : ''} (SHA-256 fingerprint, valid until {formatTime(cert.validTo)})
            </dt>
            <dd>
              <code>{cert.fingerprint256}</code>
            </dd>
          </div>
        ))}
      </dl>
    </section>
  );
}
