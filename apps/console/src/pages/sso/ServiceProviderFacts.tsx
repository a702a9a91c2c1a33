import { CopyValue } from '../../components/CopyButton';
import { Facts, type FactItem } from '../../components/Facts';
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
      <Facts wide items={rows.map(([term, value, what]): FactItem => [term, <CopyValue value={value} what={what} />])} />
    </section>
  );
}

/** What the service read from the IdP's metadata. */
export function IdentityProviderFacts({ connection: c }: { connection: SsoConnection }) {
  return (
    <section aria-labelledby="idp-title" className="card">
      <h2 id="idp-title">Identity provider</h2>
      <Facts
        wide
        items={[
          ['Entity id', <code>{c.idp.entityId}</code>],
          ['SSO URL (HTTP-Redirect)', <code>{c.idp.ssoUrl}</code>],
          ['Single logout URL', c.idp.sloUrl ? <code>{c.idp.sloUrl}</code> : <span className="muted">none in its metadata</span>],
          ...c.idp.certificates.map((cert, i): FactItem => [
            <>
              Signing certificate{c.idp.certificates.length > 1 ? ` ${i + 1}` : ''} (SHA-256 fingerprint, valid until {formatTime(cert.validTo)})
            </>,
            <code>{cert.fingerprint256}</code>,
          ]),
        ]}
      />
    </section>
  );
}
