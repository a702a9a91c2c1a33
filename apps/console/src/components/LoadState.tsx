// What every page that loads something shows around it: the error (with the request id), "Loading…" while it
// loads, a line when a list is empty, then the thing itself.
import type { ReactNode } from 'react';
import type { FieldDetail } from '../api/errors';
import { ErrorMessage } from './ui';

interface LoadStateProps<T> {
  /** A useLoad() answer (or one whose data the page replaced with a newer copy). */
  load: { loading: boolean; error?: unknown; data?: T };
  /** The error box's title: "The user could not be loaded". */
  failedTitle: string;
  /** The error's details no field shows. */
  extra?: FieldDetail[];
  loadingText?: string;
  /** An empty list: `empty` is said instead of `children`. */
  isEmpty?: (data: T) => boolean;
  empty?: ReactNode;
  children: (data: T) => ReactNode;
}

export function LoadState<T>({ load, failedTitle, extra, loadingText = 'Loading…', isEmpty, empty, children }: LoadStateProps<T>) {
  const { data } = load;
  return (
    <>
      {load.error ? <ErrorMessage error={load.error} extra={extra} title={failedTitle} /> : null}
      {load.loading && data === undefined ? (
        <p className="muted" role="status">
          {loadingText}
        </p>
      ) : null}
      {data === undefined ? null : isEmpty?.(data) ? (
        <p className="muted" role="status">
          {empty}
        </p>
      ) : (
        children(data)
      )}
    </>
  );
}

/** A page of a list (`{data: [...]}`): its error, "Loading…", `empty` when it has no rows, else `children(rows)`. */
export function ListState<T>({ page, children, ...props }: Omit<LoadStateProps<{ data: T[] }>, 'load' | 'isEmpty' | 'children'> & { page: LoadStateProps<{ data: T[] }>['load']; children: (rows: T[]) => ReactNode }) {
  return (
    <LoadState load={page} isEmpty={(p) => p.data.length === 0} {...props}>
      {(p) => children(p.data)}
    </LoadState>
  );
}
