// The console's few building blocks: links of the router, form fields with the API's messages next to them,
// error boxes with the request id, a confirmation dialog, and the environment switch.
import { Fragment, useEffect, useId, useRef, type AnchorHTMLAttributes, type ReactNode } from 'react';
import { ApiError, type FieldDetail } from '../api/errors';
import type { Environment } from '../auth/session';
import { followLink, hrefOf } from '../router';

export function Link({ to, children, ...rest }: { to: string; children: ReactNode } & Omit<AnchorHTMLAttributes<HTMLAnchorElement>, 'href'>) {
  return (
    <a {...rest} href={hrefOf(to)} onClick={(e) => followLink(e, to)}>
      {children}
    </a>
  );
}

/** An error for the reader: the message, the details no field shows, and the request id to quote. */
export function ErrorMessage({ error, extra = [], title }: { error: unknown; extra?: FieldDetail[]; title?: string }) {
  const api = error instanceof ApiError ? error : undefined;
  const message = error instanceof Error ? error.message : String(error);
  const details = api ? extra : [];
  return (
    <div className="alert alert-error" role="alert">
      {title ? <p className="alert-title">{title}</p> : null}
      <p>
        <strong>{message}</strong>
        {api ? <span className="error-code"> ({api.status} {api.code})</span> : null}
      </p>
      {details.length ? (
        <ul>
          {details.map((d, i) => (
            <li key={i}>
              <code>{d.field}</code>: {d.message}
            </li>
          ))}
        </ul>
      ) : null}
      {api?.requestId ? (
        <p className="request-id">
          Request id: <code>{api.requestId}</code>
        </p>
      ) : null}
    </div>
  );
}

/** Where a page is: links to the pages above it (`[to, label]`), then the page itself. */
export function Crumbs({ trail, children }: { trail: [to: string, label: string][]; children: ReactNode }) {
  return (
    <p className="crumbs">
      {trail.map(([to, label]) => (
        <Fragment key={to}>
          <Link to={to}>{label}</Link>
          {' / '}
        </Fragment>
      ))}
      {children}
    </p>
  );
}

/** A page's title with what goes beside it: a list's "New …" link (`add`: `[to, label]`), a status. */
export function PageHead({ title, add, children }: { title: ReactNode; add?: [to: string, label: string]; children?: ReactNode }) {
  return (
    <div className="page-head">
      <h1>{title}</h1>
      {add ? (
        <Link to={add[0]} className="button primary">
          {add[1]}
        </Link>
      ) : null}
      {children}
    </div>
  );
}

export function Notice({ children }: { children: ReactNode }) {
  return (
    <div className="alert alert-ok" role="status">
      {children}
    </div>
  );
}

interface FieldProps {
  label: string;
  hint?: string;
  /** The API's details about this field (roles[1], metadata.a...), and a local problem. */
  errors?: FieldDetail[];
  children: (props: { id: string; 'aria-invalid': boolean; 'aria-describedby'?: string }) => ReactNode;
}

/** A labelled input whose hint and error messages are tied to it (aria-describedby), errors under it. */
export function Field({ label, hint, errors = [], children }: FieldProps) {
  const id = useId();
  const described = [hint ? `${id}-hint` : '', errors.length ? `${id}-errors` : ''].filter(Boolean).join(' ');
  return (
    <div className={`field${errors.length ? ' field-invalid' : ''}`}>
      <label htmlFor={id}>{label}</label>
      {hint ? (
        <p id={`${id}-hint`} className="hint">
          {hint}
        </p>
      ) : null}
      {children({ id, 'aria-invalid': errors.length > 0, ...(described ? { 'aria-describedby': described } : {}) })}
      <FieldErrors id={`${id}-errors`} errors={errors} />
    </div>
  );
}

export interface Option<V extends string> {
  value: V;
  label: string;
}

/** A labelled select (a Field) of `options`. */
export function SelectField<V extends string>(props: { label: string; hint?: string; errors?: FieldDetail[]; name: string; value: V; options: readonly Option<V>[]; onChange: (value: V) => void }) {
  return (
    <Field label={props.label} hint={props.hint} errors={props.errors}>
      {(p) => (
        <select {...p} name={props.name} value={props.value} onChange={(e) => props.onChange(e.target.value as V)}>
          {props.options.map((o) => (
            <option key={o.value} value={o.value}>
              {o.label}
            </option>
          ))}
        </select>
      )}
    </Field>
  );
}

/** The messages about a field, under it (nothing when there are none); `id` ties them to the input. */
export function FieldErrors({ id, errors }: { id?: string; errors: readonly FieldDetail[] }) {
  return errors.length ? (
    <ul id={id} className="field-errors">
      {errors.map((d, i) => (
        <li key={i}>
          <code>{d.field}</code> {d.message}
        </li>
      ))}
    </ul>
  ) : null;
}

/** A modal confirmation (the browser's <dialog>): Escape or Cancel cancels. */
export function ConfirmDialog(props: { open: boolean; title: string; children: ReactNode; confirmLabel: string; busy?: boolean; onConfirm: () => void; onCancel: () => void }) {
  const ref = useRef<HTMLDialogElement>(null);
  const titleId = useId();
  const { open, onCancel } = props;
  useEffect(() => {
    const dialog = ref.current;
    if (!dialog) return;
    if (open && !dialog.open) dialog.showModal();
    if (!open && dialog.open) dialog.close();
  }, [open]);
  return (
    <dialog
      ref={ref}
      className="dialog"
      aria-labelledby={titleId}
      onCancel={(e) => {
        e.preventDefault();
        onCancel();
      }}
    >
      <h2 id={titleId}>{props.title}</h2>
      <div className="dialog-body">{props.children}</div>
      <div className="actions">
        <button type="button" className="button danger" onClick={props.onConfirm} disabled={props.busy}>
          {props.confirmLabel}
        </button>
        <button type="button" className="button" onClick={onCancel} disabled={props.busy}>
          Cancel
        </button>
      </div>
    </dialog>
  );
}

/** Live or test: the console signs in with that environment's client; its data is that environment's. */
export function EnvironmentSwitch({ value, available, onChange, disabled }: { value: Environment; available: Environment[]; onChange: (env: Environment) => void; disabled?: boolean }) {
  const names: Record<Environment, string> = { live: 'Live', test: 'Test' };
  return (
    <div className="env-switch" role="group" aria-label="Environment">
      {(['live', 'test'] as const).map((env) => (
        <button
          key={env}
          type="button"
          className={`env-option env-${env}`}
          aria-pressed={value === env}
          disabled={disabled || !available.includes(env)}
          onClick={() => value !== env && onChange(env)}
        >
          {names[env]}
        </button>
      ))}
    </div>
  );
}

export function TestBanner() {
  return (
    <div className="test-banner" role="note" aria-label="Test environment">
      <strong>Test environment.</strong> You are working with test data, kept apart from live.
    </div>
  );
}
