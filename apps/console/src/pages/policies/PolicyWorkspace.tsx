import { useState } from 'react';
import type { SecsvcClient } from '@secsvc/client';
import { splitDetails, type FieldDetail } from '../../api/errors';
import { ActionForm } from '../../components/ActionForm';
import { useAction } from '../../hooks';
import { mergeDetails, parseConditions, POLICY_FIELDS, type PolicyFormValues, type SimulatorValues } from './policy-form';
import { PolicyFields } from './PolicyFields';
import { Simulator } from './Simulator';

interface WorkspaceProps {
  api: SecsvcClient;
  initial: PolicyFormValues;
  /** The stored policy being edited; none for a new one. */
  storedId?: string;
  title: string;
  submitLabel: string;
  busyLabel: string;
  /** What failed, for the error box's title. */
  failedTitle: string;
  /** Sends the policy; throws the API's error; may answer a notice (nothing changed). */
  save: (values: PolicyFormValues) => Promise<string | void>;
  /** The simulator's inputs, kept by the page (they outlive a save). */
  sim: SimulatorValues;
  onSimChange: (sim: SimulatorValues) => void;
  /** Called on every change of the form (to drop an earlier "Saved."). */
  onEdit?: () => void;
  /** Where the Cancel link beside the submit button goes (none: no Cancel). */
  cancelTo?: string;
}

/**
 * The policy editor with the simulator beside it (below it on narrow screens): the simulator sends what the
 * editor holds as a draft. The API's messages appear under the fields they name, from saving (principals[1])
 * and from simulating the draft (policies[0].principals[1]); conditions that are not JSON are named while typed.
 */
export function PolicyWorkspace(props: WorkspaceProps) {
  const { api, storedId, save } = props;
  const [values, setValues] = useState(props.initial);
  const action = useAction();
  const [notice, setNotice] = useState<string>();
  const [draftDetails, setDraftDetails] = useState<Map<string, FieldDetail[]>>(new Map());
  const conditions = parseConditions(values.conditions);
  const { byField, rest } = splitDetails(action.error, POLICY_FIELDS);
  const errors = mergeDetails(byField, draftDetails);
  if (!conditions.ok) errors.set('conditions', [{ field: 'conditions', message: conditions.message }]);

  const submit = () => {
    if (!conditions.ok) return;
    setNotice(undefined);
    setDraftDetails(new Map());
    void action.run(async () => {
      const said = await save(values);
      if (said) setNotice(said);
    });
  };
  return (
    <div className="policy-workspace">
      <section className="card" aria-labelledby="policy-editor-title">
        <h2 id="policy-editor-title">{props.title}</h2>
        <ActionForm
          action={action}
          failedTitle={props.failedTitle}
          extra={rest}
          notice={notice}
          onSubmit={submit}
          onChange={() => {
            setNotice(undefined);
            props.onEdit?.();
          }}
          submitLabel={props.submitLabel}
          busyLabel={props.busyLabel}
          cancelTo={props.cancelTo}
        >
          <PolicyFields values={values} onChange={setValues} errors={errors} />
        </ActionForm>
      </section>
      <Simulator api={api} draft={values} storedId={storedId} values={props.sim} onChange={props.onSimChange} onDraftDetails={setDraftDetails} />
    </div>
  );
}
