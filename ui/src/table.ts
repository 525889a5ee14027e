// The results table, virtualised: only the rows in view (and a few around) are in the DOM,
// each placed by its offset, so 100,000 rows scroll like 100. Row heights are known without
// layout (a collapsed row is ROW_HEIGHT; an expanded one adds its JSON's lines), so offsets
// are a prefix sum and the first row in view a binary search.
import type { Hit } from './api';
import { escapeHtml, formatTime, highlight, Highlighter, valueText } from './text';

const ROW_HEIGHT = 30;
const LINE_HEIGHT = 18;
const MAX_JSON_LINES = 40;
const OVERSCAN = 8;
/** Ask for more when the view comes this many rows from the end. */
const PREFETCH_ROWS = 60;
/** Rows kept while the live tail runs: the oldest go beyond it. */
const MAX_TAIL_ROWS = 100_000;

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
  private widths: number[] = [];
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
  private viewHeight = 800;
  /** The scroll offset, as the last scroll event said (or as set here). */
  private top = 0;

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
    this.scroller.addEventListener(
      'scroll',
      () => {
        this.top = this.scroller.scrollTop;
        this.schedule();
      },
      { passive: true },
    );
    // The view's height, kept here: reading clientHeight while drawing would force a layout.
    new ResizeObserver((entries) => {
      this.viewHeight = entries[0].contentRect.height;
      this.schedule();
    }).observe(this.scroller);
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
    this.widths = this.measureColumns();
    columns.forEach((c, i) => cells.push(`<div class="cell col" style="${this.widthStyle(i)}">${escapeHtml(c)}</div>`));
    this.header.innerHTML = cells.join('');
    this.redrawAll();
  }

  /** Each column as wide as its longest value in the rows so far (within bounds); the last
   * takes the rest. */
  private measureColumns(): number[] {
    return this.columns.map((c) => {
      let longest = c.length;
      for (let i = 0; i < Math.min(200, this.rows.length); i++) {
        const value = c === '_time' ? this.rows[i].hit._time : this.rows[i].hit.event[c];
        longest = Math.max(longest, valueText(value).length);
      }
      return Math.min(480, Math.max(70, Math.ceil(longest * 7.3) + 24));
    });
  }

  private widthStyle(i: number): string {
    return i === this.columns.length - 1 ? 'flex:1' : `flex:none;width:${this.widths[i] ?? 120}px`;
  }

  setHighlighter(highlighter: Highlighter): void {
    this.highlighter = highlighter;
  }

  /** Replaces every row (a new search), scrolled to the top. */
  /** Replaces every row (a new search), scrolled to the top, with these columns (as wide
   * as the new rows need). */
  replace(hits: Hit[], columns = this.columns, showScore = this.showScore): void {
    this.rows = hits.map((hit) => ({ hit, expanded: false }));
    this.scroller.scrollTop = 0;
    this.top = 0;
    this.setColumns(columns, showScore);
  }

  append(hits: Hit[]): void {
    for (const hit of hits) this.rows.push({ hit, expanded: false });
    this.dirty = true;
    this.schedule();
  }

  /** New rows on top (the live tail), newest first; the view stays on what it showed. */
  prepend(hits: Hit[], fresh: (hit: Hit) => boolean): void {
    if (!hits.length) return;
    const before = this.top;
    const added: Row[] = hits.map((hit) => ({ hit, expanded: false, fresh: fresh(hit) }));
    this.rows = added.concat(this.rows);
    // A tail left running keeps the newest rows only.
    if (this.rows.length > MAX_TAIL_ROWS) {
      for (const row of this.rows.slice(MAX_TAIL_ROWS)) {
        const el = this.rendered.get(row);
        if (el) {
          el.hidden = true;
          delete el.dataset.index;
          this.free.push(el);
          this.rendered.delete(row);
        }
      }
      this.rows.length = MAX_TAIL_ROWS;
    }
    this.dirty = true;
    if (before > 0) {
      this.layout();
      this.top = before + added.length * ROW_HEIGHT;
      this.scroller.scrollTop = this.top;
    }
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
    const top = this.top;
    const bottom = top + this.viewHeight;
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
      for (const [i, c] of this.columns.entries()) {
        const value = c === '_time' ? hit._time : event[c];
        cells.push(`<div class="cell col${c === 'level' ? ' level-' + escapeHtml(String(value ?? '').toLowerCase()) : ''}" style="${this.widthStyle(i)}">${highlight(valueText(value), this.highlighter.forField(c))}</div>`);
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
