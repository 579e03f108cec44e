import { useEffect, useRef, useState } from 'preact/hooks';
import type { Chart as ChartType } from 'chart.js';
import type { Stats } from '../api.js';

type Entry = Stats['acceptance'][string];

const BAR = '#0b57d0';
const GRID = '#d0d7de';
const TEXT = '#1b1f24';

/** chart.js with only what a bar chart needs, loaded when the first chart is drawn (the other pages do without it). */
async function loadChart(): Promise<typeof ChartType> {
  const { Chart, BarController, BarElement, CategoryScale, LinearScale, Tooltip } = await import('chart.js');
  Chart.register(BarController, BarElement, CategoryScale, LinearScale, Tooltip);
  return Chart;
}

/**
 * The acceptance rate per (type, model) as a horizontal bar chart (chart.js). A canvas says nothing
 * to a screen reader: it has an accessible name, and the acceptance table beside it is its text.
 */
export function AcceptanceChart({ acceptance }: { acceptance: Stats['acceptance'] }) {
  const canvas = useRef<HTMLCanvasElement>(null);
  const chart = useRef<ChartType<'bar'> | null>(null);
  const [failed, setFailed] = useState<string | null>(null);
  const keys = Object.keys(acceptance);
  const entries = keys.map((k) => acceptance[k] as Entry);
  // the tooltip reads the figures of the latest answer, not those of the first drawing
  const shown = useRef(entries);
  shown.current = entries;

  useEffect(() => {
    let gone = false;
    const labels = keys;
    const data = entries.map((e) => Math.round(e.rate * 1000) / 10);
    if (chart.current) {
      chart.current.data.labels = labels;
      const set = chart.current.data.datasets[0];
      if (set) set.data = data;
      chart.current.update('none');
      return undefined;
    }
    loadChart().then(
      (Chart) => {
        if (gone || !canvas.current) return;
        chart.current = new Chart(canvas.current, {
          type: 'bar',
          data: {
            labels,
            datasets: [
              { label: 'acceptance rate (%)', data, backgroundColor: BAR, borderRadius: 3, maxBarThickness: 22 },
            ],
          },
          options: {
            indexAxis: 'y',
            animation: false,
            responsive: true,
            maintainAspectRatio: false,
            scales: {
              x: {
                min: 0,
                max: 100,
                ticks: { color: TEXT, callback: (v) => `${String(v)}%` },
                grid: { color: GRID },
                title: { display: true, text: 'accepted / total', color: TEXT },
              },
              y: { ticks: { color: TEXT, autoSkip: false }, grid: { display: false } },
            },
            plugins: {
              tooltip: {
                callbacks: {
                  label: (ctx) => {
                    const e = shown.current[ctx.dataIndex];
                    return e ? `${e.accepted} of ${e.total} accepted (${(e.rate * 100).toFixed(1)}%)` : '';
                  },
                },
              },
            },
          },
        });
      },
      (err: unknown) => setFailed(String(err)),
    );
    return () => {
      gone = true;
    };
    // redrawn when the figures change, not on every render
  }, [JSON.stringify(acceptance)]);

  useEffect(
    () => () => {
      chart.current?.destroy();
      chart.current = null;
    },
    [],
  );

  if (failed)
    return <p class="error-box">The chart could not be drawn ({failed}); the table below has the same figures.</p>;
  const height = Math.max(140, keys.length * 34 + 70);
  return (
    <div class="stats-chart" style={{ height: `${height}px` }}>
      <canvas
        ref={canvas}
        role="img"
        aria-label={`Bar chart: acceptance rate per (type, model), ${keys.length} row${keys.length === 1 ? '' : 's'}; the table below gives the same figures`}
      >
        The acceptance rate per (type, model); the table below gives the same figures.
      </canvas>
    </div>
  );
}
