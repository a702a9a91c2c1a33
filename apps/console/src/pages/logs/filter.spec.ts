import { EVENT_KINDS, eventGroups } from './events';
import { EMPTY_FILTER, countsRequest, describeFilter, exportRequest, filterProblems, filterQueryString, pageRequest, parseFilter, resolveWindow, searchText, usesSearch, utcFromWallTime, type LogFilter } from './filter';

const NOW = Date.parse('2026-03-10T12:34:56.789Z');
const f = (patch: Partial<LogFilter>): LogFilter => ({ ...EMPTY_FILTER, ...patch });
const W = { from: '2026-03-09T12:34:56.789Z', to: '2026-03-10T12:34:56.789Z' };

describe('the filter in the URL', () => {
  it('reads back what it writes, in a canonical order, leaving defaults out', () => {
    const filter = f({ query: 'login', events: ['user.login', 'user.created'], actor: 'user_1', result: 'failure', range: 'custom', from: '2026-03-01T00:00', to: '2026-03-02T00:00' });
    const qs = filterQueryString(filter);
    expect(qs).toBe('q=login&events=user.created%2Cuser.login&actor=user_1&result=failure&range=custom&from=2026-03-01T00%3A00&to=2026-03-02T00%3A00');
    expect(parseFilter(new URLSearchParams(qs))).toEqual({ ...filter, events: ['user.created', 'user.login'] });
    expect(filterQueryString(EMPTY_FILTER)).toBe('');
    expect(parseFilter(new URLSearchParams(''))).toEqual(EMPTY_FILTER);
  });

  it('drops what it does not know: unknown kinds, results and ranges, and custom bounds of a preset range', () => {
    const parsed = parseFilter(new URLSearchParams('events=user.login,nope,<x>&result=maybe&range=1y&from=2026-01-01T00:00'));
    expect(parsed).toEqual(f({ events: ['user.login'] }));
    expect(parseFilter(new URLSearchParams('range=7d&from=2026-01-01T00:00')).from).toBe('');
  });
});

describe('the time window', () => {
  it('ends now for the relative ranges', () => {
    expect(resolveWindow(f({ range: '1h' }), NOW)).toEqual({ from: '2026-03-10T11:34:56.789Z', to: '2026-03-10T12:34:56.789Z' });
    expect(resolveWindow(f({}), NOW)).toEqual(W);
    expect(resolveWindow(f({ range: '30d' }), NOW)!.from).toBe('2026-02-08T12:34:56.789Z');
  });

  it('reads custom bounds as UTC, and refuses missing, malformed or reversed ones', () => {
    expect(resolveWindow(f({ range: 'custom', from: '2026-03-01T08:00', to: '2026-03-01T09:30:15' }), NOW)).toEqual({ from: '2026-03-01T08:00:00.000Z', to: '2026-03-01T09:30:15.000Z' });
    expect(resolveWindow(f({ range: 'custom', from: '2026-03-01T08:00', to: '' }), NOW)).toBeUndefined();
    expect(resolveWindow(f({ range: 'custom', from: '2026-03-01T09:00', to: '2026-03-01T08:00' }), NOW)).toBeUndefined();
    expect(utcFromWallTime('2026-03-01 08:00')).toBeUndefined();
    expect(utcFromWallTime('2026-02-30T08:00')).toBeUndefined();
    expect(utcFromWallTime('2026-03-01T08:00+02:00')).toBeUndefined();
    expect(utcFromWallTime('2026-03-01T23:59:60')).toBeUndefined();
    expect(utcFromWallTime('2026-03-01T23:59:59.5')).toBe('2026-03-01T23:59:59.500Z');
  });
});

describe('problems found before asking the API', () => {
  it('names the field at fault', () => {
    expect(filterProblems(f({}))).toEqual([]);
    expect(filterProblems(f({ actor: 'a b' })).map((p) => p.field)).toEqual(['actor']);
    expect(filterProblems(f({ actor: 'x"y' })).map((p) => p.field)).toEqual(['actor']);
    expect(filterProblems(f({ range: 'custom', from: 'x', to: '' })).map((p) => p.field)).toEqual(['from', 'to']);
    expect(filterProblems(f({ range: 'custom', from: '2026-03-01T09:00', to: '2026-03-01T09:00' }))).toEqual([{ field: 'to', message: 'must be after from' }]);
  });

  it('several event kinds are fine for the list, not with search text (the language has no OR)', () => {
    expect(filterProblems(f({ events: ['user.login', 'user.logout'] }))).toEqual([]);
    expect(filterProblems(f({ query: 'alice', events: ['user.login', 'user.logout'] })).map((p) => p.field)).toEqual(['events']);
    expect(filterProblems(f({ actor: 'a@example.com', events: ['user.login', 'user.logout'] })).map((p) => p.field)).toEqual(['events']);
    expect(filterProblems(f({ query: 'alice', events: ['user.login'] }))).toEqual([]);
  });
});

describe('the requests', () => {
  it('lists with GET /logs filters when there is no search text', () => {
    const filter = f({ events: ['user.login', 'auth.failed'], actor: ' user_01 ', result: 'failure' });
    expect(usesSearch(filter)).toBe(false);
    expect(pageRequest(filter, W, 20)).toEqual({
      kind: 'list',
      query: { limit: 20, from: W.from, to: W.to, events: 'user.login,auth.failed', actorId: 'user_01', result: 'failure' },
    });
    expect(pageRequest(f({}), W, 100, 'cur_2')).toEqual({ kind: 'list', query: { limit: 100, from: W.from, to: W.to, cursor: 'cur_2' } });
  });

  it('searches with the filters as clauses of the search language', () => {
    const filter = f({ query: ' alice  login ', events: ['user.login'], actor: 'user_01', result: 'success' });
    expect(pageRequest(filter, W, 20, 'cur_1')).toEqual({
      kind: 'search',
      body: { query: 'alice  login actor.id:"user_01" result:success event:"user.login"', from: W.from, to: W.to, limit: 20, cursor: 'cur_1' },
    });
    // An email is not an actor id: the list cannot filter by it, the search can (the whole field, any case).
    const byEmail = f({ actor: 'Ada@Example.com' });
    expect(usesSearch(byEmail)).toBe(true);
    expect(pageRequest(byEmail, W, 20)).toEqual({ kind: 'search', body: { query: 'actor.email:"Ada@Example.com"', from: W.from, to: W.to, limit: 20 } });
  });

  it('an event clause finds that kind only: no kind has another one’s tokens in a row', () => {
    const tokens = (k: string) => k.split(/[^a-z0-9]+/);
    for (const kind of EVENT_KINDS) {
      const t = tokens(kind).join(' ');
      const others = EVENT_KINDS.filter((k) => k !== kind && ` ${tokens(k).join(' ')} `.includes(` ${t} `));
      expect([kind, others]).toEqual([kind, []]);
    }
    expect(searchText(f({ events: ['user.password_reset.failed'] }), true)).toBe('event:"user.password_reset.failed"');
    expect(searchText(f({ events: ['user.password_reset.failed'] }), false)).toBe('');
  });

  it('exports the same entries: the window, the kinds as events, the rest as a query', () => {
    expect(exportRequest(f({}), W, 'csv')).toEqual({ from: W.from, to: W.to, format: 'csv' });
    expect(exportRequest(f({ query: 'login', events: ['user.login', 'user.logout'], actor: 'a@b.io', result: 'failure' }), W, 'ndjson')).toEqual({
      from: W.from,
      to: W.to,
      format: 'ndjson',
      events: ['user.login', 'user.logout'],
      query: 'login actor.email:"a@b.io" result:failure',
    });
    expect(exportRequest(f({ actor: 'user_9', result: 'success' }), W, 'json')).toEqual({ from: W.from, to: W.to, format: 'json', query: 'actor.id:"user_9" result:success' });
  });

  it('counts the same entries per hour: the window, the kinds as events, the rest as a query', () => {
    expect(countsRequest(f({}), W)).toEqual({ from: W.from, to: W.to, interval: 'hour' });
    expect(countsRequest(f({ query: 'login', events: ['user.login'], actor: 'user_9', result: 'failure' }), W)).toEqual({
      from: W.from,
      to: W.to,
      interval: 'hour',
      events: ['user.login'],
      query: 'login actor.id:"user_9" result:failure',
    });
  });

  it('describes a filter for people', () => {
    expect(describeFilter(f({ query: 'login', events: ['user.login'], result: 'failure' }), W)).toBe('“login” · user.login · failure · 2026-03-09 12:34 → 2026-03-10 12:34 UTC');
  });
});

describe('the event kinds', () => {
  it('are grouped by subject, every kind once', () => {
    const groups = eventGroups();
    expect(groups.map((g) => g.name)).toEqual(['user', 'mfa', 'session', 'api_key', 'auth', 'rate_limit', 'sso_connection', 'oauth_client', 'oauth', 'policy', 'authz', 'log']);
    expect(groups.flatMap((g) => g.kinds)).toEqual([...EVENT_KINDS]);
  });
});
