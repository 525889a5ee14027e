// Time ranges as the server takes them: `now-15m`, RFC 3339, or empty for unbounded.

export interface TimeRange {
  from: string;
  to: string;
}

export const RELATIVE: { label: string; from: string }[] = [
  { label: 'Last 15 minutes', from: 'now-15m' },
  { label: 'Last 1 hour', from: 'now-1h' },
  { label: 'Last 24 hours', from: 'now-24h' },
  { label: 'Last 7 days', from: 'now-7d' },
  { label: 'Last 30 days', from: 'now-30d' },
  { label: 'All time', from: '' },
];

const UNIT_MS: Record<string, number> = { s: 1e3, m: 60e3, h: 3600e3, d: 86400e3, w: 7 * 86400e3 };

/** The range's bound in epoch milliseconds, or null when unbounded or not understood here. */
export function toMillis(text: string, now = Date.now()): number | null {
  const t = text.trim();
  if (!t) return null;
  const math = /^now(?:([+-])(\d+)([smhdw]))?$/.exec(t);
  if (math) {
    if (!math[1]) return now;
    const delta = Number(math[2]) * UNIT_MS[math[3]];
    return math[1] === '-' ? now - delta : now + delta;
  }
  const ms = Date.parse(/[zZ]|[+-]\d\d:?\d\d$/.test(t) || !t.includes('T') ? t : t + 'Z');
  return Number.isNaN(ms) ? null : ms;
}

export function describe(range: TimeRange): string {
  if (range.to === 'now' || range.to === '') {
    const known = RELATIVE.find((r) => r.from === range.from);
    if (known) return known.label;
    const m = /^now-(\d+)([smhdw])$/.exec(range.from);
    if (m) return `Last ${m[1]}${m[2]}`;
  }
  return `${short(range.from) || '…'} → ${short(range.to) || 'now'}`;
}

function short(text: string): string {
  return text.replace('T', ' ').replace(/(\.\d+)?Z$/, '');
}

export function isoMillis(ms: number): string {
  return new Date(ms).toISOString();
}
