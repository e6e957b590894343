import {
  SourceRateLimitedError,
  SourceUnavailableError,
  type FetchContext,
  type SourceFetchResult,
  type SourceName,
} from './types.ts';

/**
 * HTTP and JSON plumbing shared by the adapters: one request per call, each after `context.acquire()`
 * and under its own timeout; 429 → SourceRateLimitedError, anything else unexpected →
 * SourceUnavailableError. Adapters keep only their upstream's format.
 */

/** A JSON number, kept as the exact text the upstream wrote ("2.30", not 2.3). */
export class JsonNumber {
  constructor(readonly text: string) {}
}

type SourceTextReviver = (key: string, value: unknown, context?: { source?: string }) => unknown;

const reviveNumbers: SourceTextReviver = (_key, value, context) => {
  if (typeof value !== 'number') return value;
  // Bun (JavaScriptCore) passes the source text as the reviver's third argument (TC39 "JSON.parse source text access").
  if (typeof context?.source !== 'string') throw new Error('this runtime does not give JSON.parse revivers the source text');
  return new JsonNumber(context.source);
};

/**
 * JSON.parse that never turns a number into a float: every number becomes a JsonNumber holding its
 * source text, so strings and numbers stay distinguishable ("2.30" the string is not 2.30 the number).
 * Throws SyntaxError on invalid JSON.
 */
export function parseJsonExact(text: string): unknown {
  return (JSON.parse as (text: string, reviver: SourceTextReviver) => unknown)(text, reviveNumbers);
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof JsonNumber);
}

/** A JSON number holding a non-negative safe integer, or null. */
export function integerOf(value: unknown): number | null {
  if (!(value instanceof JsonNumber) || !/^(0|[1-9][0-9]{0,15})$/.test(value.text)) return null;
  const parsed = Number(value.text);
  return Number.isSafeInteger(parsed) ? parsed : null;
}

/**
 * `Retry-After` (RFC 9110 10.2.3): delay-seconds or an HTTP-date, in ms from `now`; `fallbackMs` when
 * absent or unreadable. A date in the past means "now" (0).
 */
export function parseRetryAfter(value: string | null | undefined, now: Date, fallbackMs: number): number {
  const trimmed = value?.trim();
  if (!trimmed) return fallbackMs;
  if (/^[0-9]+$/.test(trimmed)) {
    const seconds = Number(trimmed);
    return Number.isSafeInteger(seconds) ? seconds * 1000 : fallbackMs;
  }
  const at = Date.parse(trimmed);
  if (Number.isNaN(at)) return fallbackMs;
  return Math.max(0, at - now.getTime());
}

/** `base` + `path` with exactly one slash between them (`SOURCE_<NAME>_URL` may carry a path prefix). */
export function joinUrl(base: string, pathAndQuery: string): string {
  return `${base.replace(/\/+$/, '')}/${pathAndQuery.replace(/^\/+/, '')}`;
}

export type UpstreamRequest = {
  source: SourceName;
  context: FetchContext;
  url: string;
  headers?: Record<string, string>;
  /** Backoff when a 429 carries no usable Retry-After. */
  defaultRetryAfterMs: number;
};

export type UpstreamResponse = { status: number; body: unknown };

function describe(error: unknown, timeoutMs: number): string {
  if (error instanceof DOMException && error.name === 'TimeoutError') return `timed out after ${timeoutMs} ms`;
  if (error instanceof Error) return `request failed: ${error.message}`;
  return `request failed: ${String(error)}`;
}

/**
 * One GET: acquires from the budget first (its SourceRateLimitedError propagates), then fetches under
 * `context.timeoutMs` covering headers and body. 2xx bodies are parsed with parseJsonExact.
 */
export async function getJson(request: UpstreamRequest): Promise<UpstreamResponse> {
  const { source, context, url } = request;
  await context.acquire();
  const started = performance.now();
  let status = 0;
  try {
    const response = await fetch(url, {
      headers: { accept: 'application/json', ...request.headers },
      signal: AbortSignal.timeout(context.timeoutMs),
      redirect: 'follow',
    });
    status = response.status;
    // The URL only: never the headers, which may carry the API key.
    context.log.debug({ source, url, status, ms: Math.round(performance.now() - started) }, 'upstream response');
    if (status === 429) {
      await response.body?.cancel().catch(() => undefined);
      throw new SourceRateLimitedError(source, parseRetryAfter(response.headers.get('retry-after'), context.now(), request.defaultRetryAfterMs));
    }
    if (status < 200 || status > 299) {
      await response.body?.cancel().catch(() => undefined);
      throw new SourceUnavailableError(source, `HTTP ${status}`);
    }
    const text = await response.text();
    try {
      return { status, body: parseJsonExact(text) };
    } catch (error) {
      if (error instanceof SyntaxError) throw new SourceUnavailableError(source, `unparseable body (HTTP ${status}, ${text.length} bytes)`);
      throw error;
    }
  } catch (error) {
    if (error instanceof SourceRateLimitedError || error instanceof SourceUnavailableError) throw error;
    throw new SourceUnavailableError(source, describe(error, context.timeoutMs));
  }
}

/** Attaches what a multi-request fetch had gathered to the error that stopped it; returns the error to rethrow. */
export function withPartial(error: unknown, partial: SourceFetchResult): unknown {
  if (error instanceof SourceRateLimitedError || error instanceof SourceUnavailableError) error.partial = partial;
  return error;
}
