import { Fragment } from 'react';
import { fieldSegments } from './highlight';

/** A field's value as text, its search matches in <mark> (from the API's highlight, read by fieldSegments). */
export function Highlighted({ value, html }: { value: string; html?: string | undefined }) {
  return (
    <>
      {fieldSegments(value, html).map((s, i) => (s.mark ? <mark key={i}>{s.text}</mark> : <Fragment key={i}>{s.text}</Fragment>))}
    </>
  );
}
