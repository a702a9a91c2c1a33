import { useState, type FormEvent } from 'react';
import type { SecsvcClient } from '@secsvc/client';
import { unwrap, type FieldDetail } from '../../api/errors';
import { FormActions } from '../../components/ActionForm';
import { Facts } from '../../components/Facts';
import { ErrorMessage, Field, FieldErrors, SelectField, type Option } from '../../components/ui';
import { useAction } from '../../hooks';
import {
  draftOf,
  formatActual,
  formatExpected,
  formatFailed,
  policyKind,
  simulateBody,
  simulationDetails,
  type PolicyFormValues,
  type SimulateBody,
  type SimulationResult,
  type SimulatorValues,
} from './policy-form';

interface SimulatorProps {
  api: SecsvcClient;
  /** The editor's current values: sent as a draft, so the policy is tried before it is saved. */
  draft: PolicyFormValues;
  /** The stored policy being edited (its draft stands in for it), none for a new one. */
  storedId?: string;
  values: SimulatorValues;
  onChange: (values: SimulatorValues) => void;
  /** The API's messages about the draft (policies[0].<field>), for the editor to show under its fields. */
  onDraftDetails: (byField: Map<string, FieldDetail[]>) => void;
}

const MODES: Option<SimulatorValues['mode']>[] = [
  { value: 'merge', label: 'Draft with the stored policies' },
  { value: 'replace', label: 'Draft alone' },
  { value: 'stored', label: 'Stored policies only' },
];

const KIND_LABEL = { draft: 'draft', edited: 'this policy, as drafted', stored: 'stored' } as const;

/**
 * `POST /v1/policies/simulate` beside the editor: who (user:<id>), which action on which resource, from which ip,
 * with or without MFA; the answer as the API gives it: allowed or denied, the reason, the matched policies,
 * why each other policy did not match, and the evaluation time.
 */
export function Simulator({ api, draft, storedId, values, onChange, onDraftDetails }: SimulatorProps) {
  const action = useAction();
  const error = action.error;
  const [answer, setAnswer] = useState<{ request: SimulateBody; result: SimulationResult }>();
  const parsedDraft = draftOf(draft, storedId);
  const { simulator: byField, rest } = simulationDetails(error);
  const set = (k: 'principal' | 'action' | 'resource' | 'ip' | 'mfaAgeSeconds') => (e: { target: { value: string } }) => onChange({ ...values, [k]: e.target.value });
  const request = parsedDraft.ok || values.mode === 'stored' ? simulateBody(values, parsedDraft.ok ? parsedDraft.value : undefined) : undefined;
  const stale = answer !== undefined && JSON.stringify(answer.request) !== JSON.stringify(request);

  const submit = (e: FormEvent) => {
    e.preventDefault();
    if (!request) {
      setAnswer(undefined);
      action.fail(new Error('The draft’s conditions are not valid JSON: correct them in the editor, or simulate with the stored policies only.'));
      return;
    }
    void action.run(
      async () => {
        const result = unwrap(await api.POST('/v1/policies/simulate', { body: request })).data;
        setAnswer({ request, result });
        onDraftDetails(new Map());
      },
      (err) => {
        setAnswer(undefined);
        onDraftDetails(simulationDetails(err).draft);
      },
    );
  };

  return (
    <section className="card simulator" aria-labelledby="simulator-title">
      <h2 id="simulator-title">Simulator</h2>
      <p className="hint">Evaluates a request with the policy as drafted in the editor, before it is saved.</p>
      <form className="form" onSubmit={submit} noValidate>
        <Field label="Principal" hint="user:<id> (the user’s roles count too)" errors={byField.get('principal')}>
          {(p) => <input {...p} name="principal" type="text" autoComplete="off" spellCheck={false} placeholder="user:user_…" value={values.principal} onChange={set('principal')} />}
        </Field>
        <Field label="Action" errors={byField.get('action')}>
          {(p) => <input {...p} name="action" type="text" autoComplete="off" spellCheck={false} placeholder="read" value={values.action} onChange={set('action')} />}
        </Field>
        <Field label="Resource" errors={byField.get('resource')}>
          {(p) => <input {...p} name="resource" type="text" autoComplete="off" spellCheck={false} placeholder="/users/user_…" value={values.resource} onChange={set('resource')} />}
        </Field>
        <Field label="IP address" hint="Optional: the client address ip conditions are checked against" errors={byField.get('context.ip')}>
          {(p) => <input {...p} name="ip" type="text" inputMode="decimal" autoComplete="off" spellCheck={false} placeholder="10.1.2.3" value={values.ip} onChange={set('ip')} />}
        </Field>
        <div className={`field checkbox-field${byField.get('context.mfa') ? ' field-invalid' : ''}`}>
          <label>
            <input type="checkbox" name="mfa" checked={values.mfa} onChange={(e) => onChange({ ...values, mfa: e.target.checked })} /> The user completed a multi-factor authentication
          </label>
          <FieldErrors errors={byField.get('context.mfa') ?? []} />
        </div>
        {values.mfa ? (
          <Field label="MFA age (seconds)" hint="How long ago; empty for just now" errors={byField.get('context.mfaAgeSeconds')}>
            {(p) => <input {...p} name="mfaAgeSeconds" type="number" min={0} step={1} inputMode="numeric" value={values.mfaAgeSeconds} onChange={set('mfaAgeSeconds')} />}
          </Field>
        ) : null}
        <SelectField
          label="Evaluate"
          hint={storedId ? 'The draft stands in for the stored version of this policy' : undefined}
          name="mode"
          value={values.mode}
          options={MODES}
          onChange={(mode) => onChange({ ...values, mode })}
        />
        <FormActions busy={action.busy} label="Simulate" busyLabel="Simulating…" />
      </form>
      <div aria-live="polite">
        {error ? <ErrorMessage error={error} extra={rest} title="The simulation failed" /> : null}
        {answer ? <Result result={answer.result} editedId={storedId} stale={stale} /> : null}
      </div>
    </section>
  );
}

function Result({ result, editedId, stale }: { result: SimulationResult; editedId?: string; stale: boolean }) {
  const explanations = result.explanations ?? [];
  const notMatched = result.notMatchedCount ?? explanations.length;
  return (
    <div className="sim-result" role="region" aria-label="Simulation result">
      <p className={`sim-decision ${result.allowed ? 'sim-allowed' : 'sim-denied'}`}>{result.allowed ? 'Allowed' : 'Denied'}</p>
      <p className="sim-reason">{result.reason}</p>
      {stale ? <p className="muted">The inputs or the draft changed since: simulate again to see their answer.</p> : null}
      <Facts
        items={[
          ['Effect', result.effect],
          [
            'Evaluation time',
            <>
              {result.evaluationTimeMs} ms
            </>,
          ],
          ['Decision', <code>{result.decisionId}</code>],
          result.mfaRequired && [
            'MFA',
            <>
              Required{result.mfaMaxAgeSeconds ? ` (completed within the last ${result.mfaMaxAgeSeconds} s)` : ''}: the call would answer mfa_required
            </>,
          ],
        ]}
      />
      <h3 id="sim-matched">Matched policies</h3>
      {result.matchedPolicies.length ? (
        <ul className="sim-list" aria-labelledby="sim-matched">
          {result.matchedPolicies.map((m) => (
            <li key={m.id}>
              <span className={`chip effect-${m.effect}`}>{m.effect}</span> <strong>{m.name}</strong> <code>{m.id}</code>
              {policyKind(m.id, editedId) !== 'stored' ? <span className="muted"> ({KIND_LABEL[policyKind(m.id, editedId)]})</span> : null}
            </li>
          ))}
        </ul>
      ) : (
        <p className="muted">None: no policy matched (the default is to deny).</p>
      )}
      <h3 id="sim-explained">Policies that did not match</h3>
      {explanations.length ? (
        <>
          <p className="muted">
            {notMatched > explanations.length ? `The nearest ${explanations.length} of ${notMatched}` : `${notMatched} ${notMatched === 1 ? 'policy' : 'policies'}`}, each with the
            first part that failed:
          </p>
          <ul className="sim-list sim-explanations" aria-labelledby="sim-explained">
            {explanations.map((x) => (
              <li key={x.policyId}>
                <span className={`chip effect-${x.effect}`}>{x.effect}</span> <strong>{x.name}</strong> <code>{x.policyId}</code>
                {policyKind(x.policyId, editedId) !== 'stored' ? <span className="muted"> ({KIND_LABEL[policyKind(x.policyId, editedId)]})</span> : null}
                <span className="sim-why">
                  failed on <strong>{formatFailed(x.failed, x.condition)}</strong>: expected <code>{formatExpected(x.expected)}</code>, got <code>{formatActual(x.actual)}</code>
                </span>
              </li>
            ))}
          </ul>
        </>
      ) : (
        <p className="muted">None.</p>
      )}
    </div>
  );
}
