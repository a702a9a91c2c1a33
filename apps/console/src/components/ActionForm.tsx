// The console's forms: the API's error above the form (the details no field shows, the request id), a notice
// ("Nothing changed."), the fields, and the action bar whose submit button says when it is busy.
import { useState, type ReactNode } from 'react';
import type { FieldDetail } from '../api/errors';
import type { Action } from '../hooks';
import { ErrorMessage, Link, Notice } from './ui';

/** The submit button ("Saving…" while busy) and a Cancel link back to `cancelTo`. */
export function FormActions({ busy, label, busyLabel, cancelTo }: { busy: boolean; label: string; busyLabel: string; cancelTo?: string }) {
  return (
    <div className="actions">
      <button type="submit" className="button primary" disabled={busy}>
        {busy ? busyLabel : label}
      </button>
      {cancelTo ? (
        <Link to={cancelTo} className="button">
          Cancel
        </Link>
      ) : null}
    </div>
  );
}

interface ActionFormProps {
  action: Action;
  /** The error box's title: "The user was not created". */
  failedTitle: string;
  /** The error's details no field shows. */
  extra?: FieldDetail[];
  notice?: ReactNode;
  className?: string;
  /** The form was submitted (the browser's submission is prevented). */
  onSubmit: () => void;
  /** Any input changed. */
  onChange?: () => void;
  submitLabel: string;
  busyLabel: string;
  cancelTo?: string;
  children: ReactNode;
}

export function ActionForm({ action, failedTitle, extra, notice, className = 'form', onSubmit, onChange, submitLabel, busyLabel, cancelTo, children }: ActionFormProps) {
  return (
    <>
      {action.error ? <ErrorMessage error={action.error} extra={extra} title={failedTitle} /> : null}
      {notice ? <Notice>{notice}</Notice> : null}
      <form
        className={className}
        onSubmit={(e) => {
          e.preventDefault();
          onSubmit();
        }}
        onChange={onChange}
        noValidate
      >
        {children}
        <FormActions busy={action.busy} label={submitLabel} busyLabel={busyLabel} cancelTo={cancelTo} />
      </form>
    </>
  );
}

/**
 * The "Edit" card of a detail page: `onSubmit` sends the changes, or calls `unchanged` when there are none
 * ("Nothing changed." until the next edit); `onEdit` is called on every change.
 */
export function EditCard(props: { action: Action; extra?: FieldDetail[]; className?: string; onSubmit: (unchanged: () => void) => void; onEdit: () => void; children: ReactNode }) {
  const [unchanged, setUnchanged] = useState(false);
  return (
    <section aria-labelledby="edit-title" className="card">
      <h2 id="edit-title">Edit</h2>
      <ActionForm
        action={props.action}
        failedTitle="The changes were not saved"
        extra={props.extra}
        notice={unchanged ? 'Nothing changed.' : undefined}
        className={props.className}
        onSubmit={() => props.onSubmit(() => setUnchanged(true))}
        onChange={() => {
          setUnchanged(false);
          props.onEdit();
        }}
        submitLabel="Save changes"
        busyLabel="Saving…"
      >
        {props.children}
      </ActionForm>
    </section>
  );
}
