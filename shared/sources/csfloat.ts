import { versionFromPhaseLabel } from '../catalog/identity.ts';
import { joinUrl } from '../util/url.ts';
import { decimalFromCents } from './money.ts';
import {
  type FetchContext,
  type SourceAdapter,
  type SourceFetchResult,
  type SourceObservation,
  SourceRateLimitedError,
  SourceUnavailableError,
} from './types.ts';
import { getJson, isRecord, JsonNumber, withPartial } from './upstream.ts';

/**
 * CSFloat market `GET /api/v1/listings?limit=…&cursor=…` (docs/design.md §9) → `{data: [listing], cursor}`,
 * prices in integer US cents. The adapter pages through `cursor` up to a page cap and aggregates the
 * listings it saw into one observation per (market_hash_name, version): price = cheapest listing,
 * quantity = listings seen, median_price = median listing price, where an even count takes the LOWER
 * of the two middle listings (an actual ask, and no division), source_time = newest `created_at`.
 *
 * Paging trade-off: the real upstream caps `limit` at 50 and allows about 200 requests an hour, so at
 * the default 5-minute interval a run can afford ~16 pages = 800 listings, a sample of the newest
 * listings (`sort_by=most_recent`), not the whole market: an item's "cheapest" is the cheapest among
 * the listings seen. More pages per run cost budget and time; fewer give a thinner sample. The ingest
 * run sets `pageSize`/`maxPages` in the fetch context (a local simulator accepts 1000 per page).
 * Only `buy_now` listings are asked for (an auction's price is a bid, not an ask).
 */

/** The real upstream's maximum `limit`. */
export const CSFLOAT_MAX_PAGE_SIZE = 50;
/** 200 requests / 3600 s at one run every 300 s leaves 16 requests a run. */
export const CSFLOAT_DEFAULT_MAX_PAGES = 16;
const DEFAULT_RETRY_AFTER_MS = 60_000;

type Listing = { id: string | null; name: string; version: string; cents: string; createdAt: number | null };

export function parseCsfloatListing(listing: unknown): Listing | 'ignored' | 'malformed' {
  if (!isRecord(listing)) return 'malformed';
  if (listing.type !== undefined && listing.type !== 'buy_now') return 'ignored';
  if (!(listing.price instanceof JsonNumber) || decimalFromCents(listing.price.text) === null) return 'malformed';
  const item = listing.item;
  if (!isRecord(item)) return 'malformed';
  const name = item.market_hash_name;
  if (typeof name !== 'string' || name.trim() === '') return 'malformed';
  if (item.phase !== undefined && item.phase !== null && typeof item.phase !== 'string') return 'malformed';
  const version = versionFromPhaseLabel(item.phase as string | null | undefined);
  if (version === null) return 'malformed';
  const createdAt = typeof listing.created_at === 'string' ? Date.parse(listing.created_at) : Number.NaN;
  return {
    id: typeof listing.id === 'string' ? listing.id : listing.id instanceof JsonNumber ? listing.id.text : null,
    name,
    version,
    cents: listing.price.text,
    createdAt: Number.isNaN(createdAt) ? null : createdAt,
  };
}

type Group = { name: string; version: string; cents: bigint[]; newest: number | null };

/** One observation per (name, version) from the listings seen (see the module comment for the median rule). */
export function aggregateListings(listings: Iterable<Listing>, now: Date): SourceObservation[] {
  const groups = new Map<string, Group>();
  for (const listing of listings) {
    const key = `${listing.name}\u0000${listing.version}`;
    let group = groups.get(key);
    if (!group) {
      group = { name: listing.name, version: listing.version, cents: [], newest: null };
      groups.set(key, group);
    }
    group.cents.push(BigInt(listing.cents));
    if (listing.createdAt !== null && (group.newest === null || listing.createdAt > group.newest)) group.newest = listing.createdAt;
  }
  const observations: SourceObservation[] = [];
  for (const group of groups.values()) {
    const sorted = group.cents.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    const cheapest = sorted[0]!;
    const lowerMedian = sorted[Math.floor((sorted.length - 1) / 2)]!;
    observations.push({
      market_hash_name: group.name,
      version: group.version,
      price: decimalFromCents(cheapest.toString())!,
      median_price: decimalFromCents(lowerMedian.toString())!,
      bid: null,
      volume_7d: null,
      quantity: sorted.length,
      source_time: group.newest !== null ? new Date(group.newest) : now,
    });
  }
  return observations;
}

export const csfloat: SourceAdapter = {
  name: 'csfloat',
  defaultBudget: { requests: 200, windowSeconds: 3600 },
  defaultIntervalSeconds: 300,
  needsNames: false,
  listsWholeMarket: false,
  async fetchSnapshot(context: FetchContext): Promise<SourceFetchResult> {
    const pageSize = Math.max(1, Math.floor(context.pageSize ?? CSFLOAT_MAX_PAGE_SIZE));
    const maxPages = Math.max(1, Math.floor(context.maxPages ?? CSFLOAT_DEFAULT_MAX_PAGES));
    // Authorization carries the raw key (CSFloat docs: `Authorization: <API-KEY>`); never logged.
    const headers: Record<string, string> = context.apiKey ? { authorization: context.apiKey } : {};
    // Listings by id: with most_recent ordering, new listings shift pages and repeat earlier ones.
    const seen = new Map<string, Listing>();
    const anonymous: Listing[] = [];
    let skipped = 0;
    let requests = 0;
    let cursor: string | null = null;
    const cursorsUsed = new Set<string>();
    const snapshot = (): SourceFetchResult => ({
      observations: aggregateListings([...seen.values(), ...anonymous], context.now()),
      skipped,
      unknown: 0,
      requests,
    });
    try {
      for (let page = 0; page < maxPages; page += 1) {
        const query = `limit=${pageSize}&sort_by=most_recent&type=buy_now${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
        requests += 1;
        let body: unknown;
        try {
          ({ body } = await getJson({
            source: 'csfloat',
            context,
            url: joinUrl(context.baseUrl, `/api/v1/listings?${query}`),
            headers,
            defaultRetryAfterMs: DEFAULT_RETRY_AFTER_MS,
          }));
        } catch (error) {
          if (error instanceof SourceRateLimitedError && error.origin === 'budget') requests -= 1;
          throw error;
        }
        if (!isRecord(body) || !Array.isArray(body.data)) throw new SourceUnavailableError('csfloat', 'unexpected body: no data array');
        for (const entry of body.data) {
          const listing = parseCsfloatListing(entry);
          if (listing === 'malformed') skipped += 1;
          else if (listing === 'ignored') continue;
          else if (listing.id === null) anonymous.push(listing);
          else seen.set(listing.id, listing);
        }
        const next = typeof body.cursor === 'string' && body.cursor !== '' ? body.cursor : null;
        if (next === null || body.data.length === 0 || cursorsUsed.has(next)) break;
        cursorsUsed.add(next);
        cursor = next;
      }
    } catch (error) {
      throw withPartial(error, snapshot());
    }
    if (skipped > 0) context.log.warn({ source: 'csfloat', skipped, requests }, 'skipped malformed listings');
    return snapshot();
  },
};
