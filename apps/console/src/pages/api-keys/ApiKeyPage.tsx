import { useState } from 'react';
import type { Schemas, SecsvcClient } from '@secsvc/client';
import { unwrap } from '../../api/errors';
import { ConfirmSection } from '../../components/ConfirmSection';
import { Facts } from '../../components/Facts';
import { LoadState } from '../../components/LoadState';
import { SecretOnce } from '../../components/SecretOnce';
import { Crumbs, Notice, PageHead, SelectField } from '../../components/ui';
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
      <Crumbs trail={[['/api-keys', 'API keys']]}>{k?.name ?? id}</Crumbs>
      <LoadState load={{ loading: key.loading, error: key.error, data: k }} failedTitle="The key could not be loaded">
        {(k) => (
          <>
            <PageHead title={k.name}>
              <KeyStatusChip apiKey={k} />
            </PageHead>
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
                <ConfirmSection
                  headingId="revoke-title"
                  title="Revoke"
                  intro="Every gateway refuses the key at once (and a previous secret still in its grace period). It cannot be undone."
                  failedTitle="The key was not revoked"
                  buttonLabel="Revoke key"
                  confirmTitle={`Revoke ${k.name}?`}
                  confirmLabel="Revoke"
                  act={async () => {
                    unwrap(await api.DELETE('/v1/api-keys/{id}', { params: { path: { id: k.id } } }));
                    setRotated(undefined);
                    setRevoked(true);
                    key.reload();
                  }}
                >
                  <p>
                    Calls with <code>{k.maskedKey}</code> are refused from now on.
                  </p>
                </ConfirmSection>
              </>
            )}
          </>
        )}
      </LoadState>
    </>
  );
}

function KeyFacts({ apiKey: k }: { apiKey: ApiKey }) {
  return (
    <Facts
      items={[
        ['Key', <code>{k.maskedKey}</code>],
        ['Id', <code>{k.id}</code>],
        ['Type', k.type],
        ['Environment', k.environment],
        ['Plan', k.plan],
        ['Rate limit', k.rateLimit === null ? "the plan's" : `${k.rateLimit} requests per minute`],
        ['Created', formatTime(k.createdAt)],
        ['Last used', k.lastUsedAt ? formatTime(k.lastUsedAt) : 'never'],
        ['Expires', k.expiresAt ? formatTime(k.expiresAt) : 'never'],
        k.previousKeyExpiresAt ? ['Previous secret works until', formatTime(k.previousKeyExpiresAt)] : null,
        k.revokedAt ? ['Revoked', formatTime(k.revokedAt)] : null,
      ]}
    />
  );
}

function Rotate({ api, apiKey, onRotated }: { api: SecsvcClient; apiKey: ApiKey; onRotated: (key: Schemas['ApiKeyCreated']) => void }) {
  const [grace, setGrace] = useState(DEFAULT_GRACE);
  return (
    <ConfirmSection
      headingId="rotate-title"
      title="Rotate"
      danger={false}
      intro="A new secret replaces the current one. Rotate every 90 days, and at once if the secret may have leaked (with no grace period)."
      failedTitle="The key was not rotated"
      buttonLabel="Rotate key"
      controls={
        <SelectField
          label="Grace period of the current secret"
          hint="How long the current secret keeps working beside the new one"
          name="gracePeriod"
          value={grace}
          options={GRACE_PERIODS}
          onChange={setGrace}
        />
      }
      confirmTitle={`Rotate ${apiKey.name}?`}
      confirmLabel="Rotate"
      act={async () => onRotated(unwrap(await api.POST('/v1/api-keys/{id}/rotate', { params: { path: { id: apiKey.id } }, body: { gracePeriod: grace } })).data)}
    >
      <p>A new secret is made and shown once. The current secret {grace === '0s' ? 'stops working at once' : `keeps working for ${graceLabel(grace)}`}.</p>
      {apiKey.previousKeyExpiresAt ? <p>The grace period of the previous rotation ends now.</p> : null}
    </ConfirmSection>
  );
}
