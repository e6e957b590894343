import { z } from 'zod';
import type { Queryable } from '../db.ts';
import { summarizeDecimals } from './decimal.ts';
import { findItemWithCurrentPrices, type CurrentPriceRow } from './repository.ts';

// Prices are decimal strings: money never passes through a JS number.
const sourcePriceSchema = z.object({
  source: z.string().describe('Marketplace name'),
  price: z.string().describe('Lowest ask, a decimal string'),
  median_price: z.string().nullable(),
  quantity: z.number().int().nullable().describe('Listings at the source, when it reports them'),
  source_time: z.string().describe('When the source observed the price'),
  ingested_at: z.string(),
  freshness: z.enum(['fresh', 'stale']),
  age_seconds: z.number().int().describe('Seconds since source_time (0 when the upstream clock is ahead of ours)'),
  stale_after_seconds: z.number().int().describe('The source’s stale threshold'),
});

const versionPricesSchema = z.object({
  version: z.string().describe('`default`, a phase, `pattern-<seed>` or `tier-<n>`'),
  // Across this version's sources (stale ones included; each source says its freshness).
  min: z.string(),
  median: z.string(),
  max: z.string(),
  sources: z.array(sourcePriceSchema),
});

/** GET /v2/prices/{catalog_id}. */
export const itemPricesSchema = z.object({
  catalog_id: z.string(),
  market_hash_name: z.string(),
  currency: z.literal('USD'),
  versions: z.array(versionPricesSchema).describe('Empty when the item is not priced in the requested version'),
});

export type SourcePrice = z.infer<typeof sourcePriceSchema>;
export type VersionPrices = z.infer<typeof versionPricesSchema>;
export type ItemPrices = z.infer<typeof itemPricesSchema>;

function sourcePrice(row: CurrentPriceRow, now: Date): SourcePrice {
  const age = Math.max(0, Math.floor((now.getTime() - row.source_time.getTime()) / 1000));
  return {
    source: row.source,
    price: row.price,
    median_price: row.median_price,
    quantity: row.quantity,
    source_time: row.source_time.toISOString(),
    ingested_at: row.ingested_at.toISOString(),
    // Same rule as GET /health: stale once older than the source's threshold.
    freshness: age > row.stale_after_seconds ? 'stale' : 'fresh',
    age_seconds: age,
    stale_after_seconds: row.stale_after_seconds,
  };
}

/**
 * The current prices of one catalog item, per stored version and source, with freshness as of
 * `now`; null when the catalog id is unknown. A version the item has no price for yields an empty
 * `versions` list (the item exists; it is just not priced in that version).
 */
export async function currentItemPrices(
  db: Queryable,
  catalogId: string,
  version: string | undefined,
  now: Date,
  cache?: ItemPriceCache,
): Promise<ItemPrices | null> {
  const load = () => findItemWithCurrentPrices(db, catalogId, version);
  if (!cache || !cache.enabled) return shapeItemPrices(await load(), now);
  const entry = await cache.entry(`${catalogId}\u0000${version ?? ''}`, load);
  // The response depends on the stored rows and on `now` only through ages in whole seconds.
  const second = Math.floor(now.getTime() / 1000);
  if (entry.shaped?.second !== second) entry.shaped = { second, value: shapeItemPrices(entry.value, now) };
  return entry.shaped.value;
}

function shapeItemPrices(found: ItemWithPrices, now: Date): ItemPrices | null {
  if (!found) return null;
  const { item, prices: rows } = found;
  const byVersion = new Map<string, SourcePrice[]>();
  for (const row of rows) {
    const list = byVersion.get(row.version) ?? [];
    list.push(sourcePrice(row, now));
    byVersion.set(row.version, list);
  }
  const versions: VersionPrices[] = [];
  for (const [name, sources] of byVersion) {
    const summary = summarizeDecimals(sources.map((source) => source.price))!;
    versions.push({ version: name, ...summary, sources });
  }
  return { catalog_id: item.catalog_id, market_hash_name: item.market_hash_name, currency: 'USD', versions };
}

type ItemWithPrices = Awaited<ReturnType<typeof findItemWithCurrentPrices>>;

/**
 * A short-lived per-process cache of one item's stored prices: prices change only when an ingest
 * run commits, and every process drops the cache when a new snapshot is announced after such a run
 * (the TTL bounds staleness if an announcement is lost). Freshness (`age_seconds`) is still
 * computed per request. A TTL of 0 disables it.
 */
export class ItemPriceCache {
  private readonly entries = new Map<string, CacheEntry>();

  constructor(
    private readonly ttlMs: number,
    private readonly maxEntries = 20_000,
  ) {}

  get enabled(): boolean {
    return this.ttlMs > 0;
  }

  /** The cached rows of `key` (loading them when absent or expired), with room for a shaped memo. */
  async entry(key: string, load: () => Promise<ItemWithPrices>): Promise<CacheEntry> {
    const now = Date.now();
    const cached = this.entries.get(key);
    if (cached && cached.expiresAt > now) return cached;
    const entry: CacheEntry = { value: await load(), expiresAt: now + this.ttlMs };
    if (this.entries.size >= this.maxEntries) this.entries.clear();
    this.entries.set(key, entry);
    return entry;
  }

  clear(): void {
    this.entries.clear();
  }
}

type CacheEntry = { value: ItemWithPrices; expiresAt: number; shaped?: { second: number; value: ItemPrices | null } };
