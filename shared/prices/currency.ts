import { z } from 'zod';
import type { Queryable } from '../platform/db.ts';
import { ApiError, errors } from '../http/errors.ts';
import { isSupportedCurrency, quoteFor, supportedCurrencies, usdConverter } from '../fx/convert.ts';
import { findLatestRates, type FxRates } from '../fx/repository.ts';

/**
 * Prices in the user's currency (DESIGN 14): stored prices stay USD; an answer asked for with
 * `?currency=X` has every money field converted from USD (shared/fx), its top-level `currency` set to
 * X and a top-level `fx` saying how. This module is the part every price-bearing route shares: the
 * query parameter and the conversion of an answer's money fields.
 */

/**
 * `?currency=`: an upper-case ISO 4217 code. Whether the code is supported (EUR or a currency of the
 * newest ECB file) is decided against the stored rates, after this format check.
 */
export const currencyParam = z
  .string()
  .regex(/^[A-Z]{3}$/, 'currency must be an upper-case ISO 4217 code such as EUR or USD')
  .describe('ISO 4217 code (default `USD`): every price in the answer is converted from USD at the newest ECB reference rates; `fx` says how');

export const fxSchema = z
  .object({
    base: z.literal('USD'),
    quote: z.string().describe('The requested currency'),
    rate: z.string().describe('Units of `quote` per USD, 8 decimal places (informative: each amount is converted exactly, then rounded once)'),
    as_of: z.string().describe('The ECB reference date of the rates (YYYY-MM-DD)'),
    source: z.literal('ecb'),
  })
  .describe('How the prices were converted; absent for USD');

export type FxInfo = z.infer<typeof fxSchema>;

/**
 * A conversion from USD to one currency: converts one decimal string exactly, rounded to the
 * currency's minor units. `rates` are the exact rates it uses (units per 1 EUR, decimal text as
 * stored), for work done elsewhere than in this thread (the derived keyless lists).
 */
export type Conversion = { currency: string; fx: FxInfo; convert: (usd: string) => string; rates: { quote: string; usd: string } };

/**
 * The money fields of the price documents (keyed and keyless prices, history points, summaries):
 * each is a USD decimal string or null. Other fields (counts, `spread`, which is a ratio, names) are
 * left alone, and so is anything under `original` (a source's own price in its own currency, never
 * converted).
 */
const MONEY_FIELDS = new Set(['price', 'median_price', 'bid', 'min', 'median', 'mean', 'max', 'best_ask', 'best_bid', 'open', 'high', 'low', 'close']);
const UNCONVERTED = new Set(['original']);

/** Converts, in place, every money field of a parsed JSON document. */
export function convertMoneyFields(value: unknown, convert: (usd: string) => string, extraFields?: ReadonlySet<string>): void {
  if (Array.isArray(value)) {
    for (const entry of value) convertMoneyFields(entry, convert, extraFields);
    return;
  }
  if (value === null || typeof value !== 'object') return;
  const record = value as Record<string, unknown>;
  for (const [key, field] of Object.entries(record)) {
    if (UNCONVERTED.has(key)) continue;
    if (typeof field === 'string' && (MONEY_FIELDS.has(key) || extraFields?.has(key))) record[key] = convert(field);
    else if (field !== null && typeof field === 'object') convertMoneyFields(field, convert, extraFields);
  }
}

/**
 * A USD document (its JSON text) in another currency: money fields converted, `currency` set and
 * `fx` placed right after it. The text is returned as is for USD (conversion null).
 */
export function convertDocumentText(json: string, conversion: Conversion | null, extraFields?: ReadonlySet<string>): string {
  if (!conversion) return json;
  const document = JSON.parse(json) as Record<string, unknown>;
  convertMoneyFields(document, conversion.convert, extraFields);
  return JSON.stringify(withCurrency(document, conversion));
}

/** The document's own keys with `currency` = the conversion's and `fx` right after it (added at the end when it has no `currency`). */
export function withCurrency<T extends Record<string, unknown>>(document: T, conversion: Pick<Conversion, 'currency' | 'fx'>): T {
  const out: Record<string, unknown> = {};
  let placed = false;
  for (const [key, value] of Object.entries(document)) {
    if (key === 'fx') continue;
    if (key === 'currency') {
      out.currency = conversion.currency;
      out.fx = conversion.fx;
      placed = true;
    } else out[key] = value;
  }
  if (!placed) {
    out.currency = conversion.currency;
    out.fx = conversion.fx;
  }
  return out as T;
}

// The newest rates, read at most once per RATES_TTL_MS per database handle: they change every few
// hours, and a price answer should not cost a query for them. "No rates yet" is never cached.
const RATES_TTL_MS = 5_000;
const ratesCache = new WeakMap<object, { at: number; rates: FxRates }>();
// Conversions per rate set and currency: the quote is a decimal division, ~15 µs a request.
const conversions = new WeakMap<FxRates, Map<string, Conversion>>();

/** Forgets the cached rates of `db` (tests that store a newer set and read it back at once). */
export function forgetCachedRates(db: Queryable): void {
  ratesCache.delete(db);
}

async function latestRates(db: Queryable): Promise<FxRates | null> {
  const cached = ratesCache.get(db);
  if (cached && performance.now() - cached.at < RATES_TTL_MS) return cached.rates;
  const rates = await findLatestRates(db);
  if (rates) ratesCache.set(db, { at: performance.now(), rates });
  return rates;
}

/**
 * The conversion an answer needs for `?currency=` (null for USD or no parameter: nothing to do).
 * An unsupported code is a 400 naming it and the supported ones; no rates stored yet is a 503
 * `fx_unavailable`.
 */
export async function resolveConversion(db: Queryable, currency: string | undefined, field = 'query.currency'): Promise<Conversion | null> {
  if (currency === undefined || currency === 'USD') return null;
  const rates = await latestRates(db);
  if (!rates) throw new ApiError(503, 'fx_unavailable', 'No exchange rates have been fetched yet; prices are available in USD. Retry shortly.', undefined, { 'retry-after': '30' });
  if (!isSupportedCurrency(rates, currency)) {
    const supported = ['USD', ...supportedCurrencies(rates).filter((code) => code !== 'USD')].join(', ');
    throw errors.invalidRequest(`unsupported currency ${JSON.stringify(currency)}; one of ${supported}`, [{ field, message: `unsupported currency ${currency}` }]);
  }
  let byCurrency = conversions.get(rates);
  if (!byCurrency) conversions.set(rates, (byCurrency = new Map()));
  let conversion = byCurrency.get(currency);
  if (!conversion) {
    const exact = { quote: rates.rates.get(currency)!, usd: rates.rates.get('USD')! };
    byCurrency.set(currency, (conversion = { currency, fx: quoteFor(rates, currency), convert: usdConverter(rates, currency), rates: exact }));
  }
  return conversion;
}
