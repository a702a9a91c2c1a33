import type { Schemas, SecsvcClient } from '@secsvc/client';
import { unwrap } from '../../api/errors';
import { Fact } from '../../components/Facts';
import { LoadState } from '../../components/LoadState';
import { Crumbs, Link } from '../../components/ui';
import { formatJson } from '../../forms';
import { useLoad } from '../../hooks';
import { formatInstant } from './api';
import { EMPTY_FILTER, filterQueryString, parseFilter } from './filter';

/** An id, linked to its page when the console has one (users). */
function IdOf({ id }: { id: string }) {
  return id.startsWith('user_') ? (
    <Link to={`/users/${encodeURIComponent(id)}`}>
      <code>{id}</code>
    </Link>
  ) : (
    <code>{id}</code>
  );
}

const valueText = (v: unknown) => (typeof v === 'string' ? v : JSON.stringify(v));

/** /logs/<id>: one entry's full form (GET /v1/logs/{id}): trace id, metadata, the location's region and coordinates. */
export function LogEntryPage({ api, id, back }: { api: SecsvcClient; id: string; back: string }) {
  const entry = useLoad(`log:${id}`, async () => unwrap(await api.GET('/v1/logs/{id}', { params: { path: { id } } })).data);
  // Back to the list as it was (only the filter's own parameters are carried over).
  const backQs = filterQueryString(parseFilter(new URLSearchParams(back)));
  const listLink = backQs ? `/logs?${backQs}` : '/logs';
  return (
    <>
      <Crumbs trail={[[listLink, 'Audit log']]}>{id}</Crumbs>
      <LoadState load={entry} failedTitle="The entry could not be loaded">
        {(e) => <Entry entry={e} />}
      </LoadState>
    </>
  );
}

function Entry({ entry: e }: { entry: Schemas['LogEntry'] }) {
  const metadata = Object.entries(e.metadata ?? {});
  return (
    <>
      <h1>
        <code>{e.event}</code> <span className={`logs-result logs-result-${e.result}`}>{e.result}</span>
      </h1>
      <dl className="facts">
        <Fact term="Id">
          <code>{e.id}</code>
        </Fact>
        <Fact term="Time">{formatInstant(e.timestamp, true)}</Fact>
        <Fact term="Result">{e.result}</Fact>
        <Fact term="Trace id">
          <code>{e.traceId || '—'}</code>
        </Fact>
      </dl>
      <section className="card" aria-labelledby="entry-actor">
        <h2 id="entry-actor">Actor</h2>
        <dl className="facts">
          <Fact term="Type">{e.actor.type}</Fact>
          {e.actor.id ? (
            <Fact term="Id">
              <IdOf id={e.actor.id} />
            </Fact>
          ) : null}
          {e.actor.email ? <Fact term="Email">{e.actor.email}</Fact> : null}
          {e.actor.name ? <Fact term="Name">{e.actor.name}</Fact> : null}
        </dl>
        {e.actor.id || e.actor.email ? (
          <p>
            <Link to={`/logs?${filterQueryString({ ...EMPTY_FILTER, actor: e.actor.id ?? e.actor.email ?? '', range: '30d' })}`}>This actor’s entries of the last 30 days</Link>
          </p>
        ) : null}
      </section>
      <section className="card" aria-labelledby="entry-target">
        <h2 id="entry-target">Target</h2>
        {e.target ? (
          <dl className="facts">
            <Fact term="Type">{e.target.type}</Fact>
            <Fact term="Id">
              <IdOf id={e.target.id} />
            </Fact>
          </dl>
        ) : (
          <p className="muted">None.</p>
        )}
      </section>
      <section className="card" aria-labelledby="entry-context">
        <h2 id="entry-context">Context</h2>
        <dl className="facts">
          <Fact term="IP address">
            <code>{e.context.ip}</code>
          </Fact>
          <Fact term="User agent">{e.context.userAgent || '—'}</Fact>
          {e.context.location ? (
            <>
              <Fact term="City">{e.context.location.city}</Fact>
              <Fact term="Region">{e.context.location.region}</Fact>
              <Fact term="Country">{e.context.location.country}</Fact>
              <Fact term="Coordinates">
                {e.context.location.coordinates.lat}, {e.context.location.coordinates.lng}
              </Fact>
            </>
          ) : (
            <Fact term="Location">unknown (a private, loopback or unlisted address)</Fact>
          )}
        </dl>
      </section>
      <section className="card" aria-labelledby="entry-metadata">
        <h2 id="entry-metadata">Metadata</h2>
        {metadata.length ? (
          <dl className="facts">
            {metadata.map(([k, v]) => (
              <Fact key={k} term={k}>
                <code>{valueText(v)}</code>
              </Fact>
            ))}
          </dl>
        ) : (
          <p className="muted">None.</p>
        )}
      </section>
      <details className="card">
        <summary>The entry as JSON</summary>
        <pre className="logs-json">
          <code>{formatJson(e)}</code>
        </pre>
      </details>
    </>
  );
}
