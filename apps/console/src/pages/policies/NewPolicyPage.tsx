import { useState } from 'react';
import type { SecsvcClient } from '@secsvc/client';
import { unwrap } from '../../api/errors';
import { Crumbs } from '../../components/ui';
import { navigate } from '../../router';
import { createBody, EMPTY_POLICY, EMPTY_SIMULATOR } from './policy-form';
import { PolicyWorkspace } from './PolicyWorkspace';

/** A new policy: the editor, and the simulator trying it as a draft before it is created. */
export function NewPolicyPage({ api }: { api: SecsvcClient }) {
  const [sim, setSim] = useState(EMPTY_SIMULATOR);
  return (
    <>
      <Crumbs trail={[['/policies', 'Policies']]}>New policy</Crumbs>
      <h1>New policy</h1>
      <PolicyWorkspace
        api={api}
        initial={EMPTY_POLICY}
        title="Policy"
        submitLabel="Create policy"
        busyLabel="Creating…"
        failedTitle="The policy was not created"
        sim={sim}
        onSimChange={setSim}
        save={async (values) => {
          const body = createBody(values);
          if (!body.ok) return; // the conditions are not JSON: the field says so
          const created = unwrap(await api.POST('/v1/policies', { body: body.value }));
          navigate(`/policies/${created.data.id}?created=1`);
        }}
        cancelTo="/policies"
      />
    </>
  );
}
