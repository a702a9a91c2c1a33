import { CopyValue } from '../../components/CopyButton';
import { Facts } from '../../components/Facts';
import { formatTime } from '../../forms';
import type { OAuthClient } from './clients';

export function ClientFacts({ client: c }: { client: OAuthClient }) {
  return (
    <Facts
      items={[
        ['Client id', <CopyValue value={c.clientId} what="the client id" />, 'fact-wide'],
        ['Type', c.type],
        ['Environment', c.environment],
        ['First party', c.firstParty ? 'yes (no consent page)' : 'no'],
        ['Created', formatTime(c.createdAt)],
        ['Updated', formatTime(c.updatedAt)],
      ]}
    />
  );
}
