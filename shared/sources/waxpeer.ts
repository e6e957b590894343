import { versionFromPhaseLabel } from '../catalog/identity.ts';
import { joinUrl } from '../util/url.ts';
import { lowerDecimal, priceFromThousandthsText } from './money.ts';
import { type FetchContext, type SourceAdapter, type SourceFetchResult, type SourceObservation, SourceUnavailableError } from './types.ts';
import { getJson, isRecord, numberText, optionalCountOf } from './upstream.ts';

/**
 * Waxpeer (docs/design.md §13), two requests per run, both needed: a run stores nothing unless both succeed
 * (either failing throws, without a partial result).
 * - `GET /v1/prices?game=csgo&minified=0` → `{success:true, items:[{name, count, min, …}]}`: one row per
 *   market_hash_name, `min` the lowest ask in thousandths of USD; the row of a Doppler name is its
 *   `default` version. `quantity` = `count` (listings).
 * - `GET /v1/prices/dopplers?game=csgo&phase=any` → `{success:true, items:[{name, phase, price, …}]}`:
 *   one entry per Doppler/Gamma Doppler listing; per (name, phase) the ask is the lowest `price` and
 *   `quantity` the number of well-formed listings.
 * Thousandths become USD with exactly three decimals ("937999" → "937.999", "12340" → "12.340"; see
 * decimalFromThousandths). Waxpeer publishes no median, buy order or sales count: `median_price`,
 * `bid` and `volume_7d` are null. The optional key (SOURCE_WAXPEER_KEY) goes in the `api` query
 * parameter and is redacted from logs and errors. Budget: 60 requests per minute.
 */

/** Without a Retry-After, wait the whole window out. */
const DEFAULT_RETRY_AFTER_MS = 60_000;

/*
 * Sample raw row of /v1/prices:
 * {"name":"★ Karambit | Doppler (Factory New)","count":58,"min":937999,"steam_price":1180000,
 *  "img":"https://community.cloudflare.steamstatic.com/economy/image/-9a81d…","type":"Knife","rarity_color":"#eb4b4b"}
 */
export function parseWaxpeerPriceRow(row: unknown, now: Date): SourceObservation | 'malformed' {
  if (!isRecord(row)) return 'malformed';
  const name = row.name;
  if (typeof name !== 'string' || name.trim() === '') return 'malformed';
  const minText = numberText(row.min);
  const price = minText === null ? null : priceFromThousandthsText(minText);
  if (price === null) return 'malformed';
  const quantity = optionalCountOf(row.count);
  if (quantity === 'malformed') return 'malformed';
  return { market_hash_name: name, version: 'default', price, median_price: null, bid: null, volume_7d: null, quantity, source_time: now };
}

type DopplerListing = { name: string; version: string; price: string };

/*
 * Sample raw row of /v1/prices/dopplers (one listing):
 * {"name":"★ Karambit | Doppler (Factory New)","phase":"Phase 2","price":812400,"paint_index":419,
 *  "item_id":"34872519834","float":0.0213}
 */
export function parseWaxpeerDopplerListing(row: unknown): DopplerListing | 'malformed' {
  if (!isRecord(row)) return 'malformed';
  const name = row.name;
  if (typeof name !== 'string' || name.trim() === '') return 'malformed';
  // Every listing of this endpoint has a phase; a missing one is not the plain (default) row.
  if (typeof row.phase !== 'string') return 'malformed';
  const version = versionFromPhaseLabel(row.phase);
  if (version === null || version === 'default') return 'malformed';
  const priceText = numberText(row.price);
  const price = priceText === null ? null : priceFromThousandthsText(priceText);
  if (price === null) return 'malformed';
  return { name, version, price };
}

/** One observation per (name, phase): the lowest listing, and how many listings there were. */
export function aggregateDopplerListings(listings: Iterable<DopplerListing>, now: Date): SourceObservation[] {
  const groups = new Map<string, SourceObservation>();
  for (const listing of listings) {
    const key = `${listing.name}\u0000${listing.version}`;
    const group = groups.get(key);
    if (!group) {
      groups.set(key, {
        market_hash_name: listing.name,
        version: listing.version,
        price: listing.price,
        median_price: null,
        bid: null,
        volume_7d: null,
        quantity: 1,
        source_time: now,
      });
      continue;
    }
    group.quantity = (group.quantity ?? 0) + 1;
    group.price = lowerDecimal(group.price, listing.price);
  }
  return [...groups.values()];
}

/** `items` of a `{success:true, items:[…]}` body, or SourceUnavailableError. */
function itemsOf(body: unknown, what: string): unknown[] {
  if (!isRecord(body) || body.success !== true) throw new SourceUnavailableError('waxpeer', `unexpected ${what} body: success is not true`);
  if (!Array.isArray(body.items)) throw new SourceUnavailableError('waxpeer', `unexpected ${what} body: items is not an array`);
  return body.items;
}

export const waxpeer: SourceAdapter = {
  name: 'waxpeer',
  defaultBudget: { requests: 60, windowSeconds: 60 },
  defaultIntervalSeconds: 300,
  needsNames: false,
  listsWholeMarket: true,
  async fetchSnapshot(context: FetchContext): Promise<SourceFetchResult> {
    const key = context.apiKey ? `&api=${encodeURIComponent(context.apiKey)}` : '';
    const request = (pathAndQuery: string) =>
      getJson({
        source: 'waxpeer',
        context,
        url: joinUrl(context.baseUrl, `${pathAndQuery}${key}`),
        defaultRetryAfterMs: DEFAULT_RETRY_AFTER_MS,
        secretQueryParameters: ['api'],
      });
    // Both bodies are read and checked before anything is returned: one failing fails the run.
    const prices = itemsOf((await request('/v1/prices?game=csgo&minified=0')).body, 'prices');
    const dopplers = itemsOf((await request('/v1/prices/dopplers?game=csgo&phase=any')).body, 'dopplers');
    const now = context.now();
    const observations: SourceObservation[] = [];
    let skippedPrices = 0;
    for (const row of prices) {
      const outcome = parseWaxpeerPriceRow(row, now);
      if (outcome === 'malformed') skippedPrices += 1;
      else observations.push(outcome);
    }
    const listings: DopplerListing[] = [];
    let skippedDopplers = 0;
    for (const row of dopplers) {
      const listing = parseWaxpeerDopplerListing(row);
      if (listing === 'malformed') skippedDopplers += 1;
      else listings.push(listing);
    }
    observations.push(...aggregateDopplerListings(listings, now));
    const skipped = skippedPrices + skippedDopplers;
    if (skipped > 0) {
      context.log.warn(
        { source: 'waxpeer', skipped, skipped_prices: skippedPrices, skipped_doppler_listings: skippedDopplers, rows: prices.length + dopplers.length },
        'skipped malformed rows',
      );
    }
    return { observations, skipped, unknown: 0, requests: 2 };
  },
};
