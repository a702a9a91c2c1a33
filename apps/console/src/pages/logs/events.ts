// The event kinds the API records (the EventKind values of its OpenAPI document), for the filter's checkboxes:
// the product's own catalogue (libs/shared/src/event-kinds.ts, a file without imports, which the console takes
// by the alias @secsvc/shared/event-kinds of vite.config.mts, tsconfig.json and jest.config.js), checked against
// the typed client at compile time: a kind the API adds or drops fails `tsc` here.
import type { operations } from '@secsvc/client';
import { EVENT_KINDS as CATALOGUE } from '@secsvc/shared/event-kinds';

export type EventKind = NonNullable<operations['createLogExport']['requestBody']['content']['application/json']['events']>[number];

export const EVENT_KINDS = CATALOGUE satisfies readonly EventKind[];

// Every kind of the API is listed (the other direction is the `satisfies` above).
type Unlisted = Exclude<EventKind, (typeof EVENT_KINDS)[number]>;
const everyKindListed: [Unlisted] extends [never] ? true : Unlisted = true;
void everyKindListed;

/** The kinds grouped by what they are about (the part before the first dot: user, session, api_key, ...). */
export function eventGroups(): { name: string; kinds: EventKind[] }[] {
  const groups = new Map<string, EventKind[]>();
  for (const k of EVENT_KINDS) {
    const name = k.slice(0, k.indexOf('.'));
    groups.set(name, [...(groups.get(name) ?? []), k]);
  }
  return [...groups].map(([name, kinds]) => ({ name, kinds }));
}
