// The web UI in a real browser (Debian's chromium driven by playwright-core) against a real
// `quarry serve`. Run by crates/quarry/tests/ui_browser.rs, which starts the server with
// generated logs; by hand:
//
//   node ui/tests/browser.mjs --url http://127.0.0.1:7380 --from 2026-11-01T00:00:00Z --to 2026-11-02T00:00:00Z [--shots DIR] [--measure]
//
// Each step checks what the page shows against the API's own answer for the same request,
// writes a screenshot to --shots, and the timings go to DIR/metrics.json. Exits non-zero on
// the first failed check. --measure runs only the timing steps (for a large data directory).
import { chromium } from 'playwright-core';
import { mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const args = Object.fromEntries(
  process.argv.slice(2).reduce((pairs, arg, i, all) => {
    if (arg.startsWith('--')) pairs.push([arg.slice(2), all[i + 1] && !all[i + 1].startsWith('--') ? all[i + 1] : true]);
    return pairs;
  }, []),
);
const base = String(args.url ?? 'http://127.0.0.1:7380').replace(/\/$/, '');
const from = String(args.from ?? 'now-24h');
const to = String(args.to ?? 'now');
const shots = String(args.shots ?? 'target/ui-screenshots');
const tenant = 'default';
const uiDir = join(dirname(fileURLToPath(import.meta.url)), '..');
mkdirSync(shots, { recursive: true });

const metrics = {};
let step = 'start';
function check(condition, message) {
  if (!condition) throw new Error(`${step}: ${message}`);
}
function log(...parts) {
  console.log(`[${step}]`, ...parts);
}

/** JSON with object keys sorted: equal for equal values whatever the key order. */
function canonical(value) {
  return JSON.stringify(value, (_k, v) => (v && typeof v === 'object' && !Array.isArray(v) ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : 1))) : v));
}

async function api(endpoint, params) {
  const response = await fetch(`${base}/api/v1/${tenant}/${endpoint}?${new URLSearchParams(params)}`);
  return { status: response.status, body: await response.json() };
}
function rangeParams(f = from, t = to) {
  const p = [];
  if (f) p.push(['start', f]);
  if (t && t !== 'now') p.push(['end', t]);
  return p;
}
async function apiCount(query, f, t) {
  const { status, body } = await api('search', [['query', query || '*'], ...rangeParams(f, t), ['limit', '0'], ['count', 'true']]);
  check(status === 200, `API search ${query}: ${status} ${JSON.stringify(body)}`);
  return body.count;
}

/** The bytes the browser downloads for the page, gzipped as the server sends them. */
function bundleSize() {
  const dist = join(uiDir, 'dist');
  const files = ['index.html', ...readdirSync(join(dist, 'assets')).map((f) => `assets/${f}`)];
  let raw = 0;
  let gzip = 0;
  for (const f of files) {
    const bytes = readFileSync(join(dist, f));
    raw += bytes.length;
    gzip += gzipSync(bytes, { level: 9 }).length;
  }
  return { files: files.length, raw_bytes: raw, gzip_bytes: gzip };
}

const browser = await chromium.launch({
  executablePath: process.env.QUARRY_CHROMIUM || '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-dev-shm-usage'],
});
const context = await browser.newContext({ viewport: { width: 1440, height: 900 }, deviceScaleFactor: 1 });
const page = await context.newPage();
const requests = [];
page.on('request', (r) => requests.push(r.url()));
page.on('pageerror', (e) => console.error('page error:', e.message));
page.on('console', (m) => m.type() === 'error' && console.error('console:', m.text()));

const searches = () => page.evaluate(() => window.__quarry.searches.length);
async function waitSearch(count, what) {
  await page.waitForFunction((n) => window.__quarry.searches.length > n, count, { timeout: 30_000 }).catch(() => {
    throw new Error(`${step}: no search finished after ${what}`);
  });
  return page.evaluate(() => window.__quarry.searches.at(-1));
}
async function shownCount() {
  return Number(await page.getAttribute('.status .hits', 'data-count'));
}
async function shot(name) {
  await page.screenshot({ path: join(shots, `${name}.png`) });
}
async function currentUrl() {
  return new URL(page.url());
}

try {
  const query0 = args.measure ? String(args.query ?? '*') : '';
  if (!args['auth-tenant']) {
    // ---- first paint ----
    step = 'first paint';
    const start = `${base}/?${new URLSearchParams({ ...(query0 ? { q: query0 } : {}), from, to })}`;
    // A cold load first (nothing cached), then warm loads as a user reopening the page.
    const paints = [];
    for (let i = 0; i < 5; i++) {
      const p = i === 0 ? page : await context.newPage();
      await p.goto(start, { waitUntil: 'load' });
      await p.waitForFunction(() => window.__quarry && window.__quarry.searches.length > 0, null, { timeout: 30_000 });
      // Paint timings are reported once the frame is presented, which on a busy machine can
      // come after the first search is recorded: wait for them rather than read them early.
      await p.waitForFunction(() => {
        const names = performance.getEntriesByType('paint').map((e) => e.name);
        return names.includes('first-paint') && names.includes('first-contentful-paint');
      }, null, { timeout: 30_000 });
      const timing = await p.evaluate(() => {
        const paint = Object.fromEntries(performance.getEntriesByType('paint').map((e) => [e.name, e.startTime]));
        const nav = performance.getEntriesByType('navigation')[0];
        return { fp: paint['first-paint'], fcp: paint['first-contentful-paint'], dcl: nav.domContentLoadedEventEnd, load: nav.loadEventEnd, first: window.__quarry.searches[0] };
      });
      paints.push(timing);
      if (p !== page) await p.close();
    }
    metrics.first_paint_ms = paints.map((t) => +t.fp.toFixed(1));
    metrics.first_contentful_paint_ms = paints.map((t) => +t.fcp.toFixed(1));
    // The search a page load starts, timed as any other: on a fresh page its frame is also
    // the page's first layout of the histogram and table.
    metrics.first_search = paints.map((t) => ({ server_ms: +t.first.serverMs.toFixed(1), fetch_ms: +t.first.fetchMs.toFixed(1), render_ms: +t.first.renderMs.toFixed(1) }));
    log('first paint (ms, cold then warm):', metrics.first_paint_ms.join(', '), '· FCP', metrics.first_contentful_paint_ms.join(', '));
    log('the load\'s own search rendered (ms after the answer):', metrics.first_search.map((f) => f.render_ms).join(', '));
    metrics.bundle = bundleSize();
    log('bundle:', metrics.bundle);
  }

  if (args['auth-tenant']) {
    // A server with keys: the page asks for the tenant's key on the 401, keeps it in session
    // storage, and then searches with it.
    step = 'api key';
    const name = String(args['auth-tenant']);
    const key = String(args['auth-key']);
    await page.goto(`${base}/?${new URLSearchParams({ tenant: name, from: '', to: 'now' })}`);
    await page.waitForSelector('#tenant-modal:not([hidden])', { timeout: 15_000 });
    const bar = await page.innerText('#error-bar');
    check(bar.includes('401'), `the error bar says 401: ${bar}`);
    await shot('10-api-key');
    const before = await searches();
    await page.fill('#tenant-key', 'qk_wrong');
    await page.click('#tenant-form button[type=submit]');
    await page.waitForSelector('#tenant-modal:not([hidden])', { timeout: 15_000 });
    check((await page.innerText('#tenant-reason')).includes('invalid API key'), 'a wrong key is refused with the server message');
    await page.fill('#tenant-key', key);
    await page.click('#tenant-form button[type=submit]');
    const s = await waitSearch(before, 'entering the key');
    const response = await fetch(`${base}/api/v1/${name}/search?query=*&limit=0&count=true`, { headers: { Authorization: `Bearer ${key}` } });
    const count = (await response.json()).count;
    check((await shownCount()) === count && count > 0, `page shows ${await shownCount()} hits with the key, API ${count}`);
    check((await page.evaluate((n) => sessionStorage.getItem('quarry.key.' + n), name)) === key, 'the key is in session storage');
    check((await page.evaluate(() => localStorage.length)) === 0 || !(await page.evaluate(() => JSON.stringify(localStorage))).includes(key), 'the key is not in local storage');
    log('401 asked for the key; with it', count, 'hits, as the API; rendered', s.renderMs.toFixed(1), 'ms');
    await shot('11-with-key');
    // The live tail sends the key too (fetch, not EventSource): its history is every event.
    await page.click('#live-btn');
    await page.waitForFunction((n) => document.querySelector('#table').dataset.rows === String(n), Math.min(100, count), { timeout: 15_000 });
    check((await page.locator('.status .live-badge').count()) === 1 && (await page.locator('#error-bar').isHidden()), 'the tail runs with the key');
    log('the live tail with the key streamed', Math.min(100, count), 'events');
  } else if (args.measure) {
    // The search of a query over the whole data: histogram and the first 100 rows drawn.
    step = 'measure';
    const queries = String(args.queries ?? '*|level:error|service:nginx AND status:>=500|failed OR timeout').split('|');
    metrics.searches = [];
    for (const q of queries) {
      for (let i = 0; i < 5; i++) {
        const before = await searches();
        await page.fill('#query', q);
        await page.press('#query', 'Enter');
        if (i > 0 || q !== query0) {
          // The same query again is not a new view: press the button to re-run.
        }
        const s = await waitSearch(before, `query ${q}`).catch(async () => {
          await page.click('#search-btn');
          return waitSearch(before, `query ${q} (again)`);
        });
        metrics.searches.push({ query: q, rows: s.rows, buckets: s.buckets, server_ms: s.serverMs, fetch_ms: +s.fetchMs.toFixed(1), render_ms: +s.renderMs.toFixed(1), count: await shownCount() });
        log(q, '→', await shownCount(), 'hits; server', s.serverMs.toFixed(1), 'ms; fetch', s.fetchMs.toFixed(1), 'ms; rendered', s.renderMs.toFixed(1), 'ms after the answer');
      }
    }
    await shot('measure');
  } else {
    await shot('01-loaded');

    // ---- a query: the count, the histogram and the rows are the API's ----
    step = 'query';
    let before = await searches();
    await page.fill('#query', 'level:error');
    await page.press('#query', 'Enter');
    let s = await waitSearch(before, 'Enter');
    const errorCount = await apiCount('level:error');
    check(errorCount > 100, `expected more than 100 errors in the data, the API says ${errorCount}`);
    check((await shownCount()) === errorCount, `page shows ${await shownCount()} hits, API ${errorCount}`);
    const histTotal = Number(await page.getAttribute('#histogram', 'data-total'));
    check(histTotal === errorCount, `histogram sums to ${histTotal}, API count ${errorCount}`);
    check(Number(await page.getAttribute('#histogram', 'data-buckets')) > 5, 'histogram has buckets');
    check((await page.locator('#histogram canvas').count()) > 0, 'histogram canvas drawn');
    check(Number(await page.getAttribute('#table', 'data-rows')) === 100, 'first page is 100 rows');
    const firstApi = (await api('search', [['query', 'level:error'], ...rangeParams(), ['sort', 'time_desc'], ['limit', '1']])).body.hits[0];
    const firstRowText = await page.locator('.row[data-index="0"] .cell.time').innerText();
    check(firstRowText.includes(firstApi._time.slice(11, 19)), `first row ${firstRowText} is the API's newest ${firstApi._time}`);
    check((await page.locator('.row[data-index="0"] mark').count()) > 0, 'the query term is highlighted in the first row');
    check((await currentUrl()).searchParams.get('q') === 'level:error', 'the URL holds the query');
    metrics.query = { query: 'level:error', count: errorCount, server_ms: s.serverMs, render_ms: +s.renderMs.toFixed(1) };
    log('count', errorCount, 'matches the API; rendered', s.renderMs.toFixed(1), 'ms after the answer');
    await shot('02-query');

    // ---- zoom by dragging across the histogram ----
    step = 'zoom';
    const over = await page.locator('#histogram .u-over').boundingBox();
    check(over, 'histogram plot area');
    before = await searches();
    await page.mouse.move(over.x + over.width * 0.3, over.y + over.height / 2);
    await page.mouse.down();
    await page.mouse.move(over.x + over.width * 0.45, over.y + over.height / 2, { steps: 5 });
    await page.mouse.move(over.x + over.width * 0.6, over.y + over.height / 2, { steps: 5 });
    await page.mouse.up();
    s = await waitSearch(before, 'dragging across the histogram');
    const zoomed = await currentUrl();
    const zf = zoomed.searchParams.get('from');
    const zt = zoomed.searchParams.get('to');
    check(/^\d{4}-\d\d-\d\dT/.test(zf) && /^\d{4}-\d\d-\d\dT/.test(zt), `the URL holds an absolute range: ${zf} → ${zt}`);
    const outerFrom = Date.parse(from);
    const outerTo = Date.parse(to);
    if (!Number.isNaN(outerFrom) && !Number.isNaN(outerTo)) {
      const span = outerTo - outerFrom;
      check(Date.parse(zf) > outerFrom + span * 0.2 && Date.parse(zt) < outerTo - span * 0.3, `zoomed range ${zf} → ${zt} is the dragged 30%–60% of ${from} → ${to}`);
    }
    const zoomCount = await apiCount('level:error', zf, zt);
    check(zoomCount > 0 && zoomCount < errorCount, `zoomed count ${zoomCount} is a part of ${errorCount}`);
    check((await shownCount()) === zoomCount, `page shows ${await shownCount()}, API ${zoomCount} for the zoomed range`);
    check(Number(await page.getAttribute('#histogram', 'data-total')) === zoomCount, 'zoomed histogram sums to the count');
    log('dragged to', zf, '→', zt, '·', zoomCount, 'hits, as the API');
    await shot('03-zoomed');

    // A click on a bar zooms into its bucket.
    const over2 = await page.locator('#histogram .u-over').boundingBox();
    before = await searches();
    await page.mouse.click(over2.x + over2.width * 0.5, over2.y + over2.height - 3);
    await waitSearch(before, 'clicking a bar');
    const bar = await currentUrl();
    const [bf, bt] = [bar.searchParams.get('from'), bar.searchParams.get('to')];
    const barSeconds = (Date.parse(bt) - Date.parse(bf)) / 1000;
    check([1, 5, 10, 30, 60, 300, 600, 1800, 3600].includes(barSeconds) && Date.parse(bf) >= Date.parse(zf) && Date.parse(bt) <= Date.parse(zt) + barSeconds * 1000, `a bar click zooms to one bucket: ${bf} → ${bt}`);
    const barCount = await apiCount('level:error', bf, bt);
    check((await shownCount()) === barCount && barCount > 0, `page shows ${await shownCount()}, API ${barCount} for the bar`);
    log('clicked a bar:', bf, '→', bt, '·', barCount, 'hits');
    before = await searches();
    await page.goBack();
    await waitSearch(before, 'Back');

    // back to the whole range (the browser's Back button: the view is the URL)
    before = await searches();
    await page.goBack();
    await waitSearch(before, 'Back');
    check((await currentUrl()).searchParams.get('from') === from, 'Back restores the range');

    // ---- a field's top values, and a click on one ----
    step = 'field';
    await page.click('.field[data-field="service"] .field-head');
    await page.waitForSelector('.field[data-field="service"] .value', { timeout: 15_000 });
    const valueEl = page.locator('.field[data-field="service"] .value').first();
    const value = await valueEl.getAttribute('data-value');
    const valueCount = Number(await valueEl.getAttribute('data-count'));
    await shot('04-field-values');
    before = await searches();
    await valueEl.locator('.vtext').click();
    s = await waitSearch(before, 'clicking a field value');
    const expected = `level:error AND service:="${value}"`;
    const shownQuery = await page.inputValue('#query');
    check(shownQuery === expected, `query box says ${shownQuery}, expected ${expected}`);
    const filteredCount = await apiCount(expected);
    check(filteredCount === valueCount, `the sidebar counted ${valueCount} for ${value}, the API ${filteredCount}`);
    check((await shownCount()) === filteredCount, `page shows ${await shownCount()}, API ${filteredCount}`);
    const rowsServices = await page.evaluate(() =>
      [...document.querySelectorAll('.row .kv')].filter((kv) => kv.querySelector('.k').textContent === 'service').map((kv) => kv.querySelector('.v').textContent),
    );
    check(rowsServices.length > 0 && rowsServices.every((t) => t === value), `rows show only service ${value}: ${rowsServices.slice(0, 3)}`);
    log('clicked', value, '→', filteredCount, 'hits, as the sidebar and the API say');
    await shot('05-filtered');
    // and a negation: the top host of these, filtered out
    await page.click('.field[data-field="host"] .field-head');
    await page.waitForSelector('.field[data-field="host"] .value', { timeout: 15_000 });
    const hostEl = page.locator('.field[data-field="host"] .value').first();
    const host = await hostEl.getAttribute('data-value');
    const hostCount = Number(await hostEl.getAttribute('data-count'));
    before = await searches();
    await hostEl.locator('.minus').click();
    await waitSearch(before, 'filtering a value out');
    const negated = `${expected} AND NOT host:="${host}"`;
    check((await page.inputValue('#query')) === negated, `query box says ${await page.inputValue('#query')}, expected ${negated}`);
    const negatedCount = await apiCount(negated);
    check(negatedCount === filteredCount - hostCount, `${negatedCount} hits without ${host} = ${filteredCount} - ${hostCount}`);
    check((await shownCount()) === negatedCount, `page shows ${await shownCount()}, API ${negatedCount}`);
    log('filtered out', host, '→', negatedCount, 'hits');
    await page.click('.field[data-field="host"] .field-head'); // fold it
    before = await searches();
    await page.goBack();
    await waitSearch(before, 'Back');
    check((await page.inputValue('#query')) === expected, 'Back restores the query');

    // ---- a row expands into its event ----
    step = 'expand';
    const topHit = (await api('search', [['query', expected], ...rangeParams(), ['sort', 'time_desc'], ['limit', '1']])).body.hits[0];
    await page.click('.row[data-index="0"] .cell.time');
    await page.waitForSelector('.row[data-index="0"] pre.json');
    const shownJson = JSON.parse(await page.locator('.row[data-index="0"] pre.json').innerText());
    check(JSON.stringify(shownJson) === JSON.stringify({ _time: topHit._time, ...topHit.event }), `expanded row ${JSON.stringify(shownJson)} is the API's ${JSON.stringify(topHit)}`);
    log('row 0 expanded into', Object.keys(shownJson).length, 'fields, the API event');
    await shot('06-expanded');

    // ---- fields as columns ----
    step = 'columns';
    for (const field of ['level', 'host', 'message']) {
      await page.hover(`.field[data-field="${field}"] .field-head`);
      await page.click(`.field[data-field="${field}"] .col-btn`);
    }
    const headers = await page.locator('.thead .cell').allInnerTexts();
    check(JSON.stringify(headers.map((h) => h.toLowerCase())) === JSON.stringify(['time (utc)', 'level', 'host', 'message']), `columns ${headers}`);
    check((await currentUrl()).searchParams.get('cols') === 'level,host,message', 'the URL holds the columns');
    const cells = await page.locator('.row[data-index="0"] .cell.col').allInnerTexts();
    check(cells[0] === topHit.event.level && cells[1] === topHit.event.host && cells[2] === topHit.event.message, `row 0 columns ${cells}`);
    await page.click('.row[data-index="0"] .cell.time'); // fold it again
    await shot('06b-columns');

    // ---- paging by scrolling (search_after) ----
    step = 'scroll';
    before = await searches();
    await page.fill('#query', '*');
    await page.press('#query', 'Enter');
    await waitSearch(before, 'query *');
    const all = await apiCount('*');
    check(Number(await page.getAttribute('#table', 'data-rows')) === 100, 'starts with 100 rows');
    const pagedBefore = requests.filter((u) => u.includes('search_after=')).length;
    const target = Math.min(all, Number(args.rows ?? 100_000));
    const scrollStart = Date.now();
    for (let i = 0; i < 400; i++) {
      const rows = Number(await page.getAttribute('#table', 'data-rows'));
      if (rows >= target) break;
      await page.evaluate(() => {
        const el = document.querySelector('.tscroll');
        el.scrollTop = el.scrollHeight;
      });
      await page.waitForFunction((n) => Number(document.querySelector('#table').dataset.rows) > n, rows, { timeout: 15_000 });
    }
    const rowsNow = Number(await page.getAttribute('#table', 'data-rows'));
    const paged = requests.filter((u) => u.includes('search_after=')).length - pagedBefore;
    check(rowsNow >= Math.min(target, 1100) && paged >= 1, `scrolling loaded ${rowsNow} rows with ${paged} search_after requests`);
    // The rows loaded are the API's, in order: compare the last row with the API's hit at that rank.
    const lastShown = await page.evaluate(() => {
      const el = document.querySelector('.tscroll');
      el.scrollTop = el.scrollHeight;
      return null;
    });
    void lastShown;
    await page.waitForTimeout(100);
    const lastIndex = rowsNow - 1;
    const lastRowTime = await page.locator(`.row[data-index="${lastIndex}"] .cell.time`).innerText();
    const apiAt = (await api('search', [['query', '*'], ...rangeParams(), ['sort', 'time_desc'], ['limit', String(Math.min(rowsNow, 10000))]])).body.hits;
    if (rowsNow <= 10000) check(lastRowTime.includes(apiAt[lastIndex]._time.slice(11, 19)), `row ${lastIndex} ${lastRowTime} is the API's ${apiAt[lastIndex]._time}`);
    metrics.scroll = { rows: rowsNow, search_after_requests: paged, load_seconds: (Date.now() - scrollStart) / 1000 };
    log(rowsNow, 'rows after', paged, 'search_after pages');
    // Smoothness: frame times while scrolling through all of them at speed.
    const frames = await page.evaluate(async () => {
      const el = document.querySelector('.tscroll');
      el.scrollTop = 0;
      const times = [];
      let last = performance.now();
      const step = Math.max(2000, el.scrollHeight / 240);
      await new Promise((done) => {
        const tick = () => {
          const now = performance.now();
          times.push(now - last);
          last = now;
          if (el.scrollTop + el.clientHeight >= el.scrollHeight - 1 || times.length > 400) return done();
          el.scrollTop += step;
          requestAnimationFrame(tick);
        };
        requestAnimationFrame(tick);
      });
      times.shift();
      times.sort((a, b) => a - b);
      const pick = (q) => times[Math.min(times.length - 1, Math.floor(q * times.length))];
      return { frames: times.length, p50_ms: pick(0.5), p95_ms: pick(0.95), max_ms: times.at(-1), dom_rows: document.querySelectorAll('.row:not([hidden])').length };
    });
    metrics.scroll.frames = frames;
    log('scrolling', rowsNow, 'rows: frame p50', frames.p50_ms.toFixed(1), 'ms, p95', frames.p95_ms.toFixed(1), 'ms, max', frames.max_ms.toFixed(1), 'ms;', frames.dom_rows, 'rows in the DOM');
    check(frames.dom_rows < 200, `virtualised: ${frames.dom_rows} rows in the DOM`);
    await shot('07-scrolled');

    // ---- live tail: an event ingested meanwhile appears on top ----
    step = 'live tail';
    before = await searches();
    await page.fill('#query', 'tailmarker OR level:error');
    await page.press('#query', 'Enter');
    await waitSearch(before, 'query for the tail');
    await page.click('#live-btn');
    await page.waitForSelector('.status .live-badge');
    await page.waitForFunction(() => window.__quarry.tailEvents > 0, null, { timeout: 15_000 });
    const marker = `tailmarker-${Date.now().toString(36)}`;
    const event = { message: `deploy ${marker} finished`, level: 'info', service: 'ui-test', latency_ms: 12 };
    const ingest = await fetch(`${base}/api/v1/${tenant}/ingest`, { method: 'POST', headers: { 'Content-Type': 'application/x-ndjson' }, body: JSON.stringify(event) + '\n' });
    check(ingest.status === 200, `ingest ${ingest.status}`);
    const ingestedAt = Date.now();
    await page.waitForFunction((m) => document.querySelector('.row[data-index="0"]')?.textContent.includes(m), marker, { timeout: 15_000 });
    metrics.tail_appear_ms = Date.now() - ingestedAt;
    await page.click('.row[data-index="0"] .cell.time');
    const tailJson = JSON.parse(await page.locator('.row[data-index="0"] pre.json').innerText());
    const { _time, ...tailEvent } = tailJson;
    check(canonical(tailEvent) === canonical(event), `the tail's row ${JSON.stringify(tailJson)} is the event ingested ${JSON.stringify(event)}`);
    check(/\/s/.test(await page.locator('.status .rate').innerText()), 'rate counter shown');
    log('ingested', marker, 'and saw it on top after', metrics.tail_appear_ms, 'ms');
    await shot('08-live-tail');
    // Scrolled down, the tail pauses: a new match waits, counted, until the view is back on top.
    await page.click('.row[data-index="0"] .cell.time'); // fold it
    await page.evaluate(() => (document.querySelector('.tscroll').scrollTop = 600));
    await page.waitForSelector('.status [data-resume]');
    const rowsBeforePause = Number(await page.getAttribute('#table', 'data-rows'));
    const marker2 = `tailmarker-${(Date.now() + 1).toString(36)}`;
    const paused = await fetch(`${base}/api/v1/${tenant}/ingest`, { method: 'POST', headers: { 'Content-Type': 'application/x-ndjson' }, body: JSON.stringify({ ...event, message: `deploy ${marker2} finished` }) + '\n' });
    check(paused.status === 200, `ingest ${paused.status}`);
    await page.waitForFunction(() => document.querySelector('.status [data-resume]')?.textContent.includes('1 new'), null, { timeout: 15_000 });
    const drawn = await page.evaluate((m) => [...document.querySelectorAll('.row:not([hidden])')].some((r) => r.textContent.includes(m)), marker2);
    check(!drawn && Number(await page.getAttribute('#table', 'data-rows')) === rowsBeforePause, 'paused: the new event is not in the table yet');
    await shot('08b-live-tail-paused');
    await page.click('.status [data-resume]');
    await page.waitForFunction((m) => document.querySelector('.row[data-index="0"]')?.textContent.includes(m), marker2, { timeout: 15_000 });
    check((await page.locator('.row[data-index="1"]').innerText()).includes(marker), 'the first tail event is second now');
    log('paused while scrolled down; the event waiting came in on return to the top');
    // A new query while live restarts the tail with it: its history is that query's matches
    // (the two events sent, on fresh data).
    const markers = Math.min(100, await apiCount('tailmarker', '', ''));
    await page.fill('#query', 'tailmarker');
    await page.press('#query', 'Enter');
    await page.waitForFunction((n) => document.querySelector('#table').dataset.rows === String(n) && document.querySelector('.status .live-badge'), markers, { timeout: 15_000 });
    check((await page.locator('.row[data-index="0"]').innerText()).includes(marker2), 'the restarted tail shows the newest first');
    log(`a new query while live restarted the tail: ${markers} rows`);
    before = await searches();
    await page.click('#live-btn');
    await waitSearch(before, 'stopping the live tail');

    // ---- relevance (BM25) ----
    step = 'relevance';
    before = await searches();
    await page.fill('#query', 'tailmarker OR level:error');
    await page.press('#query', 'Enter');
    await waitSearch(before, 'the query for relevance');
    before = await searches();
    await page.selectOption('#sort', 'relevance');
    await waitSearch(before, 'sort by relevance');
    const scores = await page.locator('.row .cell.score').allInnerTexts();
    const apiScores = (await api('search', [['query', 'tailmarker OR level:error'], ...rangeParams(), ['sort', 'relevance'], ['limit', '3']])).body.hits.map((h) => h.score.toFixed(3));
    check(JSON.stringify(scores.slice(0, 3)) === JSON.stringify(apiScores), `scores ${scores.slice(0, 3)} are the API's ${apiScores}`);
    await page.selectOption('#sort', 'time_desc');

    // ---- a bad query: the error underlined where the server says ----
    step = 'bad query';
    const bad = 'level:error AND (service:api OR "connection reset';
    const answer = await api('search', [['query', bad]]);
    check(answer.status === 400 && typeof answer.body.position === 'number', `API answers 400 with a position: ${JSON.stringify(answer.body)}`);
    await page.fill('#query', bad);
    await page.press('#query', 'Enter');
    await page.waitForSelector('#error-bar:not([hidden])');
    await page.waitForSelector('.error-mark');
    const markIndex = Number(await page.getAttribute('.error-mark', 'data-index'));
    check(markIndex === answer.body.position, `underline at ${markIndex}, server position ${answer.body.position}`);
    check((await page.locator('.error-mark').innerText()) === bad[answer.body.position], 'the underlined character is the one at the position');
    // and it sits under that character of the input: the text before it has the same width
    const geometry = await page.evaluate((n) => {
      const input = document.querySelector('#query');
      const style = getComputedStyle(input);
      const canvas = document.createElement('canvas').getContext('2d');
      canvas.font = `${style.fontSize} ${style.fontFamily}`;
      const mark = document.querySelector('.error-mark').getBoundingClientRect();
      const box = input.getBoundingClientRect();
      return { expected: box.left + parseFloat(style.paddingLeft) + parseFloat(style.borderLeftWidth) + canvas.measureText(input.value.slice(0, n)).width, actual: mark.left };
    }, markIndex);
    check(Math.abs(geometry.expected - geometry.actual) < 2, `underline at x=${geometry.actual}, the character at x=${geometry.expected}`);
    check((await page.innerText('#error-bar')).includes(answer.body.error), 'the server message is shown');
    log('underlined character', markIndex, 'as the server says:', answer.body.error);
    await shot('09-bad-query');
    // The server names a byte offset; before a multi-byte character it is not the string index.
    const accented = 'café AND (level:error';
    const accentedAnswer = await api('search', [['query', accented]]);
    const byte = accentedAnswer.body.position;
    const index = Buffer.from(accented).subarray(0, byte).toString().length;
    check(accentedAnswer.status === 400 && byte !== index && accented[index] === '(', `position ${byte} is byte-based (character ${index})`);
    await page.fill('#query', accented);
    await page.press('#query', 'Enter');
    await page.waitForFunction((i) => document.querySelector('.error-mark')?.dataset.index === String(i), index, { timeout: 15_000 });
    check((await page.locator('.error-mark').innerText()) === '(', 'the unclosed parenthesis is underlined');
    log('after a multi-byte character: byte', byte, 'underlined as character', index);
  }
  writeFileSync(join(shots, args['auth-tenant'] ? 'metrics-auth.json' : 'metrics.json'), JSON.stringify(metrics, null, 2) + '\n');
  console.log('METRICS ' + JSON.stringify(metrics));
  await browser.close();
} catch (error) {
  await shot(`failed-${step.replace(/\W+/g, '-')}`).catch(() => {});
  console.error('FAILED', error.message);
  await browser.close();
  process.exit(1);
}
