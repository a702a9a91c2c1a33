import { useId, useState, type FormEvent } from 'react';
import type { FieldDetail } from '../../api/errors';
import { Field, FieldErrors, SelectField, type Option } from '../../components/ui';
import { eventGroups, type EventKind } from './events';
import { EMPTY_FILTER, HOUR_MS, RANGES, wallTimeOf, type LogFilter, type RangeKey, type ResultFilter } from './filter';

const GROUPS = eventGroups();
const RESULTS: Option<ResultFilter>[] = [
  { value: '', label: 'Any' },
  { value: 'success', label: 'Success' },
  { value: 'failure', label: 'Failure' },
];
const RANGE_OPTIONS: Option<RangeKey>[] = RANGES.map((r) => ({ value: r.key, label: r.label }));

/**
 * The audit log's filter: search text, event kinds, actor, result, time range. `errors` are the problems of the
 * filter shown (local ones and the API's) by form field: query, events, actor, from, to.
 */
export function FilterForm({ filter, errors, onSubmit }: { filter: LogFilter; errors: Map<string, FieldDetail[]>; onSubmit: (f: LogFilter) => void }) {
  const [f, setF] = useState(filter);
  const set = (patch: Partial<LogFilter>) => setF((v) => ({ ...v, ...patch }));
  const submit = (e: FormEvent) => {
    e.preventDefault();
    onSubmit(f);
  };
  const chooseRange = (range: RangeKey) => {
    if (range === 'custom' && (!f.from || !f.to)) {
      // Start from the last 24 hours, to the minute.
      const now = Date.now();
      set({ range, from: wallTimeOf(now - 24 * HOUR_MS), to: wallTimeOf(now + 60_000) });
    } else set({ range });
  };
  return (
    <form className="card logs-filter" role="search" aria-label="Audit log filter" onSubmit={submit} noValidate>
      <Field
        label="Search"
        hint={'Words match whole tokens (login), "quoted words" a phrase, log* a prefix, -word excludes; fields: event:, actor.email:, actor.id:, target.id:, result:, ip:, country:'}
        errors={errors.get('query')}
      >
        {(p) => <input {...p} type="search" name="q" value={f.query} onChange={(e) => set({ query: e.target.value })} maxLength={1000} autoComplete="off" spellCheck={false} />}
      </Field>
      <div className="logs-filter-grid">
        <Field label="Actor" hint="An actor's id (user_…, key_…) or email" errors={errors.get('actor')}>
          {(p) => <input {...p} type="text" name="actor" value={f.actor} onChange={(e) => set({ actor: e.target.value })} maxLength={254} autoComplete="off" spellCheck={false} />}
        </Field>
        <SelectField label="Result" name="result" value={f.result} options={RESULTS} onChange={(result) => set({ result })} />
        <SelectField label="Time range" name="range" value={f.range} options={RANGE_OPTIONS} onChange={chooseRange} />
        {f.range === 'custom' ? (
          <>
            <Field label="From (UTC)" errors={errors.get('from')}>
              {(p) => <input {...p} type="datetime-local" name="from" value={f.from} onChange={(e) => set({ from: e.target.value })} />}
            </Field>
            <Field label="To (UTC)" hint="Entries before this time" errors={errors.get('to')}>
              {(p) => <input {...p} type="datetime-local" name="to" value={f.to} onChange={(e) => set({ to: e.target.value })} />}
            </Field>
          </>
        ) : null}
      </div>
      <EventPicker value={f.events} onChange={(events) => set({ events })} errors={errors.get('events') ?? []} />
      <div className="actions">
        <button type="submit" className="button primary">
          Search
        </button>
        <button type="button" className="button" onClick={() => onSubmit(EMPTY_FILTER)}>
          Clear filters
        </button>
      </div>
    </form>
  );
}

/** The event kinds as checkboxes grouped by subject, folded away under a summary of the choice. */
function EventPicker({ value, onChange, errors }: { value: EventKind[]; onChange: (v: EventKind[]) => void; errors: FieldDetail[] }) {
  const id = useId();
  const toggle = (kind: EventKind, on: boolean) => onChange(on ? [...value, kind] : value.filter((k) => k !== kind));
  return (
    <details className={`logs-events${errors.length ? ' field-invalid' : ''}`} open={errors.length > 0 || undefined}>
      <summary>
        Events: {value.length === 0 ? 'all kinds' : value.length <= 3 ? value.join(', ') : `${value.length} kinds`}
      </summary>
      <fieldset aria-describedby={errors.length ? `${id}-errors` : undefined}>
        <legend>Event kinds (none checked: all)</legend>
        <div className="logs-event-groups">
          {GROUPS.map((g) => (
            <fieldset key={g.name} className="logs-event-group">
              <legend>{g.name}</legend>
              {g.kinds.map((k) => (
                <label key={k} className="logs-check">
                  <input type="checkbox" name="events" value={k} checked={value.includes(k)} onChange={(e) => toggle(k, e.target.checked)} />
                  <code>{k}</code>
                </label>
              ))}
            </fieldset>
          ))}
        </div>
        {value.length ? (
          <button type="button" className="button link" onClick={() => onChange([])}>
            Uncheck all
          </button>
        ) : null}
      </fieldset>
      <FieldErrors id={`${id}-errors`} errors={errors} />
    </details>
  );
}
