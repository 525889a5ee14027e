// Text helpers: HTML escaping, the query's terms as a highlighting pattern, number and time
// formats, byte offsets (the server's error positions) to string indexes.

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

const OPERATORS = new Set(['AND', 'OR', 'NOT', 'TO', '&&', '||']);

/** The words and phrases a query looks for, as one case-insensitive pattern; negated
 * clauses, ranges, regular expressions and `*` are left out. Null when there is nothing. */
export function termPattern(query: string): RegExp | null {
  const parts: string[] = [];
  // Tokens: phrases, regexes, ranges, or runs without spaces/parentheses.
  const token = /(-|!|\+)?(?:[\w.@-]+:=?)?("(?:[^"\\]|\\.)*"|\/(?:[^/\\]|\\.)*\/|[[{][^\]}]*[\]}]|[^\s()"]+)/g;
  let negatedGroup = 0;
  let nextNegated = false;
  for (const match of query.matchAll(token)) {
    const [, sign, body] = match;
    if (OPERATORS.has(body)) {
      nextNegated = body === 'NOT';
      continue;
    }
    const negated = nextNegated || sign === '-' || sign === '!' || negatedGroup > 0;
    nextNegated = false;
    if (negated) continue;
    let text = body;
    if (text.startsWith('/') || text.startsWith('[') || text.startsWith('{')) continue;
    if (/^[<>]=?/.test(text)) continue;
    text = text.replace(/[~^][\d.]*$/, '');
    if (text.startsWith('"')) {
      const phrase = text.slice(1, -1).replace(/\\(.)/g, '$1').trim();
      if (phrase) parts.push(phrase.split(/\s+/).map(escapeRegex).join('\\W+'));
      continue;
    }
    text = text.replace(/\\(.)/g, '$1');
    if (!text || text === '*' || text.startsWith('_exists_')) continue;
    const pattern = escapeRegex(text).replace(/\\\*/g, '[\\p{L}\\p{N}_]*').replace(/\\\?/g, '[\\p{L}\\p{N}_]');
    if (pattern.replace(/\[.*?\]\*/g, '').length < 1) continue;
    parts.push(pattern);
  }
  if (!parts.length) return null;
  try {
    return new RegExp(`(?<![\\p{L}\\p{N}_])(?:${parts.join('|')})(?![\\p{L}\\p{N}_])`, 'giu');
  } catch {
    return null;
  }
}

function escapeRegex(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\/-]/g, '\\$&');
}

/** `text` as HTML with every match of `pattern` in `<mark>`. */
export function highlight(text: string, pattern: RegExp | null): string {
  if (!pattern) return escapeHtml(text);
  let out = '';
  let last = 0;
  pattern.lastIndex = 0;
  for (const match of text.matchAll(pattern)) {
    const at = match.index ?? 0;
    if (!match[0].length) continue;
    out += escapeHtml(text.slice(last, at)) + '<mark>' + escapeHtml(match[0]) + '</mark>';
    last = at + match[0].length;
  }
  return out + escapeHtml(text.slice(last));
}

const numberFormat = new Intl.NumberFormat('en-US');

export function formatCount(n: number): string {
  return numberFormat.format(n);
}

/** `2026-11-23T15:48:55.773Z` shown as `2026-11-23 15:48:55.773` (UTC, as the server keeps it). */
export function formatTime(rfc3339: string): string {
  const match = /^(\d{4}-\d\d-\d\d)T(\d\d:\d\d:\d\d)(\.\d{1,3})?\d*Z$/.exec(rfc3339);
  if (!match) return rfc3339;
  return `${match[1]} ${match[2]}${(match[3] ?? '.000').padEnd(4, '0')}`;
}

/** A value as one line of text. */
export function valueText(value: unknown): string {
  if (value === null || value === undefined) return '';
  if (typeof value === 'string') return value;
  return JSON.stringify(value);
}

/** The UTF-16 index of byte offset `byte` of `text`'s UTF-8 encoding. */
export function byteToIndex(text: string, byte: number): number {
  let bytes = 0;
  let index = 0;
  for (const char of text) {
    if (bytes >= byte) return index;
    const code = char.codePointAt(0) ?? 0;
    bytes += code < 0x80 ? 1 : code < 0x800 ? 2 : code < 0x10000 ? 3 : 4;
    index += char.length;
  }
  return index;
}
