// A secret the API answers once (an API key, a client secret): shown in a panel with a copy button and the
// warning that it will not be shown again. It lives in the state of the page that received it only, so it is
// gone once the reader leaves that page.
import { useId, type ReactNode } from 'react';
import { CopyButton } from './CopyButton';

/** `what` names the value for the copy button's accessible name ("the API key"). */
export function SecretOnce({ title, label, what, value, children }: { title: string; label: string; what: string; value: string; children?: ReactNode }) {
  const id = useId();
  return (
    <section className="secret-once" aria-labelledby={`${id}-title`}>
      <h2 id={`${id}-title`}>{title}</h2>
      <p className="secret-warning">
        <strong>Copy it now: it will not be shown again.</strong> Only a hash is stored; keep it in a secrets store or an environment variable,
        never in code a browser downloads.
      </p>
      <p className="label" id={`${id}-label`}>
        {label}
      </p>
      <div className="secret-row">
        <code className="secret-value" aria-labelledby={`${id}-label`} data-secret="">
          {value}
        </code>
        <CopyButton value={value} what={what} />
      </div>
      {children}
    </section>
  );
}
