import { useState, type ReactNode } from 'react';
import type { Schemas, SecsvcClient } from '@secsvc/client';
import { unwrap } from '../../api/errors';
import { SecretOnce } from '../../components/SecretOnce';
import { ConfirmDialog, ErrorMessage, Field, Link, Notice } from '../../components/ui';
import { formatTime } from '../../forms';
import { useLoad } from '../../hooks';
import { DEFAULT_GRACE, GRACE_PERIODS, graceLabel, keyStatus, type ApiKey } from './api-keys';
import { KeyStatusChip } from './KeyStatusChip';

/** One key: its facts (masked), rotation (the new secret shown once, here) and revocation. */
export function ApiKeyPage({ api, id }: { api: SecsvcClient; id: string }) {
  const key = useLoad(`api-key:${id}`, async () => unwrap(await api.GET('/v1/api-keys/{id}', { params: { path: { id } } })).data);
  /** The secret of the latest rotation: in this page's state only, gone when the reader leaves. */
  const [rotated, setRotated] = useState<Schemas['ApiKeyCreated']>();
  const [revoked, setRevoked] = useState(false);
  const k = rotated ?? key.data;
  return (
    <>
      <p className="crumbs">
        <Link to="/api-keys">API keys</Link> / {k?.name ?? id}
      </p>
      {key.error ? <ErrorMessage error={key.error} title="The key could not be loaded" /> : null}
      {key.loading && !k ? (
        <p className="muted" role="status">
          Loading…
        </p>
      ) : null}
      {k ? (
        <>
          <div className="page-head">
            <h1>{k.name}</h1>
            <KeyStatusChip apiKey={k} />
          </div>
          {revoked ? <Notice>The key was revoked: every call with it is refused from now on.</Notice> : null}
          {rotated ? (
            <SecretOnce title="The new secret" label="New API key" what="the new API key" value={rotated.key}>
              <p>
                {rotated.previousKeyExpiresAt
                  ? `The previous secret keeps working until ${formatTime(rotated.previousKeyExpiresAt)}: replace it everywhere before then.`
                  : 'The previous secret no longer works.'}
              </p>
            </SecretOnce>
          ) : null}
          <KeyFacts apiKey={k} />
          {keyStatus(k) === 'revoked' ? null : (
            <>
              <Rotate
                api={api}
                apiKey={k}
                onRotated={(r) => {
                  setRotated(r);
                  setRevoked(false);
                }}
              />
              <Revoke
                api={api}
                apiKey={k}
                onRevoked={() => {
                  setRotated(undefined);
                  setRevoked(true);
                  key.reload();
                }}
              />
            </>
          )}
        </>
      ) : null}
    </>
  );
}

function KeyFacts({ apiKey: k }: { apiKey: ApiKey }) {
  const facts: [string, ReactNode][] = [
    ['Key', <code key="k">{k.maskedKey}</code>],
    ['Id', <code key="i">{k.id}</code>],
    ['Type', k.type],
    ['Environment', k.environment],
    ['Plan', k.plan],
    ['Rate limit', k.rateLimit === null ? "the plan's" : `${k.rateLimit} requests per minute`],
    ['Created', formatTime(k.createdAt)],
    ['Last used', k.lastUsedAt ? formatTime(k.lastUsedAt) : 'never'],
    ['Expires', k.expiresAt ? formatTime(k.expiresAt) : 'never'],
  ];
  if (k.previousKeyExpiresAt) facts.push(['Previous secret works until', formatTime(k.previousKeyExpiresAt)]);
  if (k.revokedAt) facts.push(['Revoked', formatTime(k.revokedAt)]);
  return (
    <dl className="facts">
      {facts.map(([term, value]) => (
        <div key={term}>
          <dt>{term}</dt>
          <dd>{value}</dd>
        </div>
      ))}
    </dl>
  );
}

function Rotate({ api, apiKey, onRotated }: { api: SecsvcClient; apiKey: ApiKey; onRotated: (key: Schemas['ApiKeyCreated']) => void }) {
  const [grace, setGrace] = useState(DEFAULT_GRACE);
  const [confirm, setConfirm] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>();
  const rotate = async () => {
    setBusy(true);
    setError(undefined);
    try {
      onRotated(unwrap(await api.POST('/v1/api-keys/{id}/rotate', { params: { path: { id: apiKey.id } }, body: { gracePeriod: grace } })).data);
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
      setConfirm(false);
    }
  };
  return (
    <section aria-labelledby="rotate-title" className="card">
      <h2 id="rotate-title">Rotate</h2>
      <p>A new secret replaces the current one. Rotate every 90 days, and at once if the secret may have leaked (with no grace period).</p>
      {error ? <ErrorMessage error={error} title="The key was not rotated" /> : null}
      <div className="settings-form inline-form">
        <Field label="Grace period of the current secret" hint="How long the current secret keeps working beside the new one">
          {(p) => (
            <select {...p} name="gracePeriod" value={grace} onChange={(e) => setGrace(e.target.value)}>
              {GRACE_PERIODS.map((g) => (
                <option key={g.value} value={g.value}>
                  {g.label}
                </option>
              ))}
            </select>
          )}
        </Field>
        <button type="button" className="button" onClick={() => setConfirm(true)} disabled={busy}>
          Rotate key
        </button>
      </div>
      <ConfirmDialog open={confirm} title={`Rotate ${apiKey.name}?`} confirmLabel="Rotate" busy={busy} onConfirm={() => void rotate()} onCancel={() => setConfirm(false)}>
        <p>A new secret is made and shown once. The current secret {grace === '0s' ? 'stops working at once' : `keeps working for ${graceLabel(grace)}`}.</p>
        {apiKey.previousKeyExpiresAt ? <p>The grace period of the previous rotation ends now.</p> : null}
      </ConfirmDialog>
    </section>
  );
}

function Revoke({ api, apiKey, onRevoked }: { api: SecsvcClient; apiKey: ApiKey; onRevoked: () => void }) {
  const [confirm, setConfirm] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>();
  const revoke = async () => {
    setBusy(true);
    setError(undefined);
    try {
      unwrap(await api.DELETE('/v1/api-keys/{id}', { params: { path: { id: apiKey.id } } }));
      onRevoked();
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
      setConfirm(false);
    }
  };
  return (
    <section aria-labelledby="revoke-title" className="card danger-zone">
      <h2 id="revoke-title">Revoke</h2>
      <p>Every gateway refuses the key at once (and a previous secret still in its grace period). It cannot be undone.</p>
      {error ? <ErrorMessage error={error} title="The key was not revoked" /> : null}
      <button type="button" className="button danger" onClick={() => setConfirm(true)} disabled={busy}>
        Revoke key
      </button>
      <ConfirmDialog open={confirm} title={`Revoke ${apiKey.name}?`} confirmLabel="Revoke" busy={busy} onConfirm={() => void revoke()} onCancel={() => setConfirm(false)}>
        <p>
          Calls with <code>{apiKey.maskedKey}</code> are refused from now on.
        </p>
      </ConfirmDialog>
    </section>
  );
}
