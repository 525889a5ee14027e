// The query syntax help (QUERY_LANGUAGE.md, shortened); a click on an example puts it in the box.
const rows: [string, string][] = [
  ['payment failed', 'bare words search every text field (OR, ranked by BM25)'],
  ['"connection reset"', 'a phrase; <code>"disk full"~2</code> allows words between'],
  ['level:error AND service:api', 'a field; AND, OR, NOT, parentheses'],
  ['-status:200', 'without (also <code>NOT status:200</code>)'],
  ['level:(warn OR error)', 'any of several values of one field'],
  ['host:="web-1"', 'the whole value, exactly'],
  ['status:>=500', 'numbers: <code>&gt; &gt;= &lt; &lt;=</code>, ranges <code>latency:[100 TO 500]</code>'],
  ['err* OR /time(d)?out/', 'prefix, wildcard, regular expression over a token'],
  ['usr~1', 'fuzzy: up to 1 or 2 edits'],
  ['_exists_:client_ip', 'events that have the field'],
  ['_time:[now-15m TO now]', 'a time range in the query (the picker sets one too)'],
];

export const HELP_HTML = `<div class="help-grid">${rows
  .map(([example, what]) => `<code data-example>${example.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;')}</code><span>${what}</span>`)
  .join('')}</div><div class="muted small">Enter runs the query · ↑/↓ recent queries · <kbd>/</kbd> focuses the box · drag across the histogram (or click a bar) to zoom · click a row to see its event · <kbd>Esc</kbd> closes</div>`;
