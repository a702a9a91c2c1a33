import { useState } from 'react';
import type { SecsvcClient } from '@secsvc/client';
import { unwrap } from '../../api/errors';
import { DeleteSection } from '../../components/ConfirmSection';
import { Facts } from '../../components/Facts';
import { LoadState } from '../../components/LoadState';
import { Crumbs, Notice } from '../../components/ui';
import { formatTime } from '../../forms';
import { useLoad, useSaved } from '../../hooks';
import { navigate } from '../../router';
import { changesOf, EMPTY_SIMULATOR, formValuesOf } from './policy-form';
import { PolicyWorkspace } from './PolicyWorkspace';

/** One policy: its facts, the editor with the simulator beside it, and deletion. */
export function PolicyPage({ api, id, created }: { api: SecsvcClient; id: string; created: boolean }) {
  const policy = useLoad(`policy:${id}`, async () => unwrap(await api.GET('/v1/policies/{id}', { params: { path: { id } } })).data);
  const { saved, onSaved, onEdit } = useSaved(policy.reload);
  const [sim, setSim] = useState(EMPTY_SIMULATOR);
  return (
    <>
      <Crumbs trail={[['/policies', 'Policies']]}>{policy.data?.name ?? id}</Crumbs>
      <LoadState load={policy} failedTitle="The policy could not be loaded">
        {(p) => (
          <>
            <h1>{p.name}</h1>
            {created ? <Notice>The policy was created.</Notice> : null}
            {saved ? <Notice>Saved.</Notice> : null}
            <Facts
              items={[
                ['Id', <code>{p.id}</code>],
                ['Effect', p.effect],
                ['Created', formatTime(p.createdAt)],
                ['Updated', formatTime(p.updatedAt)],
              ]}
            />
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
              onEdit={onEdit}
              save={async (values) => {
                const body = changesOf(p, values);
                if (!body.ok) return undefined; // the conditions are not JSON: the field says so
                if (Object.keys(body.value).length === 0) return 'Nothing changed.';
                unwrap(await api.PATCH('/v1/policies/{id}', { params: { path: { id: p.id } }, body: body.value }));
                onSaved();
                return undefined;
              }}
            />
            <DeleteSection
              thing="policy"
              name={p.name}
              intro="The policy stops applying at once: every decision after this one is made without it. It cannot be undone."
              act={async () => {
                unwrap(await api.DELETE('/v1/policies/{id}', { params: { path: { id: p.id } } }));
                navigate(`/policies?deleted=${encodeURIComponent(p.name)}`);
              }}
            >
              <p>
                The policy <code>{p.id}</code> is deleted for good.
              </p>
            </DeleteSection>
          </>
        )}
      </LoadState>
    </>
  );
}
