import { CopyValue } from '../../components/CopyButton';
import { formatTime } from '../../forms';
import type { OAuthClient } from './clients';

export function ClientFacts({ client: c }: { client: OAuthClient }) {
  return (
    <dl className="facts">
      <div className="fact-wide">
        <dt>Client id</dt>
        <dd>
          <CopyValue value={c.clientId} what="the client id" />
        </dd>
      </div>
      <div>
        <dt>Type</dt>
        <dd>{c.type}</dd>
      </div>
      <div>
        <dt>Environment</dt>
        <dd>{c.environment}</dd>
      </div>
      <div>
        <dt>First party</dt>
        <dd>{c.firstParty ? 'yes (no consent page)' : 'no'}</dd>
      </div>
      <div>
        <dt>Created</dt>
        <dd>{formatTime(c.createdAt)}</dd>
      </div>
      <div>
        <dt>Updated</dt>
        <dd>{formatTime(c.updatedAt)}</dd>
      </div>
    </dl>
  );
}
