import { XMLParser, XMLValidator } from 'fast-xml-parser';
import type { Logger } from '../platform/logger.ts';
import { joinUrl } from '../util/url.ts';

/**
 * The European Central Bank's daily reference rates (docs/design.md §14), the one upstream of the `fx`
 * source: `GET ${FX_URL}/stats/eurofxref/eurofxref-daily.xml`, the real `gesmes:Envelope` file.
 * A sample of what this reads (the real file, shortened; attributes in single quotes as the ECB
 * writes them):
 *
 *   <?xml version="1.0" encoding="UTF-8"?>
 *   <gesmes:Envelope xmlns:gesmes="http://www.gesmes.org/xml/2002-08-01" xmlns="http://www.ecb.int/vocabulary/2002-08-01/eurofxref">
 *     <gesmes:subject>Reference rates</gesmes:subject>
 *     <gesmes:Sender><gesmes:name>European Central Bank</gesmes:name></gesmes:Sender>
 *     <Cube>
 *       <Cube time='2026-11-24'>
 *         <Cube currency='USD' rate='1.0834'/>
 *         <Cube currency='JPY' rate='161.20'/>
 *         …
 *
 * A rate is units of the currency per 1 EUR, kept as the exact decimal text the ECB wrote (attribute
 * values are never parsed into numbers: money and rates never pass through a JS float). The parser
 * is strict where the file could carry garbage into conversions: the document must be well-formed
 * XML (a truncated file or an HTML error page is rejected whole), each day needs a real
 * `YYYY-MM-DD` date and a valid USD rate (every conversion divides by it), and a rate entry whose
 * code is not three upper-case letters, repeats, names EUR itself, or whose rate is not a positive
 * plain decimal is skipped and counted, never stored.
 */

export const ECB_DAILY_PATH = 'stats/eurofxref/eurofxref-daily.xml';
/** The real file is ~1.5 KB; anything far larger is not it, and is not read into memory further. */
const MAX_BODY_BYTES = 1_000_000;
/** The ECB publishes the reference date in CET; a day ahead of UTC allows for that and small clock skew. */
const MAX_FUTURE_MS = 86_400_000;

/** One ECB date's rates: ISO 4217 code → units per 1 EUR, exact decimal text (EUR itself is not listed). */
export type EcbRateDay = { date: string; rates: ReadonlyMap<string, string> };
export type EcbParseResult = {
  days: EcbRateDay[];
  /** Rate entries skipped as malformed (odd code, duplicate, bad or non-positive rate). */
  skipped: number;
  /** Why days or entries were left out, for the log (at most a few). */
  problems: string[];
};

/** The fx upstream did not give usable rates (HTTP error, timeout, malformed or hostile body). */
export class FxUnavailableError extends Error {
  constructor(message: string) {
    super(`fx: ${message}`);
    this.name = 'FxUnavailableError';
  }
}

const parser = new XMLParser({
  ignoreAttributes: false,
  attributeNamePrefix: '@_',
  // Rates stay the exact text of the file; tag text is never read as a number either.
  parseAttributeValue: false,
  parseTagValue: false,
  // `gesmes:Envelope` and the default-namespace `Cube` read as `Envelope` and `Cube`.
  removeNSPrefix: true,
  // The file has no entities; none are expanded (no entity tricks from a hostile body).
  processEntities: false,
  ignoreDeclaration: true,
  ignorePiTags: true,
});

const CURRENCY = /^[A-Z]{3}$/;
// A plain positive decimal of sane size: the ECB writes 4-6 significant digits ("1.0834", "16865.17").
const RATE = /^(0|[1-9][0-9]{0,8})(\.[0-9]{1,10})?$/;
const DATE = /^([0-9]{4})-([0-9]{2})-([0-9]{2})$/;

type XmlNode = Record<string, unknown>;

function isNode(value: unknown): value is XmlNode {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A repeated element reads as an array, a single one as an object: always a list of nodes here. */
function nodes(value: unknown): XmlNode[] {
  const list = Array.isArray(value) ? value : value === undefined ? [] : [value];
  return list.filter(isNode);
}

/** `YYYY-MM-DD` naming a real calendar day, or null. */
function calendarDate(text: unknown): string | null {
  if (typeof text !== 'string') return null;
  const match = DATE.exec(text);
  if (!match) return null;
  const [year, month, day] = [Number(match[1]), Number(match[2]), Number(match[3])];
  const at = new Date(Date.UTC(year, month - 1, day));
  return at.getUTCFullYear() === year && at.getUTCMonth() === month - 1 && at.getUTCDate() === day ? text : null;
}

function isPositiveRate(text: unknown): text is string {
  return typeof text === 'string' && RATE.test(text) && /[1-9]/.test(text);
}

/**
 * The rates of an ECB reference-rates file (the daily one has one day; the same format with several
 * `Cube time=…` elements gives several). Throws FxUnavailableError when the body is not that file or
 * has no usable day.
 */
export function parseEcbRates(text: string, now: Date): EcbParseResult {
  if (text.length > MAX_BODY_BYTES) throw new FxUnavailableError(`body of ${text.length} characters is not the ECB file`);
  // Checked first: the parser itself reads a truncated document up to where it stops without complaint.
  // (XMLValidator is marked deprecated in favour of a separate package; it is the same validator.)
  const valid = XMLValidator.validate(text);
  if (valid !== true) throw new FxUnavailableError(`invalid XML (line ${valid.err.line}: ${valid.err.msg})`);
  const document: unknown = parser.parse(text);
  const envelope = isNode(document) ? document.Envelope : undefined;
  if (!isNode(envelope)) throw new FxUnavailableError('not an ECB gesmes:Envelope document');
  const outer = nodes(envelope.Cube);
  if (outer.length !== 1) throw new FxUnavailableError('the Envelope has no Cube of rates');

  const days: EcbRateDay[] = [];
  const problems: string[] = [];
  let skipped = 0;
  const seenDates = new Set<string>();
  for (const dayNode of nodes(outer[0]!.Cube)) {
    const date = calendarDate(dayNode['@_time']);
    if (date === null) {
      problems.push(`a day with time ${JSON.stringify(dayNode['@_time'] ?? null)} is not a YYYY-MM-DD date`);
      continue;
    }
    if (Date.parse(`${date}T00:00:00Z`) > now.getTime() + MAX_FUTURE_MS) {
      problems.push(`day ${date} is in the future`);
      continue;
    }
    if (seenDates.has(date)) {
      problems.push(`day ${date} appears twice`);
      continue;
    }
    seenDates.add(date);
    const rates = new Map<string, string>();
    for (const entry of nodes(dayNode.Cube)) {
      const currency = entry['@_currency'];
      const rate = entry['@_rate'];
      if (typeof currency !== 'string' || !CURRENCY.test(currency) || currency === 'EUR' || rates.has(currency) || !isPositiveRate(rate)) {
        skipped += 1;
        if (problems.length < 10) problems.push(`day ${date}: skipped ${JSON.stringify(currency ?? null)} = ${JSON.stringify(rate ?? null)}`);
        continue;
      }
      rates.set(currency, rate);
    }
    // Every conversion divides by the USD rate (prices are stored in USD): a day without one is useless.
    if (!rates.has('USD')) {
      problems.push(`day ${date} has no valid USD rate`);
      continue;
    }
    days.push({ date, rates });
  }
  if (days.length === 0) throw new FxUnavailableError(`no usable day of rates${problems.length > 0 ? ` (${problems.slice(0, 3).join('; ')})` : ''}`);
  return { days, skipped, problems };
}

export type EcbFetchOptions = { baseUrl: string; timeoutMs: number; log: Logger };

function describe(error: unknown, timeoutMs: number): string {
  if (error instanceof DOMException && error.name === 'TimeoutError') return `timed out after ${timeoutMs} ms`;
  return `request failed: ${error instanceof Error ? error.message : String(error)}`;
}

/**
 * One GET of the daily file under `timeoutMs` (headers and body), as the source adapters do
 * (shared/sources/upstream.ts). Any non-2xx status, network error or timeout → FxUnavailableError.
 */
export async function fetchEcbDaily(options: EcbFetchOptions): Promise<string> {
  const url = joinUrl(options.baseUrl, ECB_DAILY_PATH);
  const started = performance.now();
  try {
    const response = await fetch(url, {
      headers: { accept: 'application/xml, text/xml' },
      signal: AbortSignal.timeout(options.timeoutMs),
      redirect: 'follow',
    });
    options.log.debug({ source: 'fx', url, status: response.status, ms: Math.round(performance.now() - started) }, 'upstream response');
    if (response.status < 200 || response.status > 299) {
      await response.body?.cancel().catch(() => undefined);
      throw new FxUnavailableError(`HTTP ${response.status}`);
    }
    // A body announced far larger than the file is not read at all.
    const length = Number(response.headers.get('content-length') ?? 0);
    if (length > MAX_BODY_BYTES) {
      await response.body?.cancel().catch(() => undefined);
      throw new FxUnavailableError(`body of ${length} bytes is not the ECB file`);
    }
    return await response.text();
  } catch (error) {
    if (error instanceof FxUnavailableError) throw error;
    throw new FxUnavailableError(describe(error, options.timeoutMs));
  }
}
