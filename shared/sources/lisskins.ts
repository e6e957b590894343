import { joinUrl } from '../util/url.ts';
import { priceFromUsdText } from './money.ts';
import type { FetchContext, SourceAdapter, SourceFetchResult, SourceObservation } from './types.ts';
import { isRecord, numberText, optionalCountOf } from './upstream.ts';
import { bareArray, fetchWholeMarket } from './whole-market.ts';

/**
 * LIS-SKINS' public export `GET /market_export_json/csgo.json` (docs/design.md §13): one request answers the
 * whole market as a bare array, one row per market_hash_name, prices in USD as JSON numbers (read as
 * their source text; a string is accepted too). The ask is `price`, the price of items that can be
 * traded now; `unlocked_price` (trade-locked items excluded, or null) is not read. `quantity` =
 * `count` (listings). LIS-SKINS publishes no median, buy order or sales count, and no Doppler phase
 * in names: `median_price`, `bid` and `volume_7d` are null and every row is `default`. Budget: 1 request
 * per 60 s.
 */

/** Without a Retry-After, wait the whole window out. */
const DEFAULT_RETRY_AFTER_MS = 60_000;

/*
 * Sample raw row:
 * {"name":"AK-47 | Redline (Field-Tested)","price":32.06,"unlocked_price":31.4,"count":47,
 *  "url":"https://lis-skins.com/market/csgo/ak-47-redline-field-tested/"}
 */
export function parseLisskinsRow(row: unknown, now: Date): SourceObservation | 'malformed' {
  if (!isRecord(row)) return 'malformed';
  const name = row.name;
  if (typeof name !== 'string' || name.trim() === '') return 'malformed';
  const priceText = numberText(row.price);
  const price = priceText === null ? null : priceFromUsdText(priceText);
  if (price === null) return 'malformed';
  const quantity = optionalCountOf(row.count);
  if (quantity === 'malformed') return 'malformed';
  return { market_hash_name: name, version: 'default', price, median_price: null, bid: null, volume_7d: null, quantity, source_time: now };
}

export const lisskins: SourceAdapter = {
  name: 'lisskins',
  defaultBudget: { requests: 1, windowSeconds: 60 },
  defaultIntervalSeconds: 300,
  needsNames: false,
  listsWholeMarket: true,
  async fetchSnapshot(context: FetchContext): Promise<SourceFetchResult> {
    return fetchWholeMarket(context, {
      source: 'lisskins',
      url: joinUrl(context.baseUrl, '/market_export_json/csgo.json'),
      defaultRetryAfterMs: DEFAULT_RETRY_AFTER_MS,
      rows: bareArray('lisskins'),
      parseRow: parseLisskinsRow,
    });
  },
};
