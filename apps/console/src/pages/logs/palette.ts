// The chart's colours, shared by the canvas (chart-draw.ts) and the HTML legend (HourlyChart.tsx).
import type { Series } from './hourly';

/** One colour per event kind (styles.css has the same ones as .logs-swatch.c0 … .c9). */
export const PALETTE = ['#1d4ed8', '#b45309', '#047857', '#7c3aed', '#be185d', '#0e7490', '#4d7c0f', '#b91c1c', '#4b5563', '#111827'];

/** The colour index of each series: its kind's place among the kinds drawn. */
export function colourIndexes(series: Series[]): number[] {
  const kinds: string[] = [];
  return series.map((s) => {
    if (!kinds.includes(s.kind)) kinds.push(s.kind);
    return kinds.indexOf(s.kind) % PALETTE.length;
  });
}
