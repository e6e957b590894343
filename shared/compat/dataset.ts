import { findLatestRates } from '../fx/repository.ts';
import type { Queryable } from '../platform/db.ts';
import { computeConsensus } from '../prices/consensus.ts';
import { observedAtSql, priceIsFresh, type SourceClock } from '../prices/freshness.ts';
import type { PriceListItemObserver } from '../prices/public-document.ts';
import { findSourceClocks } from '../prices/repository.ts';
import type { SalesWindowName } from '../sources/types.ts';
import type { CompatDataset, CompatItem, CompatSalesWindow, CompatSourcePrice, CompatVersion } from './types.ts';

type SalesRow = {
  market_hash_name: string;
  catalog_id: string;
  version: string;
  source: string | null;
  sales_window: SalesWindowName;
  median: string | null;
  mean: string | null;
  min: string | null;
  max: string | null;
  volume: number;
  source_time_ms: number;
};

/** Every sales window of one (item, version): each source's and the combination over sources. */
type CachedSales = {
  market_hash_name: string;
  catalog_id: string;
  version: string;
  sales: CompatVersion['sales'];
  combined: CompatVersion['combined'];
};

/** The windows as of one sales generation (sql/0030), per database client. */
type SalesRead = { generation: string; entries: CachedSales[] };
const salesReads = new WeakMap<object, SalesRead>();

/**
 * Every source's sales windows and every combined window, read again only when the sales generation
 * has moved (sql/0030: triggers move it with any change to source_sales or item_sales): most snapshots follow
 * a price run that left ~340 000 windows as they were, whose read was most of a build. The generation
 * is read before the windows, so a change committed during the read makes the next build read again.
 * The entries are shared between builds: builders read them and never change them.
 */
export async function readCompatSales(db: Queryable): Promise<SalesRead> {
  const [row] = await db<{ n: string }[]>`select n::text as n from sales_generation`;
  const generation = row?.n ?? 'none';
  const cached = salesReads.get(db);
  if (cached && cached.generation === generation && row) return cached;
  const [sales, combined] = await Promise.all([
    db<SalesRow[]>`
      select c.market_hash_name, c.catalog_id, s.version, s.source, s.sales_window, s.median::text as median, s.mean::text as mean,
             s.min::text as min, s.max::text as max, s.volume, (extract(epoch from s.source_time) * 1000)::float8 as source_time_ms
      from source_sales s join catalog_items c on c.catalog_id = s.catalog_id`,
    // A combined window is as old as its last recombination (item_sales keeps no source time of its own).
    db<(SalesRow & { source: null })[]>`
      select c.market_hash_name, c.catalog_id, w.version, w.sales_window, w.median::text as median, w.mean::text as mean,
             w.min::text as min, w.max::text as max, w.volume, (extract(epoch from w.updated_at) * 1000)::float8 as source_time_ms
      from item_sales w join catalog_items c on c.catalog_id = w.catalog_id`,
  ]);
  const entries = new Map<string, CachedSales>();
  const entryOf = (row: SalesRow): CachedSales => {
    const key = `${row.catalog_id}\u0000${row.version}`;
    let entry = entries.get(key);
    if (!entry)
      entries.set(key, (entry = { market_hash_name: row.market_hash_name, catalog_id: row.catalog_id, version: row.version, sales: {}, combined: {} }));
    return entry;
  };
  const window = (row: SalesRow): CompatSalesWindow => ({
    median: row.median,
    mean: row.mean,
    min: row.min,
    max: row.max,
    volume: row.volume,
    source_time_ms: row.source_time_ms,
  });
  for (const row of sales) (entryOf(row).sales[row.source!] ??= {})[row.sales_window] = window(row);
  for (const row of combined) entryOf(row).combined[row.sales_window] = window(row);
  const read = { generation, entries: [...entries.values()] };
  if (row) salesReads.set(db, read);
  return read;
}

/** The items of a dataset by market_hash_name, as they are gathered. */
type ItemsByName = Map<string, CompatItem>;

function versionOf(items: ItemsByName, name: string, catalogId: string, version: string): CompatVersion {
  let item = items.get(name);
  if (!item) items.set(name, (item = { market_hash_name: name, catalog_id: catalogId, first_seen_ms: null, versions: {} }));
  let entry = item.versions[version];
  if (!entry) item.versions[version] = entry = { sources: {}, consensus: null, sales: NO_SALES, combined: NO_COMBINED };
  return entry;
}

/** A version without windows: one shared object each (never changed), so an unchanged item compares equal by reference. */
const NO_SALES: CompatVersion['sales'] = Object.freeze({});
const NO_COMBINED: CompatVersion['combined'] = Object.freeze({});

const NEVER: SourceClock = { lastSuccessMs: null, staleAfterSeconds: 0 };

function samePrice(a: CompatSourcePrice, b: CompatSourcePrice): boolean {
  return (
    a.price === b.price &&
    a.source_time_ms === b.source_time_ms &&
    a.fresh === b.fresh &&
    a.quantity === b.quantity &&
    a.median_price === b.median_price &&
    a.bid === b.bid &&
    a.volume_7d === b.volume_7d
  );
}

/** Whether two builds' items carry the same data (their windows are the same objects while the sales generation stands). */
function sameItem(a: CompatItem, b: CompatItem): boolean {
  if (a.catalog_id !== b.catalog_id || a.first_seen_ms !== b.first_seen_ms) return false;
  let versions = 0;
  for (const name in a.versions) {
    const x = a.versions[name]!;
    const y = b.versions[name];
    if (!y || x.consensus !== y.consensus || x.sales !== y.sales || x.combined !== y.combined) return false;
    let sources = 0;
    for (const source in x.sources) {
      const other = y.sources[source];
      if (!other || !samePrice(x.sources[source]!, other)) return false;
      sources += 1;
    }
    for (const _ in y.sources) sources -= 1;
    if (sources !== 0) return false;
    versions += 1;
  }
  for (const _ in b.versions) versions -= 1;
  return versions === 0;
}

/**
 * The last build's items by name, per database client: an item whose prices and windows did not
 * change keeps the object it had, so the format builders, which keep each item's text by object
 * (shared/compat/item-texts.ts), write only the items that changed (most snapshots follow a run
 * that changed a fraction of one source's prices).
 */
const lastItems = new WeakMap<object, Map<string, CompatItem>>();

function settleItems(db: Queryable, items: CompatItem[]): CompatItem[] {
  const previous = lastItems.get(db);
  const next = new Map<string, CompatItem>();
  const settled = items.map((item) => {
    const before = previous?.get(item.market_hash_name);
    const kept = before !== undefined && sameItem(before, item) ? before : item;
    next.set(item.market_hash_name, kept);
    return kept;
  });
  lastItems.set(db, next);
  return settled;
}

/**
 * The dataset's prices gathered while the keyless snapshot is built (buildPriceSnapshot's `onItem`),
 * from the same rows, freshness and consensus as the list: the index pool's build ahead then reads
 * only what the list does not carry (the sales windows, when they changed, and the rates).
 */
export class CompatPriceGatherer {
  readonly items: ItemsByName = new Map();

  readonly onItem: PriceListItemObserver = (entry, rows, freshness) => {
    const nowMs = freshness.now.getTime();
    for (const row of rows) {
      versionOf(this.items, row.market_hash_name, row.catalog_id, row.version).sources[row.source] = {
        price: row.price,
        median_price: row.median_price ?? null,
        bid: row.bid,
        volume_7d: row.volume_7d,
        quantity: row.quantity ?? null,
        source_time_ms: Date.parse(row.source_time),
        fresh: priceIsFresh(row.observed_ms, freshness.sources.get(row.source) ?? NEVER, nowMs),
      };
    }
    const item = this.items.get(entry.market_hash_name);
    if (!item) return;
    for (const [version, prices] of Object.entries(item.versions)) {
      const listed = version === 'default' ? entry : entry.versions?.[version];
      prices.consensus = listed?.consensus?.price ?? null;
    }
  };
}

/** A dataset from its gathered prices: the sales windows (readCompatSales) and the rates added, items in byte order. */
async function completeCompatDataset(db: Queryable, items: ItemsByName, now: Date): Promise<CompatDataset> {
  const [salesRead, rates] = await Promise.all([readCompatSales(db), findLatestRates(db)]);
  for (const cached of salesRead.entries) {
    const entry = versionOf(items, cached.market_hash_name, cached.catalog_id, cached.version);
    entry.sales = cached.sales;
    entry.combined = cached.combined;
  }
  const ordered = settleItems(
    db,
    [...items.values()].sort((a, b) => (a.market_hash_name < b.market_hash_name ? -1 : a.market_hash_name > b.market_hash_name ? 1 : 0)),
  );
  return {
    built_at_ms: now.getTime(),
    sales_generation: salesRead.generation,
    items: ordered,
    rates: rates ? { as_of: rates.as_of, per_eur: Object.fromEntries(rates.rates) } : null,
  };
}

/** The dataset of a snapshot whose prices were gathered in its build (CompatPriceGatherer). */
export function gatheredCompatDataset(db: Queryable, gatherer: CompatPriceGatherer, now: Date): Promise<CompatDataset> {
  return completeCompatDataset(db, gatherer.items, now);
}

/**
 * The CompatDataset of one snapshot (shared/compat/types.ts) read afresh, for a snapshot built without
 * a gatherer (the first /compat request after a snapshot nobody read ahead): every latest price with
 * its item (freshness and the consensus judged at `now`, the snapshot's build time, by the rule of
 * GET /health), the sales windows of readCompatSales and the rates. Items in byte order of
 * market_hash_name; an item appears when it has a price or a sales window.
 */
export async function readCompatDataset(db: Queryable, now: Date): Promise<CompatDataset> {
  const [prices, clocks] = await Promise.all([
    db<
      {
        market_hash_name: string;
        catalog_id: string;
        version: string;
        source: string;
        price: string;
        median_price: string | null;
        bid: string | null;
        volume_7d: number | null;
        quantity: number | null;
        source_time_ms: number;
        observed_ms: number;
      }[]
    >`
      select c.market_hash_name, c.catalog_id, p.version, p.source, p.price::text as price, p.median_price::text as median_price,
             p.bid::text as bid, p.volume_7d, p.quantity,
             -- Whole milliseconds, as the snapshot's rows carry them (CompatPriceGatherer).
             floor(extract(epoch from p.source_time) * 1000)::float8 as source_time_ms,
             (extract(epoch from ${observedAtSql(db)}) * 1000)::float8 as observed_ms
      from current_prices p
      join catalog_items c on c.catalog_id = p.catalog_id
      left join price_sources s on s.name = p.source`,
    findSourceClocks(db),
  ]);
  const nowMs = now.getTime();
  const items: ItemsByName = new Map();
  for (const row of prices) {
    const fresh = priceIsFresh(row.observed_ms, clocks.get(row.source) ?? NEVER, nowMs);
    versionOf(items, row.market_hash_name, row.catalog_id, row.version).sources[row.source] = {
      price: row.price,
      median_price: row.median_price,
      bid: row.bid,
      volume_7d: row.volume_7d,
      quantity: row.quantity,
      source_time_ms: row.source_time_ms,
      fresh,
    };
  }
  for (const item of items.values()) {
    for (const entry of Object.values(item.versions)) {
      const names = Object.keys(entry.sources);
      entry.consensus =
        computeConsensus(
          names.map((source) => ({ source, price: entry.sources[source]!.price, bid: entry.sources[source]!.bid, fresh: entry.sources[source]!.fresh })),
        ).consensus?.price ?? null;
    }
  }
  return completeCompatDataset(db, items, now);
}
