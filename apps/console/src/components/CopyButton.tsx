// A button that copies a value to the clipboard (navigator.clipboard: the console runs in a secure context,
// https or loopback) and says whether it worked in a live region, for screen readers too.
import { useEffect, useState } from 'react';

type Outcome = 'idle' | 'copied' | 'failed';

/** "Copy" (its accessible name also says what: "Copy the secret"); the value itself stays on the page to select by hand. */
export function CopyButton({ value, what }: { value: string; what: string }) {
  const [outcome, setOutcome] = useState<Outcome>('idle');
  useEffect(() => {
    if (outcome !== 'copied') return;
    const t = setTimeout(() => setOutcome('idle'), 4000);
    return () => clearTimeout(t);
  }, [outcome]);
  const copy = () => {
    if (!navigator.clipboard) return setOutcome('failed');
    navigator.clipboard.writeText(value).then(
      () => setOutcome('copied'),
      () => setOutcome('failed'),
    );
  };
  return (
    <span className="copy">
      <button type="button" className="button copy-button" onClick={copy}>
        Copy<span className="visually-hidden"> {what}</span>
      </button>
      <span className="copy-outcome" role="status">
        {outcome === 'copied' ? 'Copied' : outcome === 'failed' ? 'Could not copy: select the text and copy it' : ''}
      </span>
    </span>
  );
}

/** A value to copy (a URL, an id): shown in full, wrapping on narrow screens, with its copy button. */
export function CopyValue({ value, what }: { value: string; what: string }) {
  return (
    <span className="copy-value">
      <code>{value}</code>
      <CopyButton value={value} what={what} />
    </span>
  );
}
