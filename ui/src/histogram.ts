// The histogram of matches over the range (uPlot bars). Dragging across it selects a time
// range: `onZoom` gets its bounds, as whole bucket edges.
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import type { Bucket } from './api';
import { formatCount } from './text';

export class Histogram {
  private plot: uPlot | null = null;
  private starts: number[] = [];
  private width = 0;
  private resizeObserver: ResizeObserver;

  constructor(
    private readonly element: HTMLElement,
    private readonly onZoom: (fromMs: number, toMs: number) => void,
  ) {
    this.resizeObserver = new ResizeObserver(() => {
      this.plot?.setSize(this.size());
    });
    this.resizeObserver.observe(element);
    // Drawn empty at once, so the page's first paint has the chart's frame and an answer
    // only fills it in.
    this.plot = new uPlot(this.options(), [[], []], this.element);
  }

  private size(): { width: number; height: number } {
    return { width: Math.max(200, this.element.clientWidth), height: 130 };
  }

  /** Shows `buckets` (their starts, RFC 3339) over [fromMs, toMs). */
  set(buckets: Bucket[], fromMs: number | null, toMs: number | null): void {
    const starts = buckets.map((b) => Date.parse(b.start) / 1000);
    const byStart = new Map(buckets.map((b, i) => [starts[i], b.count]));
    this.width = bucketSeconds(starts, fromMs, toMs);
    // The server sends the buckets from the first match to the last, gaps jumped: the
    // empty ones are drawn too, over the whole range, so bars keep their width.
    const first = fromMs !== null ? Math.floor(fromMs / 1000 / this.width) * this.width : starts[0];
    const last = toMs !== null ? toMs / 1000 : (starts[starts.length - 1] ?? first) + this.width;
    const grid: number[] = [];
    const gridCounts: number[] = [];
    const counts: number[] = [];
    if (first !== undefined && (last - first) / this.width <= 5000) {
      for (let t = first; t < last; t += this.width) {
        grid.push(t);
        gridCounts.push(byStart.get(t) ?? 0);
      }
      for (const [t, count] of byStart) {
        if (t < first || t >= last) {
          grid.push(t);
          gridCounts.push(count);
        }
      }
      const order = grid.map((_, i) => i).sort((a, b) => grid[a] - grid[b]);
      this.starts = order.map((i) => grid[i]);
      counts.push(...order.map((i) => gridCounts[i]));
    } else {
      this.starts = starts;
      counts.push(...buckets.map((b) => b.count));
    }
    const plotted = this.starts;
    const xs = plotted;
    const min = fromMs !== null ? Math.min(fromMs / 1000, xs[0] ?? Infinity) : xs[0];
    const lastEnd = xs.length ? xs[xs.length - 1] + this.width : undefined;
    const max = toMs !== null ? Math.max(toMs / 1000, lastEnd ?? -Infinity) : lastEnd;
    this.element.dataset.buckets = String(buckets.length);
    this.element.dataset.total = String(buckets.reduce((a, b) => a + b.count, 0));
    if (!this.plot) {
      this.plot = new uPlot(this.options(), [xs, counts], this.element);
    } else {
      this.plot.setData([xs, counts], false);
    }
    if (min !== undefined && max !== undefined && Number.isFinite(min) && Number.isFinite(max) && max > min) {
      this.plot.setScale('x', { min, max });
    } else {
      // Nothing to place it by (no matches, no range): the last day.
      const now = Date.now() / 1000;
      const at = xs[0] ?? now;
      this.plot.setScale('x', xs.length ? { min: at - 30, max: at + 30 } : { min: now - 86_400, max: now });
    }
  }

  private options(): uPlot.Options {
    const bars = uPlot.paths.bars!({ size: [0.92, Infinity], align: 1, gap: 1 });
    const axis = {
      stroke: '#8b93a7',
      grid: { stroke: 'rgba(139,147,167,0.12)', width: 1 },
      ticks: { stroke: 'rgba(139,147,167,0.25)', width: 1 },
      font: '11px system-ui, sans-serif',
    };
    return {
      ...this.size(),
      padding: [8, 28, 0, 0],
      legend: { show: false },
      tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), 'Etc/UTC'),
      cursor: {
        drag: { x: true, y: false, setScale: false },
        y: false,
        points: { show: false },
      },
      select: { show: true, left: 0, top: 0, width: 0, height: 0 },
      scales: { x: { time: true }, y: { range: (_u, _min, max) => [0, Math.max(1, max) * 1.08] } },
      axes: [
        { ...axis, space: 70 },
        { ...axis, size: 56, values: (_u, splits) => splits.map((v) => compact(v)) },
      ],
      series: [
        {},
        {
          label: 'events',
          paths: bars,
          fill: 'rgba(240,162,74,0.75)',
          stroke: 'rgba(240,162,74,1)',
          width: 0,
          points: { show: false },
        },
      ],
      hooks: {
        setSelect: [
          (u) => {
            const { left, width } = u.select;
            if (width < 3) return;
            const from = u.posToVal(left, 'x');
            const to = u.posToVal(left + width, 'x');
            u.setSelect({ left: 0, top: 0, width: 0, height: 0 }, false);
            this.onZoom(Math.floor(from * 1000), Math.ceil(to * 1000));
          },
        ],
        setCursor: [(u) => this.showTip(u)],
        // A click on a bar (no drag) zooms into its bucket.
        ready: [
          (u) => {
            let downX = -1;
            u.over.addEventListener('mousedown', (e) => (downX = e.clientX));
            u.over.addEventListener('click', (e) => {
              const idx = this.bucketAt(u);
              if (Math.abs(e.clientX - downX) > 2 || idx === null) return;
              if (!((u.data[1][idx] as number) > 0)) return;
              const start = this.starts[idx];
              this.onZoom(start * 1000, (start + this.width) * 1000);
            });
          },
        ],
      },
    };
  }

  private tip: HTMLElement | null = null;

  /** The bucket under the cursor: the last whose start is at or before it (a bar spans its
   * bucket, so uPlot's nearest point is not always the bar under the cursor). */
  private bucketAt(u: uPlot): number | null {
    const left = u.cursor.left;
    if (left === undefined || left < 0 || !this.starts.length) return null;
    const t = u.posToVal(left, 'x');
    let lo = 0;
    let hi = this.starts.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.starts[mid] <= t) lo = mid + 1;
      else hi = mid;
    }
    const idx = lo - 1;
    return idx >= 0 && t < this.starts[idx] + this.width ? idx : null;
  }

  private showTip(u: uPlot): void {
    if (!this.tip) {
      this.tip = document.createElement('div');
      this.tip.className = 'histogram-tip';
      this.element.appendChild(this.tip);
    }
    const idx = this.bucketAt(u);
    if (idx === null || u.cursor.left === undefined || u.cursor.left < 0) {
      this.tip.hidden = true;
      return;
    }
    const start = new Date(this.starts[idx] * 1000).toISOString().replace('T', ' ').replace('.000Z', '');
    const count = (u.data[1][idx] as number) ?? 0;
    this.tip.hidden = false;
    this.tip.textContent = `${start}  ·  ${formatCount(count)}`;
    this.tip.style.left = `${Math.min(u.cursor.left + 60, this.element.clientWidth - 180)}px`;
  }
}

/** The server's interval for `histogram=auto` (timeline.rs `auto_interval`): the smallest of
 * its steps giving fewer than 100 buckets over the range; from the buckets when they say. */
const STEPS = [1, 5, 10, 30, 60, 300, 600, 1800, 3600, 10_800, 21_600, 43_200, 86_400, 604_800, 2_592_000, 31_536_000];

function bucketSeconds(starts: number[], fromMs: number | null, toMs: number | null): number {
  let smallest = Infinity;
  for (let i = 1; i < starts.length; i++) smallest = Math.min(smallest, starts[i] - starts[i - 1]);
  if (Number.isFinite(smallest) && smallest > 0) return smallest;
  if (fromMs !== null && toMs !== null && toMs > fromMs) {
    const span = (toMs - fromMs) / 1000;
    return STEPS.find((step) => Math.floor(span / step) < 100) ?? 31_536_000;
  }
  return 60;
}

function compact(value: number): string {
  if (value >= 1e9) return `${+(value / 1e9).toFixed(1)}B`;
  if (value >= 1e6) return `${+(value / 1e6).toFixed(1)}M`;
  if (value >= 1e3) return `${+(value / 1e3).toFixed(1)}k`;
  return String(value);
}
