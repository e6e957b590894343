import { joinUrl } from '../util/url.ts';
import { priceFromUsdText } from './money.ts';
import type { FetchContext, SourceAdapter, SourceFetchResult, SourceObservation } from './types.ts';
import { isRecord, numberText, optionalCountOf } from './upstream.ts';
import { bareArray, fetchWholeMarket } from './whole-market.ts';

/**
 * White.market's public export `GET /export/v1/prices/730.json` (docs/design.md §13): one request answers the
 * whole market as a bare array, one row per market_hash_name, `price` in USD written as a string
 * ("1.23") or a JSON number (1.23), both read as their text (exponent forms such as 1.5e1 expanded,
 * "15"). `quantity` = `market_product_count` (listings). No median, buy order, sales count or phase
 * in the export: `median_price`, `bid` and `volume_7d` are null and every row is `default`. Budget: 1
 * request per 60 s.
 */

/** Without a Retry-After, wait the whole window out. */
const DEFAULT_RETRY_AFTER_MS = 60_000;

/*
 * Sample raw row:
 * {"market_hash_name":"AK-47 | Redline (Field-Tested)","price":"31.87",
 *  "market_product_link":"https://white.market/item/ak-47-redline-field-tested","market_product_count":23}
 */
export function parseWhitemarketRow(row: unknown, now: Date): SourceObservation | 'malformed' {
  if (!isRecord(row)) return 'malformed';
  const name = row.market_hash_name;
  if (typeof name !== 'string' || name.trim() === '') return 'malformed';
  const priceText = numberText(row.price);
  const price = priceText === null ? null : priceFromUsdText(priceText);
  if (price === null) return 'malformed';
  const quantity = optionalCountOf(row.market_product_count);
  if (quantity === 'malformed') return 'malformed';
  return { market_hash_name: name, version: 'default', price, median_price: null, bid: null, volume_7d: null, quantity, source_time: now };
}

export const whitemarket: SourceAdapter = {
  name: 'whitemarket',
  defaultBudget: { requests: 1, windowSeconds: 60 },
  defaultIntervalSeconds: 300,
  needsNames: false,
  listsWholeMarket: true,
  async fetchSnapshot(context: FetchContext): Promise<SourceFetchResult> {
    return fetchWholeMarket(context, {
      source: 'whitemarket',
      url: joinUrl(context.baseUrl, '/export/v1/prices/730.json'),
      defaultRetryAfterMs: DEFAULT_RETRY_AFTER_MS,
      rows: bareArray('whitemarket'),
      parseRow: parseWhitemarketRow,
    });
  },
};
