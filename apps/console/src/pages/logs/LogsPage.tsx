import { useId, useMemo, useState, type FormEvent } from 'react';
import type { SecsvcClient } from '@secsvc/client';
import { detailsByField, splitDetails, unwrap } from '../../api/errors';
import { Pager, useCursorPages } from '../../components/CursorPager';
import { DataTable } from '../../components/DataTable';
import { LoadState } from '../../components/LoadState';
import { ErrorMessage, Link, PageHead, SelectField } from '../../components/ui';
import { useAction } from '../../hooks';
import { navigate } from '../../router';
import { formatInstant, loadPage, type Entry, type EntryPage } from './api';
import { ExportCard } from './ExportCard';
import { startedExports, type LogExport } from './export-state';
import { FilterForm } from './FilterForm';
import { describeFilter, exportRequest, filterProblems, filterQueryString, parseFilter, resolveWindow, usesSearch, type ExportFormat, type LogFilter, type TimeWindow } from './filter';
import { Highlighted } from './Highlighted';
import { HourlyChartSection } from './HourlyChart';

const PAGE_SIZE = 20;
/** The filter form's fields, which show the problems (local and the API's) that name them. */
const FIELDS = ['query', 'events', 'actor', 'from', 'to'];

/** /logs: the filter, the chart of entries per hour, the entries a page at a time, and an export of them. */
export function LogsPage({ api, search }: { api: SecsvcClient; search: URLSearchParams }) {
  const filter = parseFilter(search);
  const qs = filterQueryString(filter);
  // A new filter starts afresh (first page, its own window): the page's state belongs to one filter.
  return <LogsView key={qs} api={api} filter={filter} qs={qs} />;
}

function LogsView({ api, filter, qs }: { api: SecsvcClient; filter: LogFilter; qs: string }) {
  // The end of the relative ranges ("last 24 hours"): when the filter was applied, again on Refresh, which starts
  // the page afresh (first page, chart and export panel of the new window).
  const [now, setNow] = useState(() => Date.now());
  return <LogsBody key={now} api={api} filter={filter} qs={qs} now={now} onRefresh={() => setNow(Date.now())} />;
}

function LogsBody({ api, filter, qs, now, onRefresh }: { api: SecsvcClient; filter: LogFilter; qs: string; now: number; onRefresh: () => void }) {
  const window = useMemo(() => resolveWindow(filter, now), [filter, now]);
  const problems = filterProblems(filter);
  const valid = window !== undefined && problems.length === 0;
  const { page, pages } = useCursorPages(qs, async (cursor): Promise<EntryPage> => (valid ? loadPage(api, filter, window, PAGE_SIZE, cursor) : { entries: [], pagination: { hasMore: false } }));
  const fromApi = splitDetails(page.error, FIELDS);
  const errors = detailsByField(problems);
  for (const [field, list] of fromApi.byField) errors.set(field, [...(errors.get(field) ?? []), ...list]);
  const apply = (f: LogFilter) => {
    const next = filterQueryString(f);
    if (next === qs) onRefresh();
    else navigate(next ? `/logs?${next}` : '/logs');
  };
  const searching = usesSearch(filter);
  return (
    <>
      <PageHead title="Audit log">
        <Link to="/logs/exports" className="button">
          Exports
        </Link>
      </PageHead>
      <FilterForm filter={filter} errors={errors} onSubmit={apply} />
      {problems.length ? <ErrorMessage error={new Error('The filter needs a correction (see the fields above).')} /> : null}
      {window && valid ? (
        <>
          <p className="logs-window">
            <span>
              {formatInstant(window.from)} to {formatInstant(window.to)}
            </span>
            <button type="button" className="button" onClick={onRefresh} disabled={page.loading}>
              Refresh
            </button>
          </p>
          <HourlyChartSection api={api} filter={filter} window={window} />
          <section className="logs-entries" aria-labelledby="logs-entries-heading">
            <div className="section-head">
              <h2 id="logs-entries-heading">Entries</h2>
              {page.data?.totalHits !== undefined ? (
                <p className="muted" role="status">
                  {page.data.totalHits.toLocaleString('en-US')} {page.data.totalHits === 1 ? 'match' : 'matches'} ({page.data.searchTimeMs} ms)
                </p>
              ) : null}
            </div>
            <LoadState load={page} failedTitle={searching ? 'The search could not run' : 'The entries could not be listed'} extra={fromApi.rest} loadingText="Loading entries…">
              {(data) => (data.entries.length === 0 ? <p role="status">No entries match in this range.</p> : <EntryTable entries={data.entries} back={qs} searching={searching} />)}
            </LoadState>
            <Pager label="Pages of entries" pages={pages} />
          </section>
          <ExportPanel api={api} filter={filter} window={window} />
        </>
      ) : null}
    </>
  );
}

function EntryTable({ entries, back, searching }: { entries: Entry[]; back: string; searching: boolean }) {
  const link = (id: string) => `/logs/${encodeURIComponent(id)}${back ? `?back=${encodeURIComponent(back)}` : ''}`;
  const hl = (e: Entry) => e.highlights ?? {};
  return (
    <DataTable
      label={searching ? 'Entries matching the search, newest first' : 'Entries, newest first'}
      className="list logs-table"
      rows={entries}
      rowKey={(e) => e.id}
      columns={[
        {
          label: 'Time',
          cell: (e) => (
            <Link to={link(e.id)} aria-label={`Entry ${e.id} at ${formatInstant(e.timestamp)}`}>
              {formatInstant(e.timestamp)}
            </Link>
          ),
        },
        {
          label: 'Event',
          cell: (e) => (
            <code>
              <Highlighted value={e.event} html={hl(e).event} />
            </code>
          ),
        },
        {
          label: 'Actor',
          cell: (e) => (
            <>
              {e.actor.email ? (
                <span className="logs-line">
                  <Highlighted value={e.actor.email} html={hl(e)['actor.email']} />
                </span>
              ) : null}
              {e.actor.name ? <span className="logs-line">{e.actor.name}</span> : null}
              {e.actor.id ? (
                <code className="logs-line logs-small">
                  <Highlighted value={e.actor.id} html={hl(e)['actor.id']} />
                </code>
              ) : null}
              <span className="logs-line muted logs-small">{e.actor.type}</span>
            </>
          ),
        },
        {
          label: 'Target',
          cell: (e) =>
            e.target ? (
              <>
                <span className="logs-line muted logs-small">{e.target.type}</span>
                <code className="logs-line logs-small">
                  <Highlighted value={e.target.id} html={hl(e)['target.id']} />
                </code>
              </>
            ) : (
              <span className="muted">none</span>
            ),
        },
        {
          label: 'Result',
          cell: (e) => (
            <span className={`logs-result logs-result-${e.result}`}>
              <Highlighted value={e.result} html={hl(e).result} />
            </span>
          ),
        },
        {
          label: 'Origin',
          cell: (e) => (
            <>
              <code className="logs-line">
                <Highlighted value={e.context.ip} html={hl(e).ip} />
              </code>
              {e.context.location ? (
                <span className="logs-line">
                  <Highlighted value={e.context.location.city} html={hl(e).city} />, <Highlighted value={e.context.location.country} html={hl(e).country} />
                </span>
              ) : null}
              <span className="logs-line muted logs-small logs-ua">
                <Highlighted value={e.context.userAgent} html={hl(e).userAgent} />
              </span>
            </>
          ),
        },
      ]}
    />
  );
}

const FORMATS: { value: ExportFormat; label: string }[] = [
  { value: 'csv', label: 'CSV (spreadsheets)' },
  { value: 'json', label: 'JSON (one array)' },
  { value: 'ndjson', label: 'NDJSON (one entry a line)' },
];

/** Exports the entries of the filter (same window, kinds, search, actor and result) to a file. */
function ExportPanel({ api, filter, window }: { api: SecsvcClient; filter: LogFilter; window: TimeWindow }) {
  const headingId = useId();
  const [format, setFormat] = useState<ExportFormat>('csv');
  const action = useAction();
  const [created, setCreated] = useState<LogExport>();
  const description = describeFilter(filter, window);
  const submit = (e: FormEvent) => {
    e.preventDefault();
    void action.run(async () => {
      const data = unwrap(await api.POST('/v1/logs/export', { body: exportRequest(filter, window, format) })).data;
      startedExports.add({ exportId: data.exportId, format: data.format, description, createdAt: data.createdAt });
      setCreated(data);
    });
  };
  return (
    <section className="card logs-export-panel" aria-labelledby={headingId}>
      <h2 id={headingId}>Export these entries</h2>
      <p className="muted">
        A file of every entry of this filter: <span className="logs-export-what">{description}</span>. It is made in the background; its link lasts an hour.
      </p>
      {action.error ? <ErrorMessage error={action.error} extra={splitDetails(action.error, []).rest} title="The export could not be started" /> : null}
      <form className="logs-export-form" onSubmit={submit}>
        <SelectField label="Format" name="format" value={format} options={FORMATS} onChange={setFormat} />
        <button type="submit" className="button primary" disabled={action.busy}>
          {action.busy ? 'Starting the export…' : 'Export these entries'}
        </button>
      </form>
      {created ? (
        <>
          <ExportCard key={created.exportId} api={api} exportId={created.exportId} initial={created} />
          <p>
            <Link to="/logs/exports">All exports of this tab</Link>
          </p>
        </>
      ) : null}
    </section>
  );
}
