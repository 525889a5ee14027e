// The field sidebar: every field of the tenant with its type; a field opens to its top
// values for the current query (a terms aggregation), each of which filters the query for
// or against it; a field's column button puts it in the table.
import type { FieldInfo, TermsResult } from './api';
import { escapeHtml, formatCount } from './text';

export interface FieldHandlers {
  /** Top values of `field` for the current query and range. */
  topValues(field: string): Promise<{ terms: TermsResult; total: number }>;
  filter(field: string, value: string, type: string, negate: boolean): void;
  toggleColumn(field: string): void;
}

/** Top values slower than this are not counted again by each new query. */
const SLOW_MS = 2000;

const TYPE_BADGE: Record<string, [string, string]> = {
  string: ['t', 'text'],
  i64: ['#', 'number'],
  u64: ['#', 'number'],
  f64: ['#', 'number'],
  bool: ['b', 'boolean'],
  timestamp: ['⏱', 'time'],
  json: ['{}', 'json'],
};

export class FieldList {
  private fields: FieldInfo[] = [];
  private columns: string[] = [];
  private open = new Set<string>();
  private filterText = '';
  /** Bumped by each new query: answers for an older one are dropped. */
  private generation = 0;

  constructor(
    private readonly element: HTMLElement,
    filterInput: HTMLInputElement,
    private readonly handlers: FieldHandlers,
  ) {
    filterInput.addEventListener('input', () => {
      this.filterText = filterInput.value.trim().toLowerCase();
      this.draw();
    });
    element.addEventListener('click', (e) => this.onClick(e));
  }

  setFields(fields: FieldInfo[]): void {
    this.fields = fields.filter((f) => f.name !== '_time');
    this.draw();
  }

  setColumns(columns: string[]): void {
    this.columns = columns;
    this.draw();
  }

  /** A new query ran: open fields load their values again. */
  refresh(): void {
    this.generation++;
    for (const name of this.open) {
      if (this.slow.has(name)) {
        // Counted again only when asked: a field of mostly distinct values (a message) can
        // take seconds over millions of events, and every query would ask again.
        this.valuesHtml.set(name, `<div class="muted small">Its top values took ${(this.slow.get(name)! / 1000).toFixed(1)} s. <button class="btn small recount">Count for this query</button></div>`);
        const box = this.valueBox(name);
        if (box) box.innerHTML = this.valuesHtml.get(name)!;
      } else {
        this.loadValues(name);
      }
    }
  }

  /** Fields whose top values took longer than SLOW_MS, and how long. */
  private slow = new Map<string, number>();

  static typeOf(field: FieldInfo): string {
    let best = 'string';
    let most = -1;
    for (const [type, n] of Object.entries(field.types)) {
      if (n > most) {
        best = type;
        most = n;
      }
    }
    return best;
  }

  private draw(): void {
    const visible = this.fields.filter((f) => !this.filterText || f.name.toLowerCase().includes(this.filterText));
    const selected = visible.filter((f) => this.columns.includes(f.name));
    const available = visible.filter((f) => !this.columns.includes(f.name));
    const section = (title: string, list: FieldInfo[]) =>
      list.length ? `<div class="fields-title">${title}<span class="muted">${list.length}</span></div>` + list.map((f) => this.fieldHtml(f)).join('') : '';
    this.element.innerHTML =
      section('Columns', selected) + section('Fields', available) ||
      `<div class="muted pad">${this.fields.length ? 'No field matches' : 'No fields yet: ingest some events'}</div>`;
    for (const name of this.open) {
      const cached = this.valuesHtml.get(name);
      const box = this.valueBox(name);
      if (box && cached) box.innerHTML = cached;
    }
  }

  private fieldHtml(field: FieldInfo): string {
    const type = FieldList.typeOf(field);
    const [badge, title] = TYPE_BADGE[type] ?? ['?', type];
    const isColumn = this.columns.includes(field.name);
    const open = this.open.has(field.name);
    return `<div class="field${open ? ' open' : ''}" data-field="${escapeHtml(field.name)}" data-type="${type}">
      <div class="field-head"><span class="badge t-${title}" title="${title}${field.full_text ? ', full text' : ''}">${badge}</span><span class="fname" title="${escapeHtml(field.name)} · ${formatCount(field.events)} events">${escapeHtml(field.name)}</span>
      <button class="col-btn${isColumn ? ' on' : ''}" title="${isColumn ? 'Remove column' : 'Add as column'}">${isColumn ? '−' : '+'}</button></div>
      ${open ? '<div class="values"><div class="muted small">Loading…</div></div>' : ''}</div>`;
  }

  private valuesHtml = new Map<string, string>();

  private valueBox(name: string): HTMLElement | null {
    return this.element.querySelector(`.field[data-field="${CSS.escape(name)}"] .values`);
  }

  private async loadValues(name: string): Promise<void> {
    const generation = this.generation;
    const started = performance.now();
    try {
      const { terms, total } = await this.handlers.topValues(name);
      const took = performance.now() - started;
      if (took > SLOW_MS) this.slow.set(name, took);
      else this.slow.delete(name);
      if (generation !== this.generation) return;
      let html = '';
      for (const bucket of terms.buckets) {
        const share = total > 0 ? (100 * bucket.count) / total : 0;
        html += `<div class="value" data-value="${escapeHtml(bucket.key)}" data-count="${bucket.count}">
          <div class="vtext" title="${escapeHtml(bucket.key)} (click: filter for it)">${escapeHtml(bucket.key === '' ? '(empty)' : bucket.key)}</div>
          <div class="vcount">${formatCount(bucket.count)}</div>
          <button class="vbtn plus" title="Filter for value">+</button><button class="vbtn minus" title="Filter out value">−</button>
          <div class="vbar"><span style="width:${share.toFixed(1)}%"></span></div></div>`;
      }
      if (!terms.buckets.length) html = '<div class="muted small">No values in the matches</div>';
      else if (terms.other_count > 0) html += `<div class="muted small">${formatCount(terms.other_count)} in other values</div>`;
      this.valuesHtml.set(name, html);
    } catch (error) {
      if (generation !== this.generation) return;
      this.valuesHtml.set(name, `<div class="small err">${escapeHtml(String((error as Error).message))}</div>`);
    }
    const box = this.valueBox(name);
    if (box) box.innerHTML = this.valuesHtml.get(name)!;
  }

  private onClick(e: MouseEvent): void {
    const target = e.target as HTMLElement;
    const fieldEl = target.closest('.field') as HTMLElement | null;
    if (!fieldEl) return;
    const name = fieldEl.dataset.field!;
    const type = fieldEl.dataset.type!;
    if (target.closest('.recount')) {
      const box = this.valueBox(name);
      if (box) box.innerHTML = '<div class="muted small">Loading…</div>';
      this.loadValues(name);
      return;
    }
    if (target.closest('.col-btn')) {
      this.handlers.toggleColumn(name);
      return;
    }
    const valueEl = target.closest('.value') as HTMLElement | null;
    if (valueEl) {
      const value = valueEl.dataset.value!;
      this.handlers.filter(name, value, type, !!target.closest('.minus'));
      return;
    }
    if (target.closest('.field-head')) {
      if (this.open.has(name)) {
        this.open.delete(name);
      } else {
        this.open.add(name);
        this.valuesHtml.delete(name);
        this.loadValues(name);
      }
      this.draw();
    }
  }
}
