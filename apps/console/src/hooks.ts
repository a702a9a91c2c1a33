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

export interface Action {
  /** An action is under way (its buttons are disabled). */
  busy: boolean;
  /** What the latest run threw; cleared when the next one starts. */
  error?: unknown;
  /** Runs `act`: busy meanwhile, its error kept (and handed to `onError`); never rejects. */
  run: (act: () => Promise<unknown>, onError?: (error: unknown) => void) => Promise<void>;
  /** An error found before anything is sent. */
  fail: (error: unknown) => void;
}

/** The state of a button's work (a save, a delete, a rotation): busy while it runs, then its error, if any. */
export function useAction(): Action {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>();
  const run = async (act: () => Promise<unknown>, onError?: (error: unknown) => void) => {
    setBusy(true);
    setError(undefined);
    try {
      await act();
    } catch (err) {
      setError(err);
      onError?.(err);
    } finally {
      setBusy(false);
    }
  };
  return { busy, error, run, fail: setError };
}

/** The "Saved." of a detail page: set when its edit form saved (then the page reloads), cleared by the next edit. */
export function useSaved(reload: () => void): { saved: boolean; onSaved: () => void; onEdit: () => void } {
  const [saved, setSaved] = useState(false);
  return {
    saved,
    onSaved: () => {
      setSaved(true);
      reload();
    },
    onEdit: () => setSaved(false),
  };
}
