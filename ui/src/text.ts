// Text helpers: HTML escaping, the query's terms as a highlighting pattern, number and time
// formats, byte offsets (the server's error positions) to string indexes.

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

const OPERATORS = new Set(['AND', 'OR', 'NOT', 'TO', '&&', '||']);

/** What a query looks for, to highlight: its words and phrases, each either for every field
 * (bare words) or for one (`field:word`); negated clauses, ranges, regular expressions and
 * `*` are left out. `forField(name)` is the pattern to mark in that field's value. */
export class Highlighter {
  private readonly general: string[] = [];
  private readonly scoped = new Map<string, string[]>();
  private readonly cache = new Map<string, RegExp | null>();

  constructor(query: string) {
    // Tokens: an optional sign and field, then a phrase, regex, range or run of text.
    const token = /(-|!|\+)?(?:((?:[^\s:()"\\]|\\.)+):=?)?("(?:[^"\\]|\\.)*"|\/(?:[^/\\]|\\.)*\/|[[{][^\]}]*[\]}]|\((?:[^()"]|"[^"]*")*\)|[^\s()"]+)/g;
    let nextNegated = false;
    for (const match of query.matchAll(token)) {
      const [, sign, field, body] = match;
      if (!field && OPERATORS.has(body)) {
        nextNegated = body === 'NOT';
        continue;
      }
      const negated = nextNegated || sign === '-' || sign === '!';
      nextNegated = false;
      if (negated) continue;
      const name = field ? field.replace(/\\(.)/g, '$1') : null;
      if (name === '_exists_' || name === '_time') continue;
      // `level:(warn OR error)`: each word inside, for that field.
      const bodies = body.startsWith('(') ? body.slice(1, -1).split(/\s+/).filter((w) => w && !OPERATORS.has(w)) : [body];
      for (const item of bodies) {
        const pattern = termRegex(item);
        if (!pattern) continue;
        if (name === null) this.general.push(pattern);
        else this.scoped.set(name, [...(this.scoped.get(name) ?? []), pattern]);
      }
    }
  }

  /** Every term, whatever its field (for the whole event as JSON). */
  any(): RegExp | null {
    return this.forField('\u0000any');
  }

  forField(name: string): RegExp | null {
    if (this.cache.has(name)) return this.cache.get(name)!;
    const scoped = name === '\u0000any' ? [...this.scoped.values()].flat() : (this.scoped.get(name) ?? []);
    const parts = [...this.general, ...scoped];
    let regex: RegExp | null = null;
    if (parts.length) {
      try {
        regex = new RegExp(`(?<![\\p{L}\\p{N}_])(?:${parts.join('|')})(?![\\p{L}\\p{N}_])`, 'giu');
      } catch {
        regex = null;
      }
    }
    this.cache.set(name, regex);
    return regex;
  }
}

/** One word or phrase of a query as a pattern source; null for what is not highlighted. */
function termRegex(body: string): string | null {
  let text = body;
  if (text.startsWith('/') || text.startsWith('[') || text.startsWith('{')) return null;
  if (/^[<>]=?/.test(text)) return null;
  text = text.replace(/[~^][\d.]*$/, '');
  if (text.startsWith('"')) {
    const phrase = text.slice(1, -1).replace(/\\(.)/g, '$1').trim();
    return phrase ? phrase.split(/\s+/).map(escapeRegex).join('[^\\p{L}\\p{N}]+') : null;
  }
  text = text.replace(/\\(.)/g, '$1');
  if (!text || /^[*?]+$/.test(text)) return null;
  return escapeRegex(text).replace(/\\\*/g, '[\\p{L}\\p{N}_]*').replace(/\\\?/g, '[\\p{L}\\p{N}_]');
}

function escapeRegex(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
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
