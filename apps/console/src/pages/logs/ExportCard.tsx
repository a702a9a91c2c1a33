import { useEffect, useId, useState, useSyncExternalStore } from 'react';
import type { SecsvcClient } from '@secsvc/client';
import { unwrap } from '../../api/errors';
import { Facts } from '../../components/Facts';
import { Crumbs, ErrorMessage, Link } from '../../components/ui';
import { formatInstant } from './api';
import { downloadHref, fileName, formatBytes, POLL_MS, progressOf, startedExports, type LogExport } from './export-state';

/** An export's current state, asked again every POLL_MS while it is processing. */
function usePolledExport(api: SecsvcClient, exportId: string, initial?: LogExport) {
  const [state, setState] = useState<{ data?: LogExport; error?: unknown }>({ data: initial });
  const [round, setRound] = useState(0);
  useEffect(() => {
    let live = true;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const poll = () => {
      api.GET('/v1/logs/export/{id}', { params: { path: { id: exportId } } }).then(
        (res) => {
          if (!live) return;
          try {
            const data = unwrap(res).data;
            setState({ data });
            if (data.status === 'processing') timer = setTimeout(poll, POLL_MS);
          } catch (error) {
            setState((s) => ({ ...s, error }));
          }
        },
        (error: unknown) => live && setState((s) => ({ ...s, error })),
      );
    };
    timer = setTimeout(poll, initial ? POLL_MS : 0);
    return () => {
      live = false;
      clearTimeout(timer);
    };
  }, [api, exportId, initial, round]);
  return {
    ...state,
    retry: () => {
      setState((s) => ({ data: s.data }));
      setRound((r) => r + 1);
    },
  };
}

/** One export: its progress (a progress bar, polled live), then its file's facts and the download link. */
export function ExportCard({ api, exportId, initial, headingLevel = 3 }: { api: SecsvcClient; exportId: string; initial?: LogExport; headingLevel?: 2 | 3 }) {
  const { data, error, retry } = usePolledExport(api, exportId, initial);
  const progressId = useId();
  const headingId = useId();
  const started = startedExports.get(exportId);
  const Heading = headingLevel === 2 ? 'h2' : 'h3';
  const progress = data ? progressOf(data) : undefined;
  const href = downloadHref(data?.downloadUrl);
  return (
    <section className="logs-export" aria-labelledby={headingId}>
      <Heading id={headingId}>
        Export <code>{exportId}</code>
      </Heading>
      {started ? <p className="muted logs-export-what">{started.description}</p> : null}
      {error ? (
        <>
          <ErrorMessage error={error} title="The export's state could not be read" />
          <button type="button" className="button" onClick={retry}>
            Try again
          </button>
        </>
      ) : null}
      {!data && !error ? (
        <p className="muted" role="status">
          Loading…
        </p>
      ) : null}
      {data && progress ? (
        <>
          <div className="logs-progress">
            <label htmlFor={progressId}>
              {data.format.toUpperCase()} file, {data.status}
            </label>
            <progress id={progressId} max={100} value={progress.value} aria-valuetext={`${progress.value}%: ${progress.text}`}>
              {progress.value}%
            </progress>
            <p role="status" className={`logs-progress-text logs-status-${data.status}`}>
              {progress.value}% · {progress.text}
            </p>
          </div>
          <Facts
            items={[
              ['Created', formatInstant(data.createdAt)],
              ['Estimated entries', data.estimatedRecords.toLocaleString('en-US')],
              data.completedAt ? [data.status === 'failed' ? 'Failed' : 'Completed', formatInstant(data.completedAt)] : null,
              data.totalRecords !== undefined ? ['Entries in the file', data.totalRecords.toLocaleString('en-US')] : null,
              data.fileSizeBytes !== undefined ? ['Size', formatBytes(data.fileSizeBytes)] : null,
              data.expiresAt ? [data.status === 'expired' ? 'Expired' : 'Link expires', formatInstant(data.expiresAt)] : null,
              data.sha256 ? ['SHA-256', <code>{data.sha256}</code>, 'logs-sha'] : null,
            ]}
          />
          {data.status === 'failed' && data.error ? <ErrorMessage error={new Error(`${data.error.message} (${data.error.code})`)} title="The export failed" /> : null}
          {data.status === 'completed' && href ? (
            <p className="actions">
              <a className="button primary" href={href} download={fileName(data)}>
                Download {fileName(data)}
              </a>
            </p>
          ) : null}
          {data.status === 'completed' && !href ? <p className="muted">The API gave no usable download link.</p> : null}
        </>
      ) : null}
    </section>
  );
}

/** /logs/exports: the exports started in this tab (the API keeps no list of them), each with its state. */
export function ExportsPage({ api }: { api: SecsvcClient }) {
  const list = useSyncExternalStore(startedExports.subscribe, startedExports.all);
  return (
    <>
      <Crumbs trail={[['/logs', 'Audit log']]}>Exports</Crumbs>
      <h1>Exports</h1>
      <p className="muted">
        The exports started in this browser tab since it was opened, newest first. An export is made from the audit log’s filter: choose one there and
        use <strong>Export these entries</strong>. Download links last an hour.
      </p>
      {list.length === 0 ? (
        <p role="status">
          No export started in this tab yet. <Link to="/logs">Go to the audit log</Link>.
        </p>
      ) : (
        list.map((e) => (
          <div key={e.exportId} className="card">
            <ExportCard api={api} exportId={e.exportId} headingLevel={2} />
            <p>
              <Link to={`/logs/exports/${encodeURIComponent(e.exportId)}`}>Open this export alone</Link>
            </p>
          </div>
        ))
      )}
    </>
  );
}

/** /logs/exports/<id>: one export (any of this environment, by its id). */
export function ExportPage({ api, id }: { api: SecsvcClient; id: string }) {
  return (
    <>
      <Crumbs
        trail={[
          ['/logs', 'Audit log'],
          ['/logs/exports', 'Exports'],
        ]}
      >
        {id}
      </Crumbs>
      <h1>Export</h1>
      <div className="card">
        <ExportCard api={api} exportId={id} headingLevel={2} />
      </div>
    </>
  );
}
