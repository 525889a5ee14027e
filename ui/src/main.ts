// Quarry's web UI: one page, no framework. The view (query, range, sort, columns, tenant)
// lives in the URL, so a view can be shared; each change runs one search that answers the
// histogram, the count and the first rows together, and scrolling pages on with
// `search_after`.
import './style.css';
import { ApiError, getJson, keyFor, setKey, tail, type FieldInfo, type Hit, type SearchAnswer, type TermsResult } from './api';
import { FieldList } from './fields';
import { Histogram } from './histogram';
import { describe, isoMillis, RELATIVE, toMillis, type TimeRange } from './range';
import { Table } from './table';
import { byteToIndex, escapeHtml, formatCount, Highlighter } from './text';
import { HELP_HTML } from './help';

type Sort = 'time_desc' | 'time_asc' | 'relevance';

interface View {
  query: string;
  range: TimeRange;
  sort: Sort;
  columns: string[];
  tenant: string;
}

const FIRST_PAGE = 100;
const NEXT_PAGE = 1000;
/** Relevance has no cursor: it pages by asking for more, up to this many. */
const MAX_RELEVANCE_ROWS = 10_000;
const HISTORY_KEY = 'quarry.history';
const CLOCK = '<svg viewBox="0 0 16 16" width="14" height="14" aria-hidden="true"><circle cx="8" cy="8" r="6.5" fill="none" stroke="currentColor" stroke-width="1.5"/><path d="M8 4.5V8l2.5 1.5" fill="none" stroke="currentColor" stroke-width="1.5" stroke-linecap="round"/></svg>';

/** Timings of each search, read by the browser test (ui/tests/browser.mjs). */
interface SearchTiming {
  query: string;
  fetchMs: number;
  serverMs: number;
  /** From the answer's head to the histogram and rows painted; the parts below. */
  renderMs: number;
  parseMs: number;
  histogramMs: number;
  tableMs: number;
  frameMs: number;
  rows: number;
  buckets: number;
}
declare global {
  interface Window {
    __quarry: { searches: SearchTiming[]; pages: number; tailEvents: number; initMs: number };
  }
}
const initStarted = performance.now();
window.__quarry = { searches: [], pages: 0, tailEvents: 0, initMs: 0 };

const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;
const queryInput = $<HTMLInputElement>('query');
const mirror = document.querySelector('.query-mirror') as HTMLElement;
const historyList = $<HTMLUListElement>('history');
const errorBar = $('error-bar');
const statusEl = $('status');
const sortSelect = $<HTMLSelectElement>('sort');
const liveBtn = $('live-btn');
const rangeBtn = $('range-btn');
const rangePop = $('range-pop');
const tenantBtn = $('tenant-btn');

let view = readUrl();
let searchAbort: AbortController | null = null;
let generation = 0;
let lastAnswer: { count: number | null; took: number; rows: number; more: boolean; bucketMs: number | null; warnings: string[] } | null = null;
let loadingMore = false;
let exhausted = false;
let fieldsInfo: FieldInfo[] = [];

const table = new Table($('table'), () => loadMore(), (atTop) => live.setAtTop(atTop));
const histogram = new Histogram($('histogram'), (fromMs, toMs) => {
  update({ range: { from: isoMillis(fromMs), to: isoMillis(toMs) } });
});
const fieldList = new FieldList($('fields'), $<HTMLInputElement>('field-filter'), {
  topValues: async (field) => {
    const answer = await getJson<SearchAnswer>(view.tenant, 'search', [
      ...baseParams(),
      ['limit', '0'],
      ['count', 'true'],
      ['aggs', `terms(${field}, 5)`],
    ]);
    const terms = Object.values(answer.aggregations ?? {})[0] as TermsResult | undefined;
    return { terms: terms ?? { buckets: [], other_count: 0 }, total: answer.count ?? 0 };
  },
  filter: (field, value, type, negate) => {
    update({ query: addClause(view.query, clause(field, value, type), negate) });
  },
  toggleColumn: (field) => {
    const columns = view.columns.includes(field) ? view.columns.filter((c) => c !== field) : [...view.columns, field];
    update({ columns }, false);
  },
});

// ---- the view and the URL ----

function readUrl(): View {
  const p = new URLSearchParams(location.search);
  const sort = p.get('sort');
  return {
    query: p.get('q') ?? '',
    range: { from: p.get('from') ?? 'now-24h', to: p.get('to') ?? 'now' },
    sort: sort === 'time_asc' || sort === 'relevance' ? sort : 'time_desc',
    columns: (p.get('cols') ?? '').split(',').filter(Boolean),
    tenant: p.get('tenant') || 'default',
  };
}

function writeUrl(push: boolean): void {
  const p = new URLSearchParams();
  if (view.query) p.set('q', view.query);
  p.set('from', view.range.from);
  p.set('to', view.range.to);
  if (view.sort !== 'time_desc') p.set('sort', view.sort);
  if (view.columns.length) p.set('cols', view.columns.join(','));
  if (view.tenant !== 'default') p.set('tenant', view.tenant);
  const url = `${location.pathname}?${p.toString()}`;
  if (url === location.pathname + location.search) return;
  if (push) history.pushState(null, '', url);
  else history.replaceState(null, '', url);
}

/** Changes the view, puts it in the URL (a new history entry) and searches again (unless
 * only columns changed). */
function update(change: Partial<View>, search = true): void {
  view = { ...view, ...change };
  writeUrl(true);
  syncControls();
  if (change.columns) {
    table.setColumns(view.columns, view.sort === 'relevance');
    fieldList.setColumns(view.columns);
  }
  if (search) run();
}

window.addEventListener('popstate', () => {
  view = readUrl();
  syncControls();
  table.setColumns(view.columns, view.sort === 'relevance');
  fieldList.setColumns(view.columns);
  run();
});

function syncControls(): void {
  if (document.activeElement !== queryInput || queryInput.value !== view.query) queryInput.value = view.query;
  drawMirror(null);
  sortSelect.value = view.sort;
  rangeBtn.innerHTML = `${CLOCK}<span>${escapeHtml(describe(view.range))}</span>`;
  ($<HTMLInputElement>('range-from')).value = view.range.from;
  ($<HTMLInputElement>('range-to')).value = view.range.to;
  tenantBtn.textContent = (keyFor(view.tenant) ? 'key · ' : 'tenant · ') + view.tenant;
}

// ---- query composition ----

function quote(value: string): string {
  return `"${value.replace(/["\\]/g, '\\$&')}"`;
}

/** The clause matching exactly `value` of `field`, as its top values count it. */
function clause(field: string, value: string, type: string): string {
  const name = field.replace(/([\s:()"\\])/g, '\\$1');
  if (type === 'i64' || type === 'u64' || type === 'f64') {
    return /^-/.test(value) ? `${name}:[${value} TO ${value}]` : `${name}:${value}`;
  }
  if (type === 'bool') return `${name}:${value}`;
  return `${name}:=${quote(value)}`;
}

function addClause(query: string, clauseText: string, negate: boolean): string {
  const base = query.trim();
  const added = negate ? `NOT ${clauseText}` : clauseText;
  if (!base || base === '*') return negate ? `* AND ${added}` : added;
  const needsParens = /\bOR\b|\|\|/.test(base);
  return `${needsParens ? `(${base})` : base} AND ${added}`;
}

function baseParams(): [string, string][] {
  const params: [string, string][] = [['query', view.query.trim() || '*']];
  if (view.range.from) params.push(['start', view.range.from]);
  // `end=now` too: the histogram then spans the whole range, not only the matches.
  if (view.range.to) params.push(['end', view.range.to]);
  return params;
}

// ---- searching ----

async function run(): Promise<void> {
  // While the tail runs, a new query (or tenant) restarts it instead.
  if (live.on) {
    live.start();
    return;
  }
  searchAbort?.abort();
  const abort = new AbortController();
  searchAbort = abort;
  const mine = ++generation;
  exhausted = false;
  loadingMore = false;
  document.body.classList.add('loading');
  hideError();
  table.setHighlighter(new Highlighter(view.query));
  const fromMs = toMillis(view.range.from);
  const toMs = toMillis(view.range.to);
  const started = performance.now();
  let responded = 0;
  try {
    const params: [string, string][] = [
      ...baseParams(),
      ['sort', view.sort],
      ['limit', String(FIRST_PAGE)],
      ['count', 'true'],
      ['histogram', 'auto'],
    ];
    const answer = await getJson<SearchAnswer>(view.tenant, 'search', params, abort.signal, () => {
      responded = performance.now();
    });
    if (mine !== generation) return;
    const parsed = performance.now();
    const buckets = answer.histogram ?? [];
    histogram.set(buckets, fromMs, toMs);
    const histogramDrawn = performance.now();
    table.replace(answer.hits, view.columns, view.sort === 'relevance');
    table.setEmpty(answer.hits.length ? null : emptyMessage());
    const bucketMs = buckets.length > 1 ? Date.parse(buckets[1].start) - Date.parse(buckets[0].start) : null;
    lastAnswer = {
      count: answer.count ?? null,
      took: answer.took_ms,
      rows: answer.hits.length,
      more: answer.hits.length === FIRST_PAGE,
      bucketMs,
      warnings: answer.warnings.map((w) => w.message),
    };
    exhausted = !lastAnswer.more;
    drawStatus();
    const drawn = performance.now();
    // Timed to the frame that shows it: the next animation frame, then the task after its
    // style, layout and paint.
    await new Promise((resolve) => requestAnimationFrame(() => setTimeout(resolve, 0)));
    const painted = performance.now();
    window.__quarry.searches.push({
      query: view.query,
      fetchMs: responded - started,
      serverMs: answer.took_ms,
      renderMs: painted - responded,
      parseMs: parsed - responded,
      histogramMs: histogramDrawn - parsed,
      tableMs: drawn - histogramDrawn,
      frameMs: painted - drawn,
      rows: answer.hits.length,
      buckets: buckets.length,
    });
    rememberQuery(view.query);
    fieldList.refresh();
  } catch (error) {
    if (mine !== generation || abort.signal.aborted) return;
    showError(error);
    histogram.set([], fromMs, toMs);
    table.replace([]);
    table.setEmpty('');
    lastAnswer = null;
    drawStatus();
  } finally {
    if (mine === generation) document.body.classList.remove('loading');
  }
  loadFields();
}

function emptyMessage(): string {
  if (fieldsInfo.length === 0) {
    // A new server: say how events get in.
    const ingest = `curl -X POST ${location.origin}/api/v1/${encodeURIComponent(view.tenant)}/ingest -d '{"message": "hello", "level": "info"}'`;
    return `<div class="empty-title">No events yet</div><div class="muted">Send some, then press Enter in the query box:</div>
      <pre class="hint">${escapeHtml(ingest)}</pre><div class="muted small">or <code>quarry ingest FILE</code>, the Elasticsearch bulk API, or <b>Live</b> to watch them come in.</div>`;
  }
  const range = describe(view.range);
  const within = /^(Last|All)/.test(range) ? range.toLowerCase().replace(/^last/, 'the last') : `${range} (UTC)`;
  return `<div class="empty-title">No events match</div><div class="muted"><code>${escapeHtml(view.query || '*')}</code> in ${escapeHtml(within)}.</div>
    <button class="btn" data-action="widen">Search the last 7 days</button> <button class="btn" data-action="all">Search all time</button>`;
}

$('table').addEventListener('click', (e) => {
  const action = (e.target as HTMLElement).closest('[data-action]') as HTMLElement | null;
  if (!action) return;
  update({ range: { from: action.dataset.action === 'all' ? '' : 'now-7d', to: 'now' } });
});

async function loadMore(): Promise<void> {
  if (loadingMore || exhausted || live.on || !lastAnswer || table.length === 0) return;
  const mine = generation;
  loadingMore = true;
  drawStatus();
  try {
    let hits: Hit[];
    if (view.sort === 'relevance') {
      const limit = Math.min(MAX_RELEVANCE_ROWS, table.length + NEXT_PAGE);
      const answer = await getJson<SearchAnswer>(view.tenant, 'search', [...baseParams(), ['sort', 'relevance'], ['limit', String(limit)]]);
      hits = answer.hits.slice(table.length);
      exhausted = answer.hits.length < limit || limit >= MAX_RELEVANCE_ROWS;
    } else {
      const last = table.lastHit();
      if (!last?._cursor) {
        exhausted = true;
        return;
      }
      const answer = await getJson<SearchAnswer>(view.tenant, 'search', [
        ...baseParams(),
        ['sort', view.sort],
        ['limit', String(NEXT_PAGE)],
        ['search_after', last._cursor],
      ]);
      hits = answer.hits;
      exhausted = hits.length < NEXT_PAGE;
    }
    if (mine !== generation) return;
    window.__quarry.pages++;
    lastAnswer.rows += hits.length;
    table.append(hits);
  } catch (error) {
    if (mine === generation) showError(error);
  } finally {
    if (mine === generation) {
      loadingMore = false;
      drawStatus();
    }
  }
}

function drawStatus(): void {
  if (live.on) {
    statusEl.innerHTML = live.statusHtml();
    return;
  }
  if (!lastAnswer) {
    statusEl.innerHTML = '';
    return;
  }
  const a = lastAnswer;
  const parts = [`<b class="hits" data-count="${a.count ?? ''}">${a.count === null ? '?' : formatCount(a.count)}</b> hits`];
  parts.push(`<span class="loaded" data-loaded="${table.length}">${formatCount(table.length)} loaded${loadingMore ? ' <span class="spinner"></span>' : exhausted ? '' : ' · scroll for more'}</span>`);
  parts.push(`${a.took < 1 ? a.took.toFixed(2) : Math.round(a.took)} ms`);
  if (a.bucketMs) parts.push(`interval ${interval(a.bucketMs)}`);
  let html = parts.join('<span class="sep">·</span>');
  if (a.warnings.length) html += `<span class="warn" title="${escapeHtml(a.warnings.join('\n'))}">⚠ ${escapeHtml(a.warnings[0])}</span>`;
  statusEl.innerHTML = html;
}

function interval(ms: number): string {
  for (const [unit, size] of [['d', 86400e3], ['h', 3600e3], ['m', 60e3], ['s', 1e3]] as const) {
    if (ms >= size && ms % size === 0) return `${ms / size}${unit}`;
  }
  return `${ms} ms`;
}

async function loadFields(): Promise<void> {
  try {
    fieldsInfo = (await getJson<{ fields: FieldInfo[] }>(view.tenant, 'fields', [])).fields;
    fieldList.setFields(fieldsInfo);
    // The empty state depends on whether the tenant has any events at all.
    if (table.length === 0 && !live.on && lastAnswer) table.setEmpty(emptyMessage());
  } catch {
    // the search shows the error
  }
}

// ---- errors ----

let retryTimer = 0;

function showError(error: unknown): void {
  if (!(error instanceof ApiError)) {
    errorBar.innerHTML = `<b>Cannot reach the server.</b> ${escapeHtml(String((error as Error)?.message ?? error))}`;
    errorBar.hidden = false;
    return;
  }
  if (error.status === 401) {
    errorBar.innerHTML = `<b>401 — an API key is needed.</b> ${escapeHtml(error.message)} <button class="btn small" data-open-tenant>Enter key</button>`;
    errorBar.hidden = false;
    openTenant(`The server answered: ${error.message}.`);
    return;
  }
  if (error.status === 429) {
    const seconds = error.retryAfter ?? 1;
    errorBar.innerHTML = `<b>429 — too many requests.</b> ${escapeHtml(error.message)}. Retrying in ${seconds} s.`;
    errorBar.hidden = false;
    clearTimeout(retryTimer);
    retryTimer = window.setTimeout(() => run(), seconds * 1000);
    return;
  }
  if (error.status === 404) {
    errorBar.innerHTML = `<b>Unknown tenant.</b> ${escapeHtml(error.message)}`;
    errorBar.hidden = false;
    return;
  }
  const text = queryInput.value;
  let where = '';
  if (error.position !== null && text === view.query) {
    const index = byteToIndex(text, error.position);
    drawMirror(index);
    where = ` <span class="muted">(at character ${index + 1})</span>`;
  }
  errorBar.innerHTML = `<b>${error.status === 400 ? 'Bad request' : `Error ${error.status}`}:</b> <span class="msg">${escapeHtml(error.message)}</span>${where}`;
  errorBar.dataset.position = error.position === null ? '' : String(error.position);
  errorBar.hidden = false;
}

function hideError(): void {
  errorBar.hidden = true;
  errorBar.dataset.position = '';
  drawMirror(null);
}

errorBar.addEventListener('click', (e) => {
  if ((e.target as HTMLElement).closest('[data-open-tenant]')) openTenant('');
});

/** The query's text under the input, transparent but for a wavy underline under the
 * character at `errorIndex` (past the end: a marker after the last). */
function drawMirror(errorIndex: number | null): void {
  const text = queryInput.value;
  if (errorIndex === null) {
    mirror.innerHTML = '';
    queryInput.classList.remove('has-error');
    return;
  }
  const at = Math.min(errorIndex, text.length);
  const char = text.slice(at, at + 1) || ' ';
  mirror.innerHTML = `${escapeHtml(text.slice(0, at))}<span class="error-mark" data-index="${at}">${escapeHtml(char)}</span>${escapeHtml(text.slice(at + 1))}`;
  queryInput.classList.add('has-error');
  mirror.scrollLeft = queryInput.scrollLeft;
}

queryInput.addEventListener('scroll', () => (mirror.scrollLeft = queryInput.scrollLeft));
queryInput.addEventListener('input', () => {
  drawMirror(null);
  showHistory();
});

// ---- query box: Enter runs, history ----

function history_(): string[] {
  try {
    const list = JSON.parse(localStorage.getItem(HISTORY_KEY) ?? '[]');
    return Array.isArray(list) ? list.filter((q) => typeof q === 'string') : [];
  } catch {
    return [];
  }
}

function rememberQuery(query: string): void {
  const q = query.trim();
  if (!q) return;
  const list = [q, ...history_().filter((x) => x !== q)].slice(0, 30);
  localStorage.setItem(HISTORY_KEY, JSON.stringify(list));
}

let historyIndex = -1;

function showHistory(): void {
  const text = queryInput.value.trim().toLowerCase();
  const items = history_().filter((q) => q.toLowerCase().includes(text) && q !== queryInput.value).slice(0, 8);
  historyIndex = -1;
  if (!items.length || document.activeElement !== queryInput) {
    historyList.hidden = true;
    return;
  }
  historyList.innerHTML = `<li class="history-title">Recent queries</li>` + items.map((q) => `<li class="item" data-q="${escapeHtml(q)}">${escapeHtml(q)}</li>`).join('');
  historyList.hidden = false;
}

function moveHistory(step: number): void {
  const items = [...historyList.querySelectorAll<HTMLElement>('li.item')];
  if (historyList.hidden || !items.length) return;
  historyIndex = (historyIndex + step + items.length) % items.length;
  items.forEach((li, i) => li.classList.toggle('active', i === historyIndex));
}

queryInput.addEventListener('focus', showHistory);
queryInput.addEventListener('blur', () => setTimeout(() => (historyList.hidden = true), 150));
historyList.addEventListener('mousedown', (e) => {
  const li = (e.target as HTMLElement).closest('li.item') as HTMLElement | null;
  if (!li) return;
  e.preventDefault();
  queryInput.value = li.dataset.q!;
  historyList.hidden = true;
  submit();
});
queryInput.addEventListener('keydown', (e) => {
  if (e.key === 'ArrowDown') {
    e.preventDefault();
    if (historyList.hidden) showHistory();
    else moveHistory(1);
  } else if (e.key === 'ArrowUp') {
    e.preventDefault();
    moveHistory(-1);
  } else if (e.key === 'Escape') {
    historyList.hidden = true;
  } else if (e.key === 'Enter') {
    e.preventDefault();
    const active = historyList.querySelector<HTMLElement>('li.item.active');
    if (active && !historyList.hidden) queryInput.value = active.dataset.q!;
    historyList.hidden = true;
    submit();
  }
});

function submit(): void {
  update({ query: queryInput.value.trim() });
}

$('search-btn').addEventListener('click', submit);
sortSelect.addEventListener('change', () => update({ sort: sortSelect.value as Sort }));
$('help-btn').addEventListener('click', () => {
  const help = $('help');
  if (!help.innerHTML) help.innerHTML = HELP_HTML;
  help.hidden = !help.hidden;
});
$('help').addEventListener('click', (e) => {
  const example = (e.target as HTMLElement).closest('code[data-example]') as HTMLElement | null;
  if (example) {
    queryInput.value = example.textContent ?? '';
    queryInput.focus();
  }
});
document.addEventListener('keydown', (e) => {
  if (e.key === 'Escape') {
    rangePop.hidden = true;
    tenantModal.hidden = true;
    $('help').hidden = true;
    return;
  }
  if (e.key === '/' && document.activeElement?.tagName !== 'INPUT') {
    e.preventDefault();
    queryInput.focus();
  }
});

// ---- time range picker ----

$('range-quick').innerHTML = RELATIVE.map((r) => `<button class="chip" data-from="${r.from}">${r.label}</button>`).join('');
rangeBtn.addEventListener('click', () => {
  rangePop.hidden = !rangePop.hidden;
});
$('range-quick').addEventListener('click', (e) => {
  const chip = (e.target as HTMLElement).closest('.chip') as HTMLElement | null;
  if (!chip) return;
  rangePop.hidden = true;
  update({ range: { from: chip.dataset.from!, to: 'now' } });
});
$('range-apply').addEventListener('click', () => {
  rangePop.hidden = true;
  update({ range: { from: $<HTMLInputElement>('range-from').value.trim(), to: $<HTMLInputElement>('range-to').value.trim() || 'now' } });
});
rangePop.addEventListener('keydown', (e) => {
  if (e.key === 'Enter') $('range-apply').click();
});
document.addEventListener('mousedown', (e) => {
  if (!rangePop.hidden && !(e.target as HTMLElement).closest('.range-picker')) rangePop.hidden = true;
});

// ---- tenant and key ----

const tenantModal = $('tenant-modal');

function openTenant(reason: string): void {
  $('tenant-reason').textContent = reason;
  $<HTMLInputElement>('tenant-name').value = view.tenant;
  $<HTMLInputElement>('tenant-key').value = keyFor(view.tenant) ?? '';
  tenantModal.hidden = false;
  $<HTMLInputElement>('tenant-key').focus();
}

tenantBtn.addEventListener('click', () => openTenant(''));
$('tenant-cancel').addEventListener('click', () => (tenantModal.hidden = true));
$('tenant-form').addEventListener('submit', (e) => {
  e.preventDefault();
  const tenant = $<HTMLInputElement>('tenant-name').value.trim() || 'default';
  setKey(tenant, $<HTMLInputElement>('tenant-key').value.trim() || null);
  tenantModal.hidden = true;
  update({ tenant });
});

// ---- live tail ----

class LiveTail {
  on = false;
  private abort: AbortController | null = null;
  private pending: Hit[] = [];
  private atTop = true;
  private arrivals: number[] = [];
  private openedAt = 0;
  private timer = 0;
  private flushFrame = 0;
  private received = 0;
  private fresh = new WeakSet<Hit>();

  toggle(): void {
    if (this.on) {
      this.stop();
      run();
    } else {
      this.start();
    }
  }

  /** Starts the tail of the current query (again, if it runs). */
  start(): void {
    if (this.on) this.stop();
    searchAbort?.abort();
    generation++;
    this.on = true;
    this.pending = [];
    this.arrivals = [];
    this.received = 0;
    liveBtn.classList.add('on');
    liveBtn.setAttribute('aria-pressed', 'true');
    document.body.classList.add('live');
    table.setColumns(view.columns, false);
    table.replace([]);
    table.setEmpty('<div class="muted">Waiting for events…</div>');
    hideError();
    const abort = new AbortController();
    this.abort = abort;
    this.timer = window.setInterval(() => drawStatus(), 1000);
    drawStatus();
    tail(
      view.tenant,
      view.query.trim() || '*',
      FIRST_PAGE,
      abort.signal,
      () => (this.openedAt = performance.now()),
      (hit) => !abort.signal.aborted && this.onHit({ _time: hit._time, event: hit.event, score: null }),
      () => !abort.signal.aborted && this.ended('the server dropped this stream: the browser read slower than events came'),
    )
      // A stream stopped here (aborted) ends quietly; one the server ended says so.
      .then(() => !abort.signal.aborted && this.ended('the stream ended'))
      .catch((error) => {
        if (abort.signal.aborted) return;
        this.stop();
        showError(error);
      });
  }

  stop(): void {
    if (!this.on) return;
    this.on = false;
    this.abort?.abort();
    this.abort = null;
    clearInterval(this.timer);
    liveBtn.classList.remove('on');
    liveBtn.setAttribute('aria-pressed', 'false');
    document.body.classList.remove('live');
  }

  private ended(why: string): void {
    if (!this.on) return;
    this.stop();
    errorBar.innerHTML = `<b>Live tail stopped:</b> ${escapeHtml(why)}.`;
    errorBar.hidden = false;
    drawStatus();
  }

  private onHit(hit: Hit): void {
    this.received++;
    window.__quarry.tailEvents++;
    const now = performance.now();
    // The history comes at once when the stream opens; the rate counts what came after, and
    // only that flashes when drawn.
    if (now - this.openedAt > 300) {
      this.arrivals.push(now);
      this.fresh.add(hit);
    }
    this.pending.push(hit);
    if (!this.flushFrame) this.flushFrame = requestAnimationFrame(() => this.flush());
  }

  setAtTop(atTop: boolean): void {
    const was = this.atTop;
    this.atTop = atTop;
    if (this.on && atTop && !was) this.flush();
    if (this.on && was !== atTop) drawStatus();
  }

  private flush(): void {
    this.flushFrame = 0;
    if (!this.on || !this.atTop) {
      drawStatus();
      return;
    }
    const batch = this.pending.reverse();
    this.pending = [];
    table.setEmpty(null);
    table.prepend(batch, (hit) => this.fresh.has(hit));
    drawStatus();
  }

  /** New matches per second over the last 10 seconds. */
  private rate(): number {
    const now = performance.now();
    this.arrivals = this.arrivals.filter((t) => now - t < 10_000);
    return this.arrivals.length / 10;
  }

  statusHtml(): string {
    let html = `<span class="live-badge">● LIVE</span><b class="tail-count">${formatCount(this.received)}</b> events<span class="sep">·</span><span class="rate" title="new matches per second, over the last 10 s">${this.rate().toFixed(1)}/s</span>`;
    if (!this.atTop) {
      html += `<span class="sep">·</span><button class="btn small paused" data-resume>Paused${this.pending.length ? ` — ${formatCount(this.pending.length)} new` : ''} · back to top</button>`;
    }
    return html;
  }
}

const live = new LiveTail();
liveBtn.addEventListener('click', () => live.toggle());
statusEl.addEventListener('click', (e) => {
  if ((e.target as HTMLElement).closest('[data-resume]')) table.scrollElement.scrollTop = 0;
});

// ---- start ----

syncControls();
table.setColumns(view.columns, view.sort === 'relevance');
fieldList.setColumns(view.columns);
writeUrl(false);
run();
window.__quarry.initMs = performance.now() - initStarted;
