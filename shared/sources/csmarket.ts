import { compareDecimals } from '../util/decimal.ts';
import { joinUrl } from '../util/url.ts';
import { higherDecimal, priceFromUsdText } from './money.ts';
import { type FetchContext, type SourceAdapter, type SourceFetchResult, type SourceObservation, SourceUnavailableError } from './types.ts';
import { countOf, getJson, isRecord, numberText } from './upstream.ts';

/**
 * market.csgo.com `GET /api/v2/prices/class_instance/USD.json` (docs/design.md §13): one keyless request
 * answers the whole market as `{success:true, time, currency:"USD", items:{"<classid>_<instanceid>":
 * row}}`, prices in USD as decimal strings (up to three places). One market_hash_name can sit under
 * several class/instance keys (different stickers, name tags, …); they fold into one observation:
 * - `price` = the lowest `price`; `median_price` = the `avg_price` of the row giving that lowest ask
 *   (csmarket's average sale price, the closest it publishes to a median), null when that row has none;
 * - `bid` = the highest `buy_order` (the only keyless buy order of docs/design.md §13);
 * - `volume_7d` = the sum of `popularity_7d` (sales in 7 days), null when no key of the name has it;
 * - `quantity` null: csmarket publishes no listing count;
 * - `source_time` = the top-level `time` (unix seconds) when present and sane, else the fetch time.
 * csmarket names carry no Doppler phase: everything is `default`. A `buy_order` or `avg_price` of
 * zero means "none" (null); any other value must be a price the shared gate accepts, else the row is
 * malformed. The real API allows about 5 requests per second.
 */

/** Without a Retry-After, wait a few of the 1 s windows out. */
const DEFAULT_RETRY_AFTER_MS = 10_000;
/** `time` before this (2012-01-01) or more than a few minutes ahead of our clock is not believed. */
const EARLIEST_SANE_TIME_SECONDS = 1_325_376_000;
const MAX_CLOCK_SKEW_MS = 300_000;

type CsmarketRow = { name: string; price: string; bid: string | null; median: string | null; volume: number | null };

/** buy_order / avg_price: absent, null or zero → null; otherwise an accepted price or 'malformed'. */
function optionalPrice(value: unknown): string | null | 'malformed' {
  if (value === null || value === undefined) return null;
  const text = numberText(value);
  if (text === null) return 'malformed';
  if (/^0+(?:\.0+)?$/.test(text)) return null;
  return priceFromUsdText(text) ?? 'malformed';
}

/*
 * Sample raw row (one value of `items`, key "310776668_302028390"):
 * {"price":"32.393","buy_order":"30.1","avg_price":"31.2","popularity_7d":"12",
 *  "market_hash_name":"AK-47 | Redline (Field-Tested)","ru_name":"AK-47 | Красная линия (После полевых испытаний)",
 *  "ru_rarity":"Засекреченное","ru_quality":"После полевых испытаний","text_color":"D2D2D2","bg_color":"D32CE6"}
 */
export function parseCsmarketRow(row: unknown): CsmarketRow | 'malformed' {
  if (!isRecord(row)) return 'malformed';
  const name = row.market_hash_name;
  if (typeof name !== 'string' || name.trim() === '') return 'malformed';
  const priceText = numberText(row.price);
  const price = priceText === null ? null : priceFromUsdText(priceText);
  if (price === null) return 'malformed';
  const bid = optionalPrice(row.buy_order);
  const median = optionalPrice(row.avg_price);
  if (bid === 'malformed' || median === 'malformed') return 'malformed';
  let volume: number | null = null;
  if (row.popularity_7d !== null && row.popularity_7d !== undefined) {
    volume = countOf(row.popularity_7d);
    if (volume === null) return 'malformed';
  }
  return { name, price, bid, median, volume };
}

/** Every key of one name → one observation (see the module comment for each field). */
export function foldCsmarketRows(rows: Iterable<CsmarketRow>, sourceTime: Date): SourceObservation[] {
  const byName = new Map<string, SourceObservation>();
  for (const row of rows) {
    const seen = byName.get(row.name);
    if (!seen) {
      byName.set(row.name, {
        market_hash_name: row.name,
        version: 'default',
        price: row.price,
        median_price: row.median,
        bid: row.bid,
        volume_7d: row.volume,
        quantity: null,
        source_time: sourceTime,
      });
      continue;
    }
    if (compareDecimals(row.price, seen.price) < 0) {
      seen.price = row.price;
      seen.median_price = row.median;
    }
    if (row.bid !== null) seen.bid = seen.bid === null ? row.bid : higherDecimal(seen.bid, row.bid);
    if (row.volume !== null) seen.volume_7d = (seen.volume_7d ?? 0) + row.volume;
  }
  return [...byName.values()];
}

/** The body's `time` as a Date when it is a believable unix-seconds timestamp, else null. */
export function csmarketTime(value: unknown, now: Date): Date | null {
  const seconds = countOf(value);
  if (seconds === null || seconds < EARLIEST_SANE_TIME_SECONDS) return null;
  const at = new Date(seconds * 1000);
  return at.getTime() <= now.getTime() + MAX_CLOCK_SKEW_MS ? at : null;
}

export const csmarket: SourceAdapter = {
  name: 'csmarket',
  defaultBudget: { requests: 5, windowSeconds: 1 },
  defaultIntervalSeconds: 300,
  needsNames: false,
  listsWholeMarket: true,
  async fetchSnapshot(context: FetchContext): Promise<SourceFetchResult> {
    const { body } = await getJson({
      source: 'csmarket',
      context,
      url: joinUrl(context.baseUrl, '/api/v2/prices/class_instance/USD.json'),
      defaultRetryAfterMs: DEFAULT_RETRY_AFTER_MS,
    });
    if (!isRecord(body) || body.success !== true) throw new SourceUnavailableError('csmarket', 'unexpected body: success is not true');
    if (body.currency !== undefined && body.currency !== 'USD') throw new SourceUnavailableError('csmarket', 'unexpected body: currency is not USD');
    // PHP writes an empty `items` as [] rather than {}.
    const items = isRecord(body.items) ? Object.values(body.items) : Array.isArray(body.items) ? body.items : null;
    if (items === null) throw new SourceUnavailableError('csmarket', 'unexpected body: items is not an object');
    const now = context.now();
    const rows: CsmarketRow[] = [];
    let skipped = 0;
    for (const item of items) {
      const row = parseCsmarketRow(item);
      if (row === 'malformed') skipped += 1;
      else rows.push(row);
    }
    if (skipped > 0) context.log.warn({ source: 'csmarket', skipped, rows: items.length }, 'skipped malformed rows');
    return { observations: foldCsmarketRows(rows, csmarketTime(body.time, now) ?? now), skipped, unknown: 0, requests: 1 };
  },
};
