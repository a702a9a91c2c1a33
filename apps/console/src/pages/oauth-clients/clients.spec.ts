import { clientChanges, formatRedirectUris, isConsoleClient, orderScopes, parseRedirectUris, scopeChoices, type OAuthClient } from './clients';

const client: OAuthClient = {
  clientId: 'cli_1',
  name: 'Billing',
  type: 'confidential',
  environment: 'live',
  redirectUris: ['https://billing.example.com/callback'],
  scopes: ['openid', 'read:users'],
  firstParty: false,
  createdAt: '2030-01-01T00:00:00Z',
  updatedAt: '2030-01-01T00:00:00Z',
};

describe('OAuth client pages: pure parts', () => {
  it('reads redirect URIs one a line, ignoring blank lines and spaces', () => {
    expect(parseRedirectUris('  https://a.example/cb\n\n http://127.0.0.1:8080/cb?x=1  \n')).toEqual({ uris: ['https://a.example/cb', 'http://127.0.0.1:8080/cb?x=1'], problems: [] });
    expect(parseRedirectUris('')).toEqual({ uris: [], problems: [] });
    expect(formatRedirectUris(['https://a.example/cb', 'https://b.example/cb'])).toBe('https://a.example/cb\nhttps://b.example/cb');
  });

  it('names the URIs that are not absolute http(s) URLs or come twice, as the API would (redirectUris[i])', () => {
    expect(parseRedirectUris('https://a.example/cb\n/relative\nftp://a.example/x\nhttps://a.example/cb').problems).toEqual([
      { field: 'redirectUris[1]', message: 'must be an absolute http(s) URL' },
      { field: 'redirectUris[2]', message: 'must be an absolute http(s) URL' },
      { field: 'redirectUris[3]', message: 'is listed twice' },
    ]);
    // The API's own rules (https unless loopback, canonical form) are left to it.
    expect(parseRedirectUris('http://app.example.com/cb').problems).toEqual([]);
    const many = Array.from({ length: 11 }, (_, i) => `https://a.example/${i}`).join('\n');
    expect(parseRedirectUris(many).problems).toEqual([{ field: 'redirectUris', message: 'at most 10 entries' }]);
  });

  it("tells the console's own clients", () => {
    expect(isConsoleClient({ firstParty: true, redirectUris: ['http://127.0.0.1:8080/console/callback'] })).toBe(true);
    expect(isConsoleClient({ firstParty: false, redirectUris: ['http://127.0.0.1:8080/console/callback'] })).toBe(false);
    expect(isConsoleClient({ firstParty: true, redirectUris: ['https://app.example/callback', 'not a url'] })).toBe(false);
  });

  it('offers the known scopes and keeps the unknown ones a client holds, in a stable order', () => {
    const values = scopeChoices(['openid', 'admin:everything']).map((c) => c.value);
    expect(values.slice(0, 4)).toEqual(['openid', 'profile', 'email', 'offline_access']);
    expect(values).toContain('write:sso');
    expect(values.at(-1)).toBe('admin:everything');
    expect(orderScopes(['write:users', 'openid', 'read:users'])).toEqual(['openid', 'read:users', 'write:users']);
  });

  it('sends only what an edit changed, lists whole', () => {
    const same = { name: 'Billing', redirectUris: ['https://billing.example.com/callback'], scopes: ['read:users', 'openid'], firstParty: false };
    expect(clientChanges(client, same)).toEqual({});
    expect(clientChanges(client, { ...same, name: 'Billing 2', redirectUris: ['https://billing.example.com/callback', 'https://b.example/cb'] })).toEqual({
      name: 'Billing 2',
      redirectUris: ['https://billing.example.com/callback', 'https://b.example/cb'],
    });
    expect(clientChanges(client, { ...same, scopes: ['email', 'openid'], firstParty: true })).toEqual({ scopes: ['openid', 'email'], firstParty: true });
  });
});
