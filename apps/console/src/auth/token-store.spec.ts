import { TokenStore, tokenSetOf } from './token-store';

const NOW = 1_700_000_000_000;

describe('tokenSetOf', () => {
  it('reads a token answer, keeping the ID token and scope of the previous set on a refresh', () => {
    const first = tokenSetOf({ access_token: 'at1', token_type: 'Bearer', expires_in: 900, refresh_token: 'rt1', id_token: 'id1', scope: 'openid' }, NOW);
    expect(first).toEqual({ accessToken: 'at1', refreshToken: 'rt1', idToken: 'id1', expiresAt: NOW + 900_000, issuedAt: NOW, scope: 'openid' });
    const second = tokenSetOf({ access_token: 'at2', token_type: 'bearer', expires_in: 900, refresh_token: 'rt2' }, NOW + 1000, first);
    expect(second).toMatchObject({ accessToken: 'at2', refreshToken: 'rt2', idToken: 'id1', scope: 'openid' });
  });

  it('refuses an answer without an access token or of another token type', () => {
    expect(() => tokenSetOf({ access_token: '', token_type: 'Bearer', expires_in: 1 }, NOW)).toThrow('access_token');
    expect(() => tokenSetOf({ access_token: 'x', token_type: 'mac', expires_in: 1 }, NOW)).toThrow('token_type');
  });
});

describe('TokenStore', () => {
  it('plans the refresh a minute before expiry, or at three quarters of a short lifetime', () => {
    const store = new TokenStore();
    expect(store.refreshAt()).toBeUndefined();
    expect(store.needsRefresh(NOW)).toBe(false);
    store.set(tokenSetOf({ access_token: 'a', token_type: 'Bearer', expires_in: 900 }, NOW));
    expect(store.refreshAt()).toBe(NOW + 840_000);
    expect(store.needsRefresh(NOW + 839_999)).toBe(false);
    expect(store.needsRefresh(NOW + 840_000)).toBe(true);
    store.set(tokenSetOf({ access_token: 'b', token_type: 'Bearer', expires_in: 120 }, NOW));
    expect(store.refreshAt()).toBe(NOW + 90_000);
  });

  it('tells its listeners about every change, and forgets everything on clear', () => {
    const store = new TokenStore();
    const heard = jest.fn();
    const stop = store.subscribe(heard);
    store.set(tokenSetOf({ access_token: 'a', token_type: 'Bearer', expires_in: 900 }, NOW));
    store.clear();
    store.clear();
    expect(store.current).toBeUndefined();
    expect(heard).toHaveBeenCalledTimes(2);
    stop();
    store.set(tokenSetOf({ access_token: 'a', token_type: 'Bearer', expires_in: 900 }, NOW));
    expect(heard).toHaveBeenCalledTimes(2);
  });
});
