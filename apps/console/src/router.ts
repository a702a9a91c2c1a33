// A small router over the History API: the console has a handful of routes under its base path (/console/),
// and the gateway answers index.html for every one of them.
import { useSyncExternalStore, type MouseEvent } from 'react';

/** The base path the console is served under, without its trailing slash (vite's `base`). */
export const BASE = import.meta.env.BASE_URL.replace(/\/+$/, '');

const listeners = new Set<() => void>();
const notify = () => listeners.forEach((l) => l());
window.addEventListener('popstate', notify);

function subscribe(listener: () => void): () => void {
  listeners.add(listener);
  return () => void listeners.delete(listener);
}

/** The location inside the app: the path after the base (at least '/') and the query. */
export function appLocation(): string {
  const path = location.pathname.startsWith(BASE) ? location.pathname.slice(BASE.length) : location.pathname;
  return `${path || '/'}${location.search}`;
}

export function useAppLocation(): { path: string; search: URLSearchParams; href: string } {
  const href = useSyncExternalStore(subscribe, appLocation);
  const url = new URL(href, 'http://app.invalid');
  return { path: url.pathname, search: url.searchParams, href };
}

/** Goes to an app location ('/users?email=a'); `replace` rewrites the current history entry. */
export function navigate(to: string, options: { replace?: boolean } = {}): void {
  const url = `${BASE}${to}`;
  if (options.replace) history.replaceState(null, '', url);
  else history.pushState(null, '', url);
  notify();
  window.scrollTo(0, 0);
}

/** The href of an app location. */
export const hrefOf = (to: string) => `${BASE}${to}`;

/** A click that the router should handle (plain left click, no modifier, same tab). */
export function followLink(event: MouseEvent<HTMLAnchorElement>, to: string): void {
  if (event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
  event.preventDefault();
  navigate(to);
}
