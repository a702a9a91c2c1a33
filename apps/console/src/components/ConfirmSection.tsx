// A card whose button does something that cannot be undone (delete, revoke, rotate) after a confirmation
// dialog: what it does, the error if it failed, the button, the dialog.
import { useState, type ReactNode } from 'react';
import { useAction } from '../hooks';
import { ConfirmDialog, ErrorMessage } from './ui';

interface ConfirmSectionProps {
  /** The heading's id, the section's name: 'delete-title'. */
  headingId: string;
  title: string;
  /** The danger zone's looks (a red card, a red button); false for a plain card. */
  danger?: boolean;
  /** What the action does, a paragraph. */
  intro: ReactNode;
  /** The error box's title: "The user was not deleted". */
  failedTitle: string;
  buttonLabel: string;
  /** Inputs beside the button (in an inline form). */
  controls?: ReactNode;
  confirmTitle: string;
  confirmLabel: string;
  /** Does it (the dialog closes once it is done or failed); throws the API's error. */
  act: () => Promise<unknown>;
  /** The dialog's text. */
  children: ReactNode;
}

export function ConfirmSection({ headingId, title, danger = true, intro, failedTitle, buttonLabel, controls, confirmTitle, confirmLabel, act, children }: ConfirmSectionProps) {
  const action = useAction();
  const [confirm, setConfirm] = useState(false);
  const button = (
    <button type="button" className={danger ? 'button danger' : 'button'} onClick={() => setConfirm(true)} disabled={action.busy}>
      {buttonLabel}
    </button>
  );
  return (
    <section aria-labelledby={headingId} className={danger ? 'card danger-zone' : 'card'}>
      <h2 id={headingId}>{title}</h2>
      <p>{intro}</p>
      {action.error ? <ErrorMessage error={action.error} title={failedTitle} /> : null}
      {controls ? (
        <div className="settings-form inline-form">
          {controls}
          {button}
        </div>
      ) : (
        button
      )}
      <ConfirmDialog open={confirm} title={confirmTitle} confirmLabel={confirmLabel} busy={action.busy} onConfirm={() => void action.run(act).then(() => setConfirm(false))} onCancel={() => setConfirm(false)}>
        {children}
      </ConfirmDialog>
    </section>
  );
}

/** The danger zone of a detail page: "Delete <thing>", confirmed by "Delete <name>?". */
export function DeleteSection({ thing, name, intro, act, children }: { thing: string; name: string; intro: ReactNode; act: () => Promise<unknown>; children: ReactNode }) {
  return (
    <ConfirmSection
      headingId="delete-title"
      title={`Delete ${thing}`}
      intro={intro}
      failedTitle={`The ${thing} was not deleted`}
      buttonLabel={`Delete ${thing}`}
      confirmTitle={`Delete ${name}?`}
      confirmLabel="Delete"
      act={act}
    >
      {children}
    </ConfirmSection>
  );
}
