// The server's HTTP API (crates/quarry-server/openapi.json), with the tenant's key.

export interface Hit {
  _time: string;
  score: number | null;
  event: Record<string, unknown>;
  _cursor?: string;
}

export interface Bucket {
  start: string;
  count: number;
}

export interface TermsResult {
  buckets: { key: string; count: number }[];
  other_count: number;
}

export interface SearchAnswer {
  hits: Hit[];
  count?: number;
  histogram?: Bucket[];
  aggregations?: Record<string, TermsResult>;
  warnings: { message: string }[];
  partial: boolean;
  took_ms: number;
}

export interface FieldInfo {
  name: string;
  types: Record<string, number>;
  events: number;
  full_text: boolean;
}

/** An answer other than 2xx: its status, the server's message and, for a bad query, the
 * byte offset it names. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly position: number | null,
    readonly retryAfter: number | null,
  ) {
    super(message);
  }
}

const KEY_STORAGE = 'quarry.key.';

export function keyFor(tenant: string): string | null {
  return sessionStorage.getItem(KEY_STORAGE + tenant);
}

export function setKey(tenant: string, key: string | null): void {
  if (key) sessionStorage.setItem(KEY_STORAGE + tenant, key);
  else sessionStorage.removeItem(KEY_STORAGE + tenant);
}

function headers(tenant: string): Record<string, string> {
  const key = keyFor(tenant);
  return key ? { Authorization: `Bearer ${key}` } : {};
}

async function failure(response: Response): Promise<ApiError> {
  let message = `${response.status} ${response.statusText}`;
  let position: number | null = null;
  try {
    const body = await response.json();
    if (typeof body.error === 'string') message = body.error;
    if (typeof body.position === 'number') position = body.position;
  } catch {
    // not JSON: keep the status line
  }
  const retry = Number(response.headers.get('retry-after'));
  return new ApiError(response.status, message, position, Number.isFinite(retry) && retry > 0 ? retry : null);
}

function url(tenant: string, endpoint: string, params: [string, string][]): string {
  const query = new URLSearchParams(params).toString();
  return `/api/v1/${encodeURIComponent(tenant)}/${endpoint}${query ? '?' + query : ''}`;
}

/** GET and parse; `onResponse` is called when the answer's head has arrived. */
export async function getJson<T>(
  tenant: string,
  endpoint: string,
  params: [string, string][],
  signal?: AbortSignal,
  onResponse?: () => void,
): Promise<T> {
  const response = await fetch(url(tenant, endpoint, params), { headers: headers(tenant), signal });
  onResponse?.();
  if (!response.ok) throw await failure(response);
  return (await response.json()) as T;
}

export interface TailEvent {
  _time: string;
  event: Record<string, unknown>;
}

/** The live tail as a fetch() stream (EventSource cannot send the Authorization header):
 * parses Server-Sent Events and calls `onHit` for each `event: hit`. Resolves when the
 * stream ends; rejects with ApiError when the server refuses it. */
export async function tail(
  tenant: string,
  query: string,
  history: number,
  signal: AbortSignal,
  onOpen: () => void,
  onHit: (hit: TailEvent) => void,
  onDropped: () => void,
): Promise<void> {
  const response = await fetch(url(tenant, 'tail', [['query', query], ['history', String(history)]]), {
    headers: { ...headers(tenant), Accept: 'text/event-stream' },
    signal,
  });
  if (!response.ok || !response.body) throw await failure(response);
  onOpen();
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += value;
    let end: number;
    // Events are separated by a blank line.
    while ((end = buffer.search(/\r?\n\r?\n/)) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end).replace(/^\r?\n\r?\n/, '');
      let kind = 'message';
      const data: string[] = [];
      for (const line of block.split(/\r?\n/)) {
        if (line.startsWith('event:')) kind = line.slice(6).trim();
        else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
      }
      if (kind === 'hit' && data.length) onHit(JSON.parse(data.join('\n')) as TailEvent);
      else if (kind === 'dropped') onDropped();
    }
  }
}
