import { z } from 'zod';
import { quoteFor, usdConverter } from '../fx/convert.ts';
import { type CurrencyTable, loadCurrencyTable, offeredCurrencies, resolveCurrency } from '../fx/currencies.ts';
import type { FxRates } from '../fx/repository.ts';
import { ApiError, errors } from '../http/errors.ts';
import type { Queryable } from '../platform/db.ts';

/**
 * Prices in the user's currency (docs/design.md §14): stored prices stay USD; an answer asked for with
 * `?currency=X` has every money field converted from USD (shared/fx), its top-level `currency` set to
 * X and a top-level `fx` saying how. This module is the part every price-bearing route shares: the
 * query parameter and the conversion of an answer's money fields.
 */

/**
 * `?currency=`: an upper-case ISO 4217 code. Whether the code is supported (EUR or a currency of the
 * newest ECB file, or a Steam wallet currency with a Steam-implied rate: docs/design.md §19) is decided against
 * the stored rates, after this format check.
 */
export const currencyParam = z
  .string()
  .regex(/^[A-Z]{3}$/, 'currency must be an upper-case ISO 4217 code such as EUR or USD')
  .describe(
    "ISO 4217 code (default `USD`): every price in the answer is converted from USD, at the newest ECB reference rates for EUR and the ECB currencies, or for the Steam wallet currencies the ECB does not publish (RUB, UAH, KZT, VND, CLP, PEN, COP, TWD, SAR, AED, ARS, KWD, QAR, CRC, UYU) at a rate implied by Steam's own prices; `fx` says how. GET /v2/meta/currencies lists what is offered; a Steam wallet currency not offered now is a 503 `fx_unavailable` naming the reason, an unknown code a 400",
  );

export const fxSchema = z
  .object({
    base: z.literal('USD'),
    quote: z.string().describe('The requested currency'),
    rate: z.string().describe('Units of `quote` per USD, 8 decimal places (informative: each amount is converted exactly, then rounded once)'),
    as_of: z
      .string()
      .describe('`ecb`: the ECB reference date of the rates; `steam-implied`: the UTC date of the Steam basket read that gave the rate (YYYY-MM-DD)'),
    source: z
      .enum(['ecb', 'steam-implied'])
      .describe(
        "`ecb`: the European Central Bank's daily reference rates; `steam-implied`: the median over a fixed basket of liquid items of their lowest Steam price in the currency over their lowest Steam price in USD (Steam wallet currencies the ECB does not publish)",
      ),
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
 * each is a USD decimal string or null (`mean`: a sales window's, docs/design.md §19). Other fields (counts, `spread`, which is a ratio, names) are
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

// The newest rates (ECB and Steam-implied), read at most once per RATES_TTL_MS per database handle:
// they change every few hours, and a price answer should not cost a query for them. "No ECB rates
// yet" is never cached.
const RATES_TTL_MS = 5_000;
const ratesCache = new WeakMap<object, { at: number; table: CurrencyTable }>();
// Conversions per rate set and currency: the quote is a decimal division, ~15 µs a request.
const conversions = new WeakMap<FxRates, Map<string, Conversion>>();

/** Forgets the cached rates of `db` (tests that store a newer set and read it back at once). */
export function forgetCachedRates(db: Queryable): void {
  ratesCache.delete(db);
}

/** The currency table (ECB set and Steam-implied rates) of `db`, cached as above. */
export async function latestCurrencyTable(db: Queryable): Promise<CurrencyTable> {
  const cached = ratesCache.get(db);
  if (cached && performance.now() - cached.at < RATES_TTL_MS) return cached.table;
  const table = await loadCurrencyTable(db);
  if (table.ecb) ratesCache.set(db, { at: performance.now(), table });
  return table;
}

/**
 * The conversion an answer needs for `?currency=` (null for USD or no parameter: nothing to do).
 * An unknown code is a 400 naming it and the supported ones; no ECB rates stored yet is a 503
 * `fx_unavailable` for everything but a Steam-implied currency with a rate; a Steam wallet currency
 * that is not offered now (too few basket prices, never read, steam disabled) is a 503
 * `fx_unavailable` naming the reason (docs/design.md §19: never guessed).
 */
export async function resolveConversion(db: Queryable, currency: string | undefined, field = 'query.currency'): Promise<Conversion | null> {
  if (currency === undefined || currency === 'USD') return null;
  const table = await latestCurrencyTable(db);
  const resolution = resolveCurrency(table, currency);
  if (resolution.kind === 'unavailable') {
    throw new ApiError(
      503,
      'fx_unavailable',
      `${currency} is not offered now: ${resolution.reason}. GET /v2/meta/currencies lists the currencies offered; prices are available in USD.`,
    );
  }
  if (resolution.kind === 'unknown') {
    if (!table.ecb)
      throw new ApiError(503, 'fx_unavailable', 'No exchange rates have been fetched yet; prices are available in USD. Retry shortly.', undefined, {
        'retry-after': '30',
      });
    throw errors.invalidRequest(`unsupported currency ${JSON.stringify(currency)}; one of ${offeredCurrencies(table).join(', ')}`, [
      { field, message: `unsupported currency ${currency}` },
    ]);
  }
  const rates = resolution.rates;
  let byCurrency = conversions.get(rates);
  if (!byCurrency) conversions.set(rates, (byCurrency = new Map()));
  let conversion = byCurrency.get(currency);
  if (!conversion) {
    const exact = { quote: rates.rates.get(currency)!, usd: rates.rates.get('USD')! };
    byCurrency.set(currency, (conversion = { currency, fx: quoteFor(rates, currency), convert: usdConverter(rates, currency), rates: exact }));
  }
  return conversion;
}
