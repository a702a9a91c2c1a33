import { useEffect, useEffectEvent, useState } from 'react';

export interface Loaded<T> {
  loading: boolean;
  data?: T;
  error?: unknown;
  reload: () => void;
}

/**
 * Loads `load()` for `key` (again whenever the key changes, or reload() is called); an answer that arrives after
 * the key moved on is dropped.
 */
export function useLoad<T>(key: string, load: () => Promise<T>): Loaded<T> {
  const [round, setRound] = useState(0);
  const [state, setState] = useState<{ key: string; data?: T; error?: unknown }>();
  const current = `${round}:${key}`;
  const run = useEffectEvent(load);
  useEffect(() => {
    let live = true;
    run().then(
      (data) => live && setState({ key: current, data }),
      (error: unknown) => live && setState({ key: current, error }),
    );
    return () => {
      live = false;
    };
  }, [current]);
  const mine = state?.key === current ? state : undefined;
  return { loading: !mine, data: mine?.data, error: mine?.error, reload: () => setRound((r) => r + 1) };
}
