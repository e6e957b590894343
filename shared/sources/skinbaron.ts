import { convertToUsd } from '../fx/convert.ts';
import type { FxRates } from '../fx/repository.ts';
import { joinUrl } from '../util/url.ts';
import { acceptablePrice, decimalFromJsonNumber, isPositiveDecimal } from './money.ts';
import { type FetchContext, type SourceAdapter, type SourceFetchResult, type SourceObservation, SourceUnavailableError } from './types.ts';
import { isRecord, numberText } from './upstream.ts';
import { bareArray, fetchWholeMarket } from './whole-market.ts';

/**
 * SkinBaron (docs/design.md §14), the one source priced in EUR and the one that needs a key: `POST
 * ${SOURCE_SKINBARON_URL}/GetExtendedPriceList` with the JSON body `{apikey, appId: 730}` and the
 * header `x-requested-with: XMLHttpRequest` answers the whole market as a bare array of
 * `{marketHashName, lowestPrice, minWear, maxWear, imageUrl, dopplerClassName}`, `lowestPrice` the
 * lowest ask in EUR as a JSON number (its source text is the value; a string is accepted too).
 *
 * - Prices are stored in USD: EUR × rate(USD) of the newest stored ECB rates (units per EUR, given
 *   by the run as `context.rates`), computed exactly (integer arithmetic) and rounded once half-even to 2
 *   places (shared/fx/convert.ts convertToUsd). The EUR text is kept as `original` and shown beside
 *   the price, never converted by `?currency=`. Without stored rates the run fails before any request:
 *   EUR is never stored as USD.
 * - `dopplerClassName` is not documented: a row carrying one (a string that is not empty) is the price
 *   of some Doppler phase whose naming we cannot map safely, so it is left out and skinbaron prices
 *   only the `default` version (a row without one).
 * - `lowestPrice` null: nothing for sale, left out; not a positive decimal, or above MAX_PRICE_USD once
 *   converted (or below a cent): skipped and counted, as the other marketplaces do.
 * - SkinBaron publishes no median, buy order, sales count or listing count here: `median_price`, `bid`,
 *   `volume_7d` and `quantity` are null. `minWear`, `maxWear` and `imageUrl` are not read.
 * - The key (SOURCE_SKINBARON_KEY) travels only in the request body, which is never logged, and is
 *   scrubbed from error messages. Budget: 1 request per 60 s (docs/design.md §13's rule for the marketplaces
 *   whose limits are not published).
 */

/** Without a Retry-After, wait the whole window out. */
const DEFAULT_RETRY_AFTER_MS = 60_000;

/*
 * Sample raw row:
 * {"marketHashName":"AK-47 | Redline (Field-Tested)","lowestPrice":27.95,"minWear":0.15,"maxWear":0.38,
 *  "imageUrl":"https://steamcommunity-a.akamaihd.net/economy/image/-9a81dlWLwJ2UUGcVs_nsVtzdOEdtWwKGZZLQHTxDZ7I56KU0Zwwo4NUX4oFJZEHLbXH5ApeO4YmlhxYQknCRvCo04DEVlxkKgpot7HxfDhjxszJemkV09-5lpKKqPrxN7LEmyVQ7MEpiLuSrYmnjQO3-UdsZGHyd4_Bd1RvNQ7T_FDrw-_ng5Pu75iY1zI97bhLsvQz/",
 *  "dopplerClassName":null}
 */
export function parseSkinbaronRow(row: unknown, now: Date, rates: FxRates): SourceObservation | 'malformed' | 'unpriced' {
  if (!isRecord(row)) return 'malformed';
  const name = row.marketHashName;
  if (typeof name !== 'string' || name.trim() === '') return 'malformed';
  const doppler = row.dopplerClassName;
  if (doppler !== null && doppler !== undefined && typeof doppler !== 'string') return 'malformed';
  // A phase's own price (docs/design.md §14: skinbaron prices only `default`).
  if (typeof doppler === 'string' && doppler.trim() !== '') return 'unpriced';
  if (row.lowestPrice === null) return 'unpriced';
  const eurText = numberText(row.lowestPrice);
  const eur = eurText === null ? null : decimalFromJsonNumber(eurText);
  if (eur === null || !isPositiveDecimal(eur)) return 'malformed';
  const usd = acceptablePrice(convertToUsd(eur, rates, 'EUR'));
  if (usd === null) return 'malformed';
  return {
    market_hash_name: name,
    version: 'default',
    price: usd,
    median_price: null,
    bid: null,
    volume_7d: null,
    quantity: null,
    source_time: now,
    original: { price: eur, currency: 'EUR' },
  };
}

export const skinbaron: SourceAdapter = {
  name: 'skinbaron',
  defaultBudget: { requests: 1, windowSeconds: 60 },
  defaultIntervalSeconds: 300,
  needsNames: false,
  listsWholeMarket: true,
  priceCurrency: 'EUR',
  requiredKey: 'SOURCE_SKINBARON_KEY',
  async fetchSnapshot(context: FetchContext): Promise<SourceFetchResult> {
    // The run checks both before calling (shared/sources/settings.ts, workers/ingest/run.ts); these
    // guard direct callers, before any request is spent.
    const apiKey = context.apiKey;
    if (!apiKey) throw new SourceUnavailableError('skinbaron', 'SOURCE_SKINBARON_KEY is not set');
    const rates = context.rates;
    if (!rates?.rates.has('USD')) throw new SourceUnavailableError('skinbaron', 'no exchange rates stored: EUR prices cannot be stored as USD');
    return fetchWholeMarket(context, {
      source: 'skinbaron',
      url: joinUrl(context.baseUrl, '/GetExtendedPriceList'),
      headers: { 'x-requested-with': 'XMLHttpRequest' },
      json: { apikey: apiKey, appId: 730 },
      defaultRetryAfterMs: DEFAULT_RETRY_AFTER_MS,
      secretValues: [apiKey],
      rows: bareArray('skinbaron'),
      parseRow: (row, now) => parseSkinbaronRow(row, now, rates),
    });
  },
};
