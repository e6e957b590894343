import { ICON_URL_PATTERN } from '../media/images/item-images.ts';
import { joinUrl } from '../util/url.ts';
import { acceptablePrice, decimalFromCents, decimalFromSteamMoney, integerFromSteamCount } from './money.ts';
import {
  type FetchContext,
  type IconObservation,
  type SalesObservation,
  type SourceAdapter,
  type SourceFetchResult,
  type SourceObservation,
  SourceRateLimitedError,
  SourceUnavailableError,
} from './types.ts';
import { getJson, integerOf, isRecord, withPartial } from './upstream.ts';

/**
 * The Steam Community Market (docs/design.md §9 and §19; docs/decisions.md "Steam in bulk"). One run reads, within
 * the source's request budget:
 *
 * 1. Pages of the whole market, `GET /market/search/render/?appid=730&norender=1&count=100&start=<n>
 *    &sort_column=name&sort_dir=asc&currency=1`, from where the previous run stopped (`context.cursor`,
 *    wrapped to 0 once `total_count` is reached), so successive runs cover every listed name. Each
 *    row's `sell_price` (US cents) is its lowest ask, `sell_listings` its listing count, and
 *    `asset_description.icon_url` its image. A run reads at most one pass: it stops where it wraps.
 * 2. priceoverview, `GET /market/priceoverview/?appid=730&currency=1&market_hash_name=…`, for the names
 *    the ingest run chose (`context.names`: names people asked about first, shared/sources/demand.ts).
 *    It prices nothing any more: its `volume` (units sold in the last 24 h) and `median_price` are a
 *    24 h sales window.
 *
 * Steam has no phase versions: everything is `default`. A 429 (body `null`, usually without
 * Retry-After), a 5xx, a body that is not a search page, or a budget refusal ends the run; what the
 * earlier requests gave is kept (withPartial) and the cursor stays after the last page read.
 */

/** Steam rarely sends Retry-After; its throttling lasts minutes, so back off for five. */
const DEFAULT_RETRY_AFTER_MS = 300_000;
/** The most rows Steam's search answers per page. */
export const STEAM_SEARCH_PAGE_SIZE = 100;
/**
 * The share of a run's requests spent on search pages (the rest on priceoverview): prices and listings
 * of the whole market first, 24 h sales of the names asked about with what is left. Against the real
 * host (20 requests a minute, a run a minute, 16 used) that is 12 pages (1 200 names a minute, the
 * whole ~35 000-name market in about half an hour) and 4 priceoverview reads.
 */
export const STEAM_SEARCH_SHARE = 0.75;

// ---- search/render --------------------------------------------------------------------------

/**
 * One search row, e.g. (abridged):
 * `{"name":"AK-47 | Redline (Field-Tested)","hash_name":"AK-47 | Redline (Field-Tested)",
 *   "sell_listings":1043,"sell_price":3194,"sell_price_text":"$31.94","app_name":"Counter-Strike 2",
 *   "asset_description":{"appid":730,"classid":"…","instanceid":"…","icon_url":"-9a81dlWLwJ2UUGcVs_…",
 *   "tradable":1,"name":"…","name_color":"D2D2D2","type":"Classified Rifle","market_hash_name":"…"},
 *   "sale_price_text":"$30.38"}`.
 * `unpriced`: nothing listed (`sell_listings` 0 or `sell_price` 0), a valid row with nothing to sell.
 */
export type SteamSearchRow = { observation: SourceObservation | 'unpriced'; icon: IconObservation | null };

export function parseSteamSearchRow(row: unknown, now: Date): SteamSearchRow | 'malformed' {
  if (!isRecord(row)) return 'malformed';
  const name = row.hash_name;
  if (typeof name !== 'string' || name.trim() === '') return 'malformed';
  const listings = integerOf(row.sell_listings);
  const cents = integerOf(row.sell_price);
  if (listings === null || cents === null) return 'malformed';
  const description = row.asset_description;
  const iconUrl = isRecord(description) ? description.icon_url : undefined;
  // item_icons accepts only a path segment of Steam's icon CDN (sql/0023): anything else is no image.
  const icon = typeof iconUrl === 'string' && ICON_URL_PATTERN.test(iconUrl) ? { market_hash_name: name, icon_url: iconUrl } : null;
  if (listings === 0 || cents === 0) return { observation: 'unpriced', icon };
  const price = acceptablePrice(decimalFromCents(String(cents)));
  if (price === null) return 'malformed';
  return {
    observation: { market_hash_name: name, version: 'default', price, median_price: null, bid: null, volume_7d: null, quantity: listings, source_time: now },
    icon,
  };
}

/** A search page's envelope: `{success:true, start, total_count, results:[…]}`, else why it is not one. */
export function parseSteamSearchPage(body: unknown): { totalCount: number; results: unknown[] } | string {
  if (!isRecord(body)) return 'not an object';
  if (body.success !== true) return `success is ${JSON.stringify(body.success ?? null)}`;
  if (!Array.isArray(body.results)) return 'no results array';
  const totalCount = integerOf(body.total_count);
  if (totalCount === null) return 'no total_count';
  return { totalCount, results: body.results };
}

// ---- priceoverview ----------------------------------------------------------------------------

function optionalMoney(value: unknown): string | null | 'malformed' {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'string') return 'malformed';
  return decimalFromSteamMoney(value) ?? 'malformed';
}

/**
 * priceoverview as a 24 h sales window: `{"success":true,"lowest_price":"$2.30","volume":"1,234",
 * "median_price":"$2.40"}` → volume 1234 sold in 24 h at a median of 2.40 (mean, min and max: Steam
 * does not say). Any field but `success` may be missing: no `volume` (or "0") is a known window
 * where nothing sold (volume 0, prices null); `{"success":false}` is a name Steam does not know.
 * `lowest_price`, an ask, is not read (search/render gives asks).
 */
export function parseSteamOverviewSales(name: string, body: unknown, now: Date): SalesObservation | 'unknown' | 'malformed' {
  if (!isRecord(body) || typeof body.success !== 'boolean') return 'malformed';
  if (!body.success) return 'unknown';
  const median = optionalMoney(body.median_price);
  if (median === 'malformed') return 'malformed';
  let volume = 0;
  if (body.volume !== undefined && body.volume !== null) {
    if (typeof body.volume !== 'string') return 'malformed';
    const count = integerFromSteamCount(body.volume);
    if (count === null) return 'malformed';
    volume = count;
  }
  return {
    market_hash_name: name,
    version: 'default',
    window: '24h',
    median: volume === 0 ? null : median,
    mean: null,
    min: null,
    max: null,
    volume,
    source_time: now,
  };
}

// ---- the run ----------------------------------------------------------------------------------

function searchUrl(baseUrl: string, start: number, count: number): string {
  return joinUrl(baseUrl, `/market/search/render/?appid=730&norender=1&count=${count}&start=${start}&sort_column=name&sort_dir=asc&currency=1`);
}

export const steam: SourceAdapter = {
  name: 'steam',
  defaultBudget: { requests: 20, windowSeconds: 60 },
  defaultIntervalSeconds: 60,
  needsNames: true,
  listsWholeMarket: false,
  searchShare: STEAM_SEARCH_SHARE,
  async fetchSnapshot(context: FetchContext): Promise<SourceFetchResult> {
    const now = context.now();
    const sales: SalesObservation[] = [];
    const icons: IconObservation[] = [];
    const result: SourceFetchResult = { observations: [], sales, icons, skipped: 0, unknown: 0, requests: 0 };
    const unknownNames: string[] = [];
    const pageSize = Math.max(1, Math.min(STEAM_SEARCH_PAGE_SIZE, Math.floor(context.pageSize ?? STEAM_SEARCH_PAGE_SIZE)));
    const maxPages = Math.max(0, Math.floor(context.maxPages ?? 0));
    /** One request: counted, unless our own budget refused it (then it was never sent). */
    const request = async (url: string): Promise<unknown> => {
      result.requests += 1;
      try {
        return (await getJson({ source: 'steam', context, url, defaultRetryAfterMs: DEFAULT_RETRY_AFTER_MS })).body;
      } catch (error) {
        if (error instanceof SourceRateLimitedError && error.origin === 'budget') result.requests -= 1;
        throw error;
      }
    };
    try {
      if (maxPages > 0) {
        let start = Math.max(0, (await context.cursor?.read()) ?? 0);
        for (let page = 0; page < maxPages; page += 1) {
          const body = await request(searchUrl(context.baseUrl, start, pageSize));
          const parsed = parseSteamSearchPage(body);
          if (typeof parsed === 'string') throw new SourceUnavailableError('steam', `search page at ${start} unusable: ${parsed}`);
          // Past the end (the market shrank since the cursor was written): the next page is the first.
          if (parsed.results.length === 0 && start < parsed.totalCount)
            throw new SourceUnavailableError('steam', `search page at ${start} empty below total_count ${parsed.totalCount}`);
          for (const row of parsed.results) {
            const outcome = parseSteamSearchRow(row, now);
            if (outcome === 'malformed') result.skipped += 1;
            else {
              if (outcome.observation !== 'unpriced') result.observations.push(outcome.observation);
              if (outcome.icon) icons.push(outcome.icon);
            }
          }
          // Steam may answer fewer rows than asked: the next page starts after the rows it gave.
          const next = start + parsed.results.length;
          const wrapped = parsed.results.length === 0 || next >= parsed.totalCount;
          start = wrapped ? 0 : next;
          await context.cursor?.write(start);
          if (wrapped) break;
        }
      }
      for (const name of new Set(context.names)) {
        const body = await request(joinUrl(context.baseUrl, `/market/priceoverview/?appid=730&currency=1&market_hash_name=${encodeURIComponent(name)}`));
        const outcome = parseSteamOverviewSales(name, body, context.now());
        if (outcome === 'malformed') result.skipped += 1;
        else if (outcome === 'unknown') {
          result.unknown += 1;
          unknownNames.push(name);
        } else sales.push(outcome);
      }
    } catch (error) {
      throw withPartial(error, result);
    }
    if (result.skipped > 0) context.log.warn({ source: 'steam', skipped: result.skipped }, 'skipped malformed answers');
    if (unknownNames.length > 0)
      context.log.info({ source: 'steam', unknown: unknownNames.slice(0, 20), count: unknownNames.length }, 'names unknown upstream');
    return result;
  },
};
