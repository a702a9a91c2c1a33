import { useState } from 'react';
import type { SecsvcClient } from '@secsvc/client';
import { unwrap } from '../../api/errors';
import { ConfirmDialog, ErrorMessage, Link, Notice } from '../../components/ui';
import { formatTime } from '../../forms';
import { useLoad } from '../../hooks';
import { navigate } from '../../router';
import { changesOf, EMPTY_SIMULATOR, formValuesOf, type Policy } from './policy-form';
import { PolicyWorkspace } from './PolicyWorkspace';

/** One policy: its facts, the editor with the simulator beside it, and deletion. */
export function PolicyPage({ api, id, created }: { api: SecsvcClient; id: string; created: boolean }) {
  const policy = useLoad(`policy:${id}`, async () => unwrap(await api.GET('/v1/policies/{id}', { params: { path: { id } } })).data);
  const [saved, setSaved] = useState(false);
  const [sim, setSim] = useState(EMPTY_SIMULATOR);
  const p = policy.data;
  return (
    <>
      <p className="crumbs">
        <Link to="/policies">Policies</Link> / {p?.name ?? id}
      </p>
      {policy.error ? <ErrorMessage error={policy.error} title="The policy could not be loaded" /> : null}
      {policy.loading && !p ? (
        <p className="muted" role="status">
          Loading…
        </p>
      ) : null}
      {p ? (
        <>
          <h1>{p.name}</h1>
          {created ? <Notice>The policy was created.</Notice> : null}
          {saved ? <Notice>Saved.</Notice> : null}
          <dl className="facts">
            <div>
              <dt>Id</dt>
              <dd>
                <code>{p.id}</code>
              </dd>
            </div>
            <div>
              <dt>Effect</dt>
              <dd>{p.effect}</dd>
            </div>
            <div>
              <dt>Created</dt>
              <dd>{formatTime(p.createdAt)}</dd>
            </div>
            <div>
              <dt>Updated</dt>
              <dd>{formatTime(p.updatedAt)}</dd>
            </div>
          </dl>
          <PolicyWorkspace
            key={p.updatedAt}
            api={api}
            initial={formValuesOf(p)}
            storedId={p.id}
            title="Edit"
            submitLabel="Save changes"
            busyLabel="Saving…"
            failedTitle="The changes were not saved"
            sim={sim}
            onSimChange={setSim}
            onEdit={() => setSaved(false)}
            save={async (values) => {
              const body = changesOf(p, values);
              if (!body.ok) return undefined; // the conditions are not JSON: the field says so
              if (Object.keys(body.value).length === 0) return 'Nothing changed.';
              unwrap(await api.PATCH('/v1/policies/{id}', { params: { path: { id: p.id } }, body: body.value }));
              setSaved(true);
              policy.reload();
              return undefined;
            }}
          />
          <DeletePolicy api={api} policy={p} />
        </>
      ) : null}
    </>
  );
}

function DeletePolicy({ api, policy }: { api: SecsvcClient; policy: Policy }) {
  const [confirm, setConfirm] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>();
  const remove = async () => {
    setBusy(true);
    setError(undefined);
    try {
      unwrap(await api.DELETE('/v1/policies/{id}', { params: { path: { id: policy.id } } }));
      navigate(`/policies?deleted=${encodeURIComponent(policy.name)}`);
    } catch (err) {
      setError(err);
      setBusy(false);
      setConfirm(false);
    }
  };
  return (
    <section aria-labelledby="delete-title" className="card danger-zone">
      <h2 id="delete-title">Delete policy</h2>
      <p>The policy stops applying at once: every decision after this one is made without it. It cannot be undone.</p>
      {error ? <ErrorMessage error={error} title="The policy was not deleted" /> : null}
      <button type="button" className="button danger" onClick={() => setConfirm(true)} disabled={busy}>
        Delete policy
      </button>
      <ConfirmDialog open={confirm} title={`Delete ${policy.name}?`} confirmLabel="Delete" busy={busy} onConfirm={() => void remove()} onCancel={() => setConfirm(false)}>
        <p>
          The policy <code>{policy.id}</code> is deleted for good.
        </p>
      </ConfirmDialog>
    </section>
  );
}
