// Entries per hour by event kind and result: a Chart.js canvas (chart-draw.ts), an HTML legend, and the same
// numbers as a table for whoever cannot see the canvas.
import { useEffect, useId, useRef, useState } from 'react';
import type { SecsvcClient } from '@secsvc/client';
import { ApiError, unwrap } from '../../api/errors';
import { DataTable } from '../../components/DataTable';
import { ErrorMessage } from '../../components/ui';
import { useLoad } from '../../hooks';
import { formatInstant } from './api';
import { countsRequest, type LogFilter, type TimeWindow } from './filter';
import { countByHour, countWindow, hourLabel, tableRows, type Hourly } from './hourly';
import { colourIndexes } from './palette';

/** The bars themselves: one Chart.js chart on the canvas (Chart.js loaded on first use), made anew when the numbers change. */
function Bars({ hourly, label }: { hourly: Hourly; label: string }) {
  const canvas = useRef<HTMLCanvasElement>(null);
  const [failed, setFailed] = useState<unknown>();
  useEffect(() => {
    const el = canvas.current;
    if (!el) return;
    let live = true;
    let undo: (() => void) | undefined;
    import('./chart-draw').then(
      ({ drawHourly }) => {
        if (live) undo = drawHourly(el, hourly);
      },
      (err: unknown) => live && setFailed(err),
    );
    return () => {
      live = false;
      undo?.();
    };
  }, [hourly]);
  return (
    <div className="logs-chart-box">
      {failed ? <ErrorMessage error={failed} title="The chart could not be drawn (the table below has its numbers)" /> : null}
      <canvas ref={canvas} role="img" aria-label={label}>
        {label}
      </canvas>
    </div>
  );
}

/** The chart section of /logs: the filter's entries counted per hour by the API (POST /v1/logs/counts), drawn. */
export function HourlyChartSection({ api, filter, window }: { api: SecsvcClient; filter: LogFilter; window: TimeWindow }) {
  const headingId = useId();
  const drawn = countWindow(window);
  const body = countsRequest(filter, drawn);
  // Counted again whenever the request changes (a filter on the same custom window too).
  const load = useLoad(`chart|${JSON.stringify(body)}`, async () => {
    const res = unwrap(await api.POST('/v1/logs/counts', { body }));
    return { drawn, hourly: countByHour(res.data.counts, drawn) };
  });
  return (
    <section className="card logs-chart" aria-labelledby={headingId}>
      <h2 id={headingId}>Entries per hour</h2>
      {load.loading ? (
        <p className="muted" role="status">
          Counting entries…
        </p>
      ) : null}
      {load.error ? (
        load.error instanceof ApiError && load.error.status === 400 ? (
          <p className="muted">No chart: the API refused the filter (see the message above the entries).</p>
        ) : (
          <ErrorMessage error={load.error} title="The chart could not be drawn" />
        )
      ) : null}
      {load.data ? <ChartBody hourly={load.data.hourly} drawn={load.data.drawn} cut={load.data.drawn.from !== window.from} /> : null}
    </section>
  );
}

function ChartBody({ hourly, drawn, cut }: { hourly: Hourly; drawn: TimeWindow; cut: boolean }) {
  if (hourly.total === 0) {
    return (
      <p className="muted" role="status">
        No entries in this range.
      </p>
    );
  }
  const colours = colourIndexes(hourly.series);
  const rows = tableRows(hourly);
  const span = `${formatInstant(drawn.from)} to ${formatInstant(drawn.to)}`;
  const label = `Bar chart of ${hourly.total} entries per hour from ${span}, by event kind (colour) and result (success left, failure right and striped). The same numbers are in the table below.`;
  return (
    <figure className="logs-figure" data-total={hourly.total}>
      <figcaption>
        {hourly.total.toLocaleString('en-US')} {hourly.total === 1 ? 'entry' : 'entries'} counted per hour (UTC), {span}. Success on the left of each
        hour, failure on the right, striped.
        {cut ? ' The range is longer than 31 days: its last 744 hours are drawn.' : ''}
      </figcaption>
      <ul className="logs-legend" aria-label="Series">
        {hourly.series.map((s, i) => (
          <li key={`${s.kind}|${s.result}`}>
            <span className={`logs-swatch c${colours[i]}${s.result === 'failure' ? ' failure' : ''}`} aria-hidden="true" />
            <code>{s.kind}</code> {s.result} <span className="muted">({s.total})</span>
          </li>
        ))}
      </ul>
      <Bars hourly={hourly} label={label} />
      <details className="logs-chart-table">
        <summary>The numbers as a table</summary>
        <DataTable
          label="Entries per hour by event kind and result"
          rows={rows}
          rowKey={(r) => `${r.hour}|${r.kind}`}
          columns={[
            { label: 'Hour (UTC)', cell: (r) => hourLabel(r.hour) },
            { label: 'Event', cell: (r) => <code>{r.kind}</code> },
            { label: 'Success', cell: (r) => r.success },
            { label: 'Failure', cell: (r) => r.failure },
          ]}
        />
      </details>
    </figure>
  );
}
