// The canvas of the chart of entries per hour, drawn by Chart.js: loaded on demand (its own file of the
// build), registering only the parts a stacked bar chart uses. Chart.js styles its canvas through the CSSOM only
// (no <style> element, no style attribute), which the console's Content-Security-Policy allows.
import { BarController, BarElement, CategoryScale, Chart, LinearScale, Tooltip, type ChartConfiguration } from 'chart.js';
import { hourLabel, type Hourly } from './hourly';
import { colourIndexes, PALETTE } from './palette';

Chart.register(BarController, BarElement, CategoryScale, LinearScale, Tooltip);

/** Failures are striped: the kind's colour crossed with white, so the result does not rest on colour alone. */
function stripes(colour: string): CanvasPattern | string {
  const tile = document.createElement('canvas');
  tile.width = tile.height = 8;
  const ctx = tile.getContext('2d');
  if (!ctx) return colour;
  ctx.fillStyle = colour;
  ctx.fillRect(0, 0, 8, 8);
  ctx.strokeStyle = '#ffffff';
  ctx.lineWidth = 2;
  ctx.beginPath();
  ctx.moveTo(0, 8);
  ctx.lineTo(8, 0);
  ctx.moveTo(-2, 2);
  ctx.lineTo(2, -2);
  ctx.moveTo(6, 10);
  ctx.lineTo(10, 6);
  ctx.stroke();
  return ctx.createPattern(tile, 'repeat') ?? colour;
}

function config(h: Hourly): ChartConfiguration<'bar', number[], string> {
  const colours = colourIndexes(h.series);
  return {
    type: 'bar',
    data: {
      labels: h.hours.map(hourLabel),
      datasets: h.series.map((s, i) => {
        const colour = PALETTE[colours[i]!]!;
        return {
          label: `${s.kind} · ${s.result}`,
          data: s.counts,
          stack: s.result,
          backgroundColor: s.result === 'failure' ? stripes(colour) : colour,
          borderColor: colour,
          borderWidth: s.result === 'failure' ? 1 : 0,
        };
      }),
    },
    options: {
      animation: false,
      responsive: true,
      maintainAspectRatio: false,
      interaction: { mode: 'index', intersect: false },
      plugins: { tooltip: { filter: (item) => (item.parsed.y ?? 0) > 0 } },
      scales: {
        x: { stacked: true, title: { display: true, text: 'Hour (UTC)' }, ticks: { autoSkip: true, maxRotation: 0 } },
        y: { stacked: true, beginAtZero: true, title: { display: true, text: 'Entries' }, ticks: { precision: 0 } },
      },
    },
  };
}

/** Draws `hourly` on `canvas`; the answer undoes it (the chart's listeners and resize observer go too). */
export function drawHourly(canvas: HTMLCanvasElement, hourly: Hourly): () => void {
  const chart = new Chart(canvas, config(hourly));
  return () => chart.destroy();
}
