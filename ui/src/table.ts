// The results table, virtualised: only the rows in view (and a few around) are in the DOM,
// each placed by its offset, so 100,000 rows scroll like 100. Row heights are known without
// layout (a collapsed row is ROW_HEIGHT; an expanded one adds its JSON's lines), so offsets
// are a prefix sum and the first row in view a binary search.
import type { Hit } from './api';
import { escapeHtml, formatTime, highlight, Highlighter, valueText } from './text';

const ROW_HEIGHT = 30;
const LINE_HEIGHT = 18;
const MAX_JSON_LINES = 40;
const OVERSCAN = 12;
/** Ask for more when the view comes this many rows from the end. */
const PREFETCH_ROWS = 60;

export interface Row {
  hit: Hit;
  expanded: boolean;
  /** The event as pretty JSON, made when first expanded. */
  json?: string;
  /** Set on rows that came from the live tail, for a moment's flash. */
  fresh?: boolean;
}

export class Table {
  private rows: Row[] = [];
  private offsets = new Float64Array(1);
  private dirty = true;
  private columns: string[] = [];
  private highlighter = new Highlighter('');
  private showScore = false;
  private rendered = new Map<Row, HTMLElement>();
  /** Row elements out of view, hidden, to be filled again. */
  private free: HTMLElement[] = [];
  private readonly header: HTMLElement;
  private readonly scroller: HTMLElement;
  private readonly spacer: HTMLElement;
  private readonly empty: HTMLElement;
  private frame = 0;

  constructor(
    private readonly element: HTMLElement,
    private readonly onNeedMore: () => void,
    private readonly onScrollTop: (atTop: boolean) => void,
  ) {
    element.innerHTML = '<div class="thead"></div><div class="tscroll"><div class="tspacer"></div><div class="tempty" hidden></div></div>';
    this.header = element.querySelector('.thead')!;
    this.scroller = element.querySelector('.tscroll')!;
    this.spacer = element.querySelector('.tspacer')!;
    this.empty = element.querySelector('.tempty')!;
    this.scroller.addEventListener('scroll', () => this.schedule(), { passive: true });
    new ResizeObserver(() => this.schedule()).observe(this.scroller);
    this.spacer.addEventListener('click', (e) => this.onClick(e));
  }

  get length(): number {
    return this.rows.length;
  }

  lastHit(): Hit | undefined {
    return this.rows[this.rows.length - 1]?.hit;
  }

  get scrollElement(): HTMLElement {
    return this.scroller;
  }

  setColumns(columns: string[], showScore: boolean): void {
    this.columns = columns;
    this.showScore = showScore;
    const cells = ['<div class="cell time">Time (UTC)</div>'];
    if (showScore) cells.push('<div class="cell score">Score</div>');
    if (columns.length === 0) cells.push('<div class="cell doc">Document</div>');
    for (const c of columns) cells.push(`<div class="cell col">${escapeHtml(c)}</div>`);
    this.header.innerHTML = cells.join('');
    this.redrawAll();
  }

  setHighlighter(highlighter: Highlighter): void {
    this.highlighter = highlighter;
  }

  /** Replaces every row (a new search), scrolled to the top. */
  replace(hits: Hit[]): void {
    this.rows = hits.map((hit) => ({ hit, expanded: false }));
    this.scroller.scrollTop = 0;
    this.redrawAll();
  }

  append(hits: Hit[]): void {
    for (const hit of hits) this.rows.push({ hit, expanded: false });
    this.dirty = true;
    this.schedule();
  }

  /** New rows on top (the live tail), newest first; the view stays on what it showed. */
  prepend(hits: Hit[]): void {
    if (!hits.length) return;
    const before = this.scroller.scrollTop;
    const added: Row[] = hits.map((hit) => ({ hit, expanded: false, fresh: true }));
    this.rows = added.concat(this.rows);
    this.dirty = true;
    if (before > 0) this.scroller.scrollTop = before + added.length * ROW_HEIGHT;
    this.render();
  }

  setEmpty(message: string | null): void {
    this.empty.hidden = message === null;
    this.empty.innerHTML = message ?? '';
  }

  private redrawAll(): void {
    for (const el of this.rendered.values()) el.remove();
    for (const el of this.free) el.remove();
    this.rendered.clear();
    this.free = [];
    this.dirty = true;
    this.render();
  }

  private heightOf(row: Row): number {
    if (!row.expanded) return ROW_HEIGHT;
    const lines = Math.min(MAX_JSON_LINES, (row.json ?? '').split('\n').length);
    return ROW_HEIGHT + lines * LINE_HEIGHT + 20;
  }

  private layout(): void {
    if (!this.dirty) return;
    const n = this.rows.length;
    if (this.offsets.length < n + 1) this.offsets = new Float64Array(Math.max(n + 1, this.offsets.length * 2));
    this.offsets[0] = 0;
    for (let i = 0; i < n; i++) this.offsets[i + 1] = this.offsets[i] + this.heightOf(this.rows[i]);
    this.spacer.style.height = `${this.offsets[n]}px`;
    this.dirty = false;
  }

  private schedule(): void {
    if (this.frame) return;
    this.frame = requestAnimationFrame(() => {
      this.frame = 0;
      this.render();
    });
  }

  /** Lays out and draws the rows in view now (synchronously). */
  render(): void {
    this.layout();
    const n = this.rows.length;
    const top = this.scroller.scrollTop;
    const bottom = top + this.scroller.clientHeight;
    const first = Math.max(0, this.indexAt(top) - OVERSCAN);
    const last = Math.min(n, this.indexAt(bottom) + 1 + OVERSCAN);
    const keep = new Set<Row>();
    for (let i = first; i < last; i++) {
      const row = this.rows[i];
      keep.add(row);
      let el = this.rendered.get(row);
      if (!el) {
        el = this.build(row, this.free.pop());
        this.rendered.set(row, el);
      }
      const y = `translateY(${this.offsets[i]}px)`;
      if (el.style.transform !== y) el.style.transform = y;
      el.dataset.index = String(i);
    }
    for (const [row, el] of this.rendered) {
      if (!keep.has(row)) {
        // Kept in the DOM for the next row to come into view: cheaper than remove and insert.
        el.hidden = true;
        delete el.dataset.index;
        this.free.push(el);
        this.rendered.delete(row);
      }
    }
    this.element.dataset.rows = String(n);
    this.onScrollTop(top <= 2);
    if (n > 0 && last >= n - PREFETCH_ROWS + OVERSCAN) this.onNeedMore();
  }

  private indexAt(y: number): number {
    let lo = 0;
    let hi = this.rows.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.offsets[mid + 1] <= y) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  private build(row: Row, reuse?: HTMLElement): HTMLElement {
    let el = reuse;
    if (!el) {
      el = document.createElement('div');
      this.spacer.appendChild(el);
    }
    el.hidden = false;
    el.className = 'row' + (row.expanded ? ' expanded' : '') + (row.fresh ? ' fresh' : '');
    row.fresh = false;
    const { hit } = row;
    const event = hit.event;
    const cells = [`<div class="cell time"><span class="caret">${row.expanded ? '▾' : '▸'}</span>${escapeHtml(formatTime(hit._time))}</div>`];
    if (this.showScore) cells.push(`<div class="cell score">${hit.score === null ? '' : hit.score.toFixed(3)}</div>`);
    if (this.columns.length === 0) {
      cells.push(`<div class="cell doc">${this.summary(event)}</div>`);
    } else {
      for (const c of this.columns) {
        const value = c === '_time' ? hit._time : event[c];
        cells.push(`<div class="cell col${c === 'level' ? ' level-' + escapeHtml(String(value ?? '').toLowerCase()) : ''}">${highlight(valueText(value), this.highlighter.forField(c))}</div>`);
      }
    }
    let html = `<div class="line">${cells.join('')}</div>`;
    if (row.expanded) {
      html += `<pre class="json" style="max-height:${MAX_JSON_LINES * LINE_HEIGHT}px">${highlight(row.json ?? '', this.highlighter.any())}</pre>`;
    }
    el.innerHTML = html;
    return el;
  }

  /** Kibana's document column: every field as `name value`, `message` first. */
  private summary(event: Record<string, unknown>): string {
    const names = Object.keys(event);
    const order = names.includes('message') ? ['message', ...names.filter((n) => n !== 'message')] : names;
    let out = '';
    let length = 0;
    for (const name of order) {
      const text = valueText(event[name]);
      const shown = text.length > 300 ? text.slice(0, 300) + '…' : text;
      const level = name === 'level' ? ` level-${escapeHtml(text.toLowerCase())}` : '';
      out += `<span class="kv"><span class="k">${escapeHtml(name)}</span><span class="v${level}">${highlight(shown, this.highlighter.forField(name))}</span></span>`;
      length += name.length + shown.length;
      if (length > 600) break;
    }
    return out;
  }

  private onClick(e: MouseEvent): void {
    const target = e.target as HTMLElement;
    if (target.closest('pre.json')) return; // selecting text in the JSON
    const el = target.closest('.row') as HTMLElement | null;
    if (!el) return;
    const row = this.rows[Number(el.dataset.index)];
    if (!row) return;
    row.expanded = !row.expanded;
    if (row.expanded && row.json === undefined) {
      row.json = JSON.stringify({ _time: row.hit._time, ...row.hit.event }, null, 2);
    }
    this.rendered.delete(row);
    this.build(row, el);
    this.rendered.set(row, el);
    this.dirty = true;
    this.render();
  }
}
