import type { SourceName } from '../platform/source-names.ts';
import { type FetchContext, type SourceFetchResult, SourceRateLimitedError, SourceUnavailableError } from './types.ts';

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

/** The reviver path of parseJsonExact: one JavaScript call per value of the document. */
export function parseJsonExactWithReviver(text: string): unknown {
  return (JSON.parse as (text: string, reviver: SourceTextReviver) => unknown)(text, reviveNumbers);
}

const QUOTE = 34; // "
const BACKSLASH = 92;
const OPEN_BRACE = 123;
const CLOSE_BRACE = 125;
const COLON = 58;
const MINUS = 45;

/**
 * The source text of every number of a valid JSON document, in document order, and the member count
 * of every object in the order their `{` appear. Strings are skipped whole (indexOf to the closing
 * quote), so a scan costs little more than reading the structure.
 */
function scanNumbersAndObjects(text: string): { numbers: string[]; members: number[] } {
  const numbers: string[] = [];
  const members: number[] = [];
  const open: number[] = [];
  const length = text.length;
  let i = 0;
  while (i < length) {
    const code = text.charCodeAt(i);
    if (code === QUOTE) {
      let end = text.indexOf('"', i + 1);
      // A quote preceded by an odd number of backslashes is escaped: keep looking.
      for (;;) {
        let slashes = 0;
        while (text.charCodeAt(end - 1 - slashes) === BACKSLASH) slashes += 1;
        if (slashes % 2 === 0) break;
        end = text.indexOf('"', end + 1);
      }
      i = end + 1;
    } else if (code === MINUS || (code >= 48 && code <= 57)) {
      const start = i;
      i += 1;
      for (;;) {
        const next = text.charCodeAt(i);
        // Digits, '.', 'e', 'E', '+', '-': the only characters a JSON number can continue with.
        if ((next >= 48 && next <= 57) || next === 46 || next === 101 || next === 69 || next === 43 || next === MINUS) i += 1;
        else break;
      }
      numbers.push(text.slice(start, i));
    } else {
      if (code === OPEN_BRACE) {
        open.push(members.length);
        members.push(0);
      } else if (code === CLOSE_BRACE) open.pop();
      else if (code === COLON) members[open[open.length - 1]!]! += 1;
      i += 1;
    }
  }
  return { numbers, members };
}

const NOT_IN_ORDER = Symbol('not in order');
const INTEGER_KEY = /^(?:0|[1-9][0-9]*)$/;

/**
 * Replaces every number of a parsed document by its source text, walking values in document order.
 * That order is the parsed objects' key order unless an object has an integer-like key (those come
 * first) or a repeated key (the last value stays, at the first one's place): both are detected (the
 * first key is checked; member counts differ) and answered NOT_IN_ORDER, as is any mismatch between a
 * number and its text.
 */
function attachNumberTexts(root: unknown, scan: { numbers: string[]; members: number[] }): unknown {
  let nextNumber = 0;
  let nextObject = 0;
  const visit = (value: unknown): unknown => {
    if (typeof value === 'number') {
      const source = scan.numbers[nextNumber++];
      if (source === undefined || Number(source) !== value) throw NOT_IN_ORDER;
      return new JsonNumber(source);
    }
    if (value === null || typeof value !== 'object') return value;
    if (Array.isArray(value)) {
      for (let index = 0; index < value.length; index += 1) {
        const item = value[index];
        if (item !== null && (typeof item === 'number' || typeof item === 'object')) value[index] = visit(item);
      }
      return value;
    }
    const record = value as Record<string, unknown>;
    const keys = Object.keys(record);
    if (keys.length !== scan.members[nextObject++] || (keys.length > 0 && INTEGER_KEY.test(keys[0]!))) throw NOT_IN_ORDER;
    for (const key of keys) {
      const item = record[key];
      if (item !== null && (typeof item === 'number' || typeof item === 'object')) record[key] = visit(item);
    }
    return record;
  };
  const result = visit(root);
  if (nextNumber !== scan.numbers.length || nextObject !== scan.members.length) throw NOT_IN_ORDER;
  return result;
}

/**
 * JSON.parse that never turns a number into a float: every number becomes a JsonNumber holding its
 * source text, so strings and numbers stay distinguishable ("2.30" the string is not 2.30 the number).
 * Throws SyntaxError on invalid JSON.
 *
 * Fast path: a plain (native) JSON.parse, then the numbers' texts from one scan of the document put
 * back in document order, about 3× faster than a reviver on an upstream's full price list (the
 * reviver is one JavaScript call per value). Documents whose parsed key order is not their text's
 * order (integer-like or repeated keys) take the reviver path; both give the same result.
 */
export function parseJsonExact(text: string): unknown {
  const parsed: unknown = JSON.parse(text);
  if (typeof parsed !== 'object' && typeof parsed !== 'number') return parsed;
  try {
    return attachNumberTexts(parsed, scanNumbersAndObjects(text));
  } catch (error) {
    if (error !== NOT_IN_ORDER) throw error;
    return parseJsonExactWithReviver(text);
  }
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
 * The text of a JSON number (its source text) or of a string: docs/design.md §13 accepts either where the
 * upstream documents the other. Null for anything else.
 */
export function numberText(value: unknown): string | null {
  if (value instanceof JsonNumber) return value.text;
  return typeof value === 'string' ? value : null;
}

/** A non-negative safe integer written as a JSON number or as a digit string ("12"), or null. */
export function countOf(value: unknown): number | null {
  if (typeof value === 'string') return integerOf(new JsonNumber(value));
  return integerOf(value);
}

/** An optional count: null when absent or null, 'malformed' when present but not a count (countOf). */
export function optionalCountOf(value: unknown): number | null | 'malformed' {
  if (value === null || value === undefined) return null;
  return countOf(value) ?? 'malformed';
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

export type UpstreamRequest = {
  source: SourceName;
  context: FetchContext;
  url: string;
  headers?: Record<string, string>;
  /** Backoff when a 429 carries no usable Retry-After. */
  defaultRetryAfterMs: number;
  /**
   * Query parameters carrying a secret (waxpeer's `api` key): their values are replaced by
   * `REDACTED` in the URL that is logged and in error messages.
   */
  secretQueryParameters?: readonly string[];
  /**
   * Secret values sent elsewhere than in the URL (skinbaron's key in the JSON body): replaced by
   * `REDACTED` in any error message, should a failure ever echo them.
   */
  secretValues?: readonly string[];
};

/** A POST of a JSON body (skinbaron): the body is never logged, since it may carry the key. */
export type UpstreamPostRequest = UpstreamRequest & { json: unknown };

export type UpstreamResponse = { status: number; body: unknown };

function describe(error: unknown, timeoutMs: number): string {
  if (error instanceof DOMException && error.name === 'TimeoutError') return `timed out after ${timeoutMs} ms`;
  if (error instanceof Error) return `request failed: ${error.message}`;
  return `request failed: ${String(error)}`;
}

const REDACTED = 'REDACTED';

/** `url` as it may be logged, and a function scrubbing the secret values out of any other text. */
function redaction(url: string, parameters: readonly string[] = [], values: readonly string[] = []): { loggedUrl: string; scrub: (text: string) => string } {
  const secrets: string[] = values.filter((value) => value !== '').flatMap((value) => [value, encodeURIComponent(value), JSON.stringify(value).slice(1, -1)]);
  if (parameters.length === 0 && secrets.length === 0) return { loggedUrl: url, scrub: (text) => text };
  const parsed = new URL(url);
  for (const name of parameters) {
    for (const value of parsed.searchParams.getAll(name)) if (value !== '') secrets.push(value, encodeURIComponent(value));
    if (parsed.searchParams.has(name)) parsed.searchParams.set(name, REDACTED);
  }
  const scrub = (text: string) => secrets.reduce((result, secret) => result.split(secret).join(REDACTED), text.split(url).join(parsed.toString()));
  return { loggedUrl: parsed.toString(), scrub };
}

/**
 * One GET: acquires from the budget first (its SourceRateLimitedError propagates), then fetches under
 * `context.timeoutMs` covering headers and body. 2xx bodies are parsed with parseJsonExact.
 */
export async function getJson(request: UpstreamRequest): Promise<UpstreamResponse> {
  return requestJson(request, { method: 'GET' });
}

/** One POST of `request.json` as `application/json`, otherwise exactly getJson (budget, timeout, errors, parsing). */
export async function postJson(request: UpstreamPostRequest): Promise<UpstreamResponse> {
  return requestJson(request, { method: 'POST', body: JSON.stringify(request.json), contentType: 'application/json' });
}

async function requestJson(request: UpstreamRequest, send: { method: 'GET' | 'POST'; body?: string; contentType?: string }): Promise<UpstreamResponse> {
  const { source, context, url } = request;
  const { loggedUrl, scrub } = redaction(url, request.secretQueryParameters, request.secretValues);
  await context.acquire();
  const started = performance.now();
  let status = 0;
  try {
    const response = await fetch(url, {
      method: send.method,
      headers: { accept: 'application/json', ...(send.contentType ? { 'content-type': send.contentType } : {}), ...request.headers },
      body: send.body,
      signal: AbortSignal.timeout(context.timeoutMs),
      redirect: 'follow',
    });
    status = response.status;
    // The URL only (secret query values redacted): never the headers or a request body, which may carry the API key.
    context.log.debug({ source, url: loggedUrl, status, ms: Math.round(performance.now() - started) }, 'upstream response');
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
    throw new SourceUnavailableError(source, scrub(describe(error, context.timeoutMs)));
  }
}

/** Attaches what a multi-request fetch had gathered to the error that stopped it; returns the error to rethrow. */
export function withPartial(error: unknown, partial: SourceFetchResult): unknown {
  if (error instanceof SourceRateLimitedError || error instanceof SourceUnavailableError) error.partial = partial;
  return error;
}
