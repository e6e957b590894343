import { joinUrl } from '../util/url.ts';
import { priceFromUsdText } from './money.ts';
import { type FetchContext, type SourceAdapter, type SourceFetchResult, type SourceObservation, SourceUnavailableError } from './types.ts';
import { isRecord, numberText } from './upstream.ts';
import { fetchWholeMarket } from './whole-market.ts';

/**
 * CS.DEALS `GET /API/IPricing/GetLowestPrices/v1?appid=730` (docs/design.md §13): one keyless request answers
 * the whole market as `{success:true, response:{items:[{marketname, lowest_price}]}}`, the lowest ask
 * in USD as a decimal string (a JSON number is accepted, its text being the value). That is all it
 * says: `median_price`, `bid`, `volume_7d` and `quantity` are null, and every row is `default`
 * (names carry no phase). Budget: 1 request per 60 s.
 */

/** Without a Retry-After, wait the whole window out. */
const DEFAULT_RETRY_AFTER_MS = 60_000;

/*
 * Sample raw row (an element of `response.items`):
 * {"marketname":"AK-47 | Redline (Field-Tested)","lowest_price":"31.42"}
 */
export function parseCsdealsRow(row: unknown, now: Date): SourceObservation | 'malformed' {
  if (!isRecord(row)) return 'malformed';
  const name = row.marketname;
  if (typeof name !== 'string' || name.trim() === '') return 'malformed';
  const priceText = numberText(row.lowest_price);
  const price = priceText === null ? null : priceFromUsdText(priceText);
  if (price === null) return 'malformed';
  return { market_hash_name: name, version: 'default', price, median_price: null, bid: null, volume_7d: null, quantity: null, source_time: now };
}

export const csdeals: SourceAdapter = {
  name: 'csdeals',
  defaultBudget: { requests: 1, windowSeconds: 60 },
  defaultIntervalSeconds: 300,
  needsNames: false,
  listsWholeMarket: true,
  async fetchSnapshot(context: FetchContext): Promise<SourceFetchResult> {
    return fetchWholeMarket(context, {
      source: 'csdeals',
      url: joinUrl(context.baseUrl, '/API/IPricing/GetLowestPrices/v1?appid=730'),
      defaultRetryAfterMs: DEFAULT_RETRY_AFTER_MS,
      rows: (body) => {
        if (!isRecord(body) || body.success !== true) throw new SourceUnavailableError('csdeals', 'unexpected body: success is not true');
        if (!isRecord(body.response) || !Array.isArray(body.response.items))
          throw new SourceUnavailableError('csdeals', 'unexpected body: no response.items array');
        return body.response.items;
      },
      parseRow: parseCsdealsRow,
    });
  },
};
