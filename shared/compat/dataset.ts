import { findLatestRates } from '../fx/repository.ts';
import type { Queryable } from '../platform/db.ts';
import { computeConsensus } from '../prices/consensus.ts';
import { observedAtSql, priceIsFresh, type SourceClock } from '../prices/freshness.ts';
import type { Freshness, PriceListItemObserver, PublicPriceItem } from '../prices/public-document.ts';
import type { SnapshotInputRow } from '../prices/repository.ts';
import { findSourceClocks } from '../prices/repository.ts';
import type { SalesWindowName } from '../sources/types.ts';
import { withTextSlots } from './item-texts.ts';
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
  if (!item) items.set(name, (item = withTextSlots({ market_hash_name: name, catalog_id: catalogId, first_seen_ms: null, price_rows: 0, versions: {} })));
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
 * What one database client's last build left (per process): its items by name, and the sales
 * generation their windows are of. A new build gives an item whose data did not change the object it
 * had, and a changed item the source price objects that did not change (the format builders keep
 * texts by these objects: shared/compat/item-texts.ts), so a build after a run that changed a fraction
 * of one source's prices allocates and writes only that fraction. Items are never changed once built.
 */
type LastBuild = { items: ReadonlyMap<string, CompatItem>; generation: string | null };
const lastBuilds = new WeakMap<object, LastBuild>();

/** Whether a snapshot row carries what `kept` says (`fresh` judged for this build). */
function rowIsKept(kept: CompatSourcePrice, row: SnapshotInputRow, fresh: boolean): boolean {
  return (
    kept.price === row.price &&
    kept.fresh === fresh &&
    kept.quantity === (row.quantity ?? null) &&
    kept.median_price === (row.median_price ?? null) &&
    kept.bid === row.bid &&
    kept.volume_7d === row.volume_7d &&
    kept.source_time === row.source_time
  );
}

/** The consensus the list gave `version` of `entry`. */
function listedConsensus(entry: PublicPriceItem, version: string): string | null {
  const listed = version === 'default' ? entry : entry.versions?.[version];
  return listed?.consensus?.price ?? null;
}

/**
 * The dataset's prices gathered while the keyless snapshot is built (buildPriceSnapshot's `onItem`),
 * from the same rows, freshness and consensus as the list: the index pool's build ahead then reads
 * only what the list does not carry (the sales windows, when they changed, and the rates). An item
 * whose rows match the last build's (of the same database client) is that build's object.
 */
export class CompatPriceGatherer {
  /** Gathered items by name, in the snapshot's order (byte order of market_hash_name). */
  readonly items: ItemsByName = new Map();
  /** Every source with a price in the snapshot. */
  readonly sources = new Set<string>();
  /** The items made for this build (the rest are the last build's objects). */
  readonly built: CompatItem[] = [];
  /** Whether the items came in byte order of name (the snapshot query's order; checked, not assumed). */
  ordered = true;
  readonly last: LastBuild | undefined;
  private lastName: string | null = null;
  /** Each source's clock, once looked up. */
  private readonly clocks: Record<string, SourceClock> = Object.create(null);

  constructor(db: Queryable) {
    this.last = lastBuilds.get(db);
  }

  readonly onItem: PriceListItemObserver = (entry, rows, freshness) => this.gather(entry, rows, freshness);

  private gather(entry: PublicPriceItem, rows: readonly SnapshotInputRow[], freshness: Freshness): void {
    const name = entry.market_hash_name;
    if (this.lastName !== null && this.lastName >= name) this.ordered = false;
    this.lastName = name;
    const fresh = freshOf(rows, freshness, this.sources, this.clocks);
    const before = this.last?.items.get(name);
    if (before !== undefined && isKept(before, entry, rows, fresh)) {
      // Every row matched one of the as many kept prices: the same prices, versions and consensus.
      this.items.set(name, before);
      return;
    }
    const item = builtItem(entry, rows, fresh, before);
    this.items.set(name, item);
    this.built.push(item);
  }
}

/** Whether each row's price is fresh at the build (the list's rule, priceIsFresh); each row's source noted in `sources`. */
function freshOf(rows: readonly SnapshotInputRow[], freshness: Freshness, sources: Set<string>, clocks: Record<string, SourceClock>): boolean[] {
  const nowMs = freshness.now.getTime();
  const fresh: boolean[] = new Array(rows.length);
  for (let index = 0; index < rows.length; index += 1) {
    const row = rows[index]!;
    // A property read per row, the source's clock looked up (and the source noted) once per build.
    let clock = clocks[row.source];
    if (clock === undefined) {
      clock = clocks[row.source] = freshness.sources.get(row.source) ?? NEVER;
      sources.add(row.source);
    }
    fresh[index] = priceIsFresh(row.observed_ms, clock, nowMs);
  }
  return fresh;
}

/** Whether the last build's `before` carries exactly these rows (as many prices, each the same) and the list's consensus. */
function isKept(before: CompatItem, entry: PublicPriceItem, rows: readonly SnapshotInputRow[], fresh: readonly boolean[]): boolean {
  if (before.price_rows !== rows.length) return false;
  let version: string | null = null;
  for (let index = 0; index < rows.length; index += 1) {
    const row = rows[index]!;
    const keptVersion = before.versions[row.version];
    const keptPrice = keptVersion?.sources[row.source];
    if (keptPrice === undefined || !rowIsKept(keptPrice, row, fresh[index]!)) return false;
    // Rows come grouped by version: each version's consensus is compared once.
    if (row.version !== version) {
      version = row.version;
      if (keptVersion!.consensus !== listedConsensus(entry, version)) return false;
    }
  }
  return true;
}

/** A new item from its rows; a price that did not change is the last build's object (`before`'s). */
function builtItem(entry: PublicPriceItem, rows: readonly SnapshotInputRow[], fresh: readonly boolean[], before: CompatItem | undefined): CompatItem {
  const first = rows[0]!;
  const item: CompatItem = withTextSlots({
    market_hash_name: entry.market_hash_name,
    catalog_id: first.catalog_id,
    first_seen_ms: null,
    price_rows: rows.length,
    versions: {},
  });
  for (let index = 0; index < rows.length; index += 1) {
    const row = rows[index]!;
    const target = (item.versions[row.version] ??= { sources: {}, consensus: listedConsensus(entry, row.version), sales: NO_SALES, combined: NO_COMBINED });
    const previous = before?.versions[row.version]?.sources[row.source];
    target.sources[row.source] =
      previous !== undefined && rowIsKept(previous, row, fresh[index]!)
        ? previous
        : {
            price: row.price,
            median_price: row.median_price ?? null,
            bid: row.bid,
            volume_7d: row.volume_7d,
            quantity: row.quantity ?? null,
            source_time_ms: Date.parse(row.source_time),
            source_time: row.source_time,
            fresh: fresh[index]!,
          };
  }
  return item;
}

/** Each item's windows by name (per sales read, made once): what a new item is given. */
const salesByNameOf = new WeakMap<SalesRead, Map<string, CachedSales[]>>();

function salesByName(read: SalesRead): Map<string, CachedSales[]> {
  let byName = salesByNameOf.get(read);
  if (!byName) {
    byName = new Map();
    for (const entry of read.entries) {
      const list = byName.get(entry.market_hash_name);
      if (list) list.push(entry);
      else byName.set(entry.market_hash_name, [entry]);
    }
    salesByNameOf.set(read, byName);
  }
  return byName;
}

/** Whether `item`'s versions carry exactly the windows `sales` has for it. */
function hasSales(item: CompatItem, sales: readonly CachedSales[] | undefined): boolean {
  let windowed = 0;
  for (const entry of sales ?? []) {
    const version = item.versions[entry.version];
    if (!version || version.sales !== entry.sales || version.combined !== entry.combined) return false;
    windowed += 1;
  }
  for (const name in item.versions) {
    const version = item.versions[name]!;
    if (version.sales !== NO_SALES || version.combined !== NO_COMBINED) windowed -= 1;
    else if (Object.keys(version.sources).length === 0) return false;
  }
  return windowed === 0;
}

/** `item` with the windows of `sales` (a new object: a built item is never changed) and its price versions as they are. */
function withSales(item: CompatItem, sales: readonly CachedSales[] | undefined): CompatItem {
  const versions: Record<string, CompatVersion> = {};
  for (const [name, version] of Object.entries(item.versions)) {
    if (Object.keys(version.sources).length > 0) versions[name] = { ...version, sales: NO_SALES, combined: NO_COMBINED };
  }
  const copy: CompatItem = withTextSlots({ ...item, versions });
  for (const entry of sales ?? []) {
    const version = (versions[entry.version] ??= { sources: {}, consensus: null, sales: NO_SALES, combined: NO_COMBINED });
    version.sales = entry.sales;
    version.combined = entry.combined;
  }
  return copy;
}

const byteOrder = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/**
 * A dataset from its gathered prices: the sales windows (readCompatSales) and the rates added, items
 * in byte order. `kept` tells an item that is the last build's object (its windows are those of
 * `lastGeneration`) from one built for this dataset (no windows yet).
 */
async function completeCompatDataset(
  db: Queryable,
  gathered: {
    /** By name, in byte order when `ordered`: the last build's objects, and `built`. */
    items: ItemsByName;
    /** The items made for this dataset (no windows yet; no other build holds them). */
    built: readonly CompatItem[];
    sources: ReadonlySet<string>;
    last: LastBuild | undefined;
    ordered: boolean;
    /** Whether a built item equal to the last build's is given that object (the read path: every item is built). */
    settle?: boolean;
  },
  now: Date,
): Promise<CompatDataset> {
  const [salesRead, rates] = await Promise.all([readCompatSales(db), findLatestRates(db)]);
  const windows = salesByName(salesRead);
  const { items: byName, last } = gathered;
  const sameWindows = last !== undefined && last.generation === salesRead.generation;
  for (const item of gathered.built) {
    for (const entry of windows.get(item.market_hash_name) ?? []) {
      const version = (item.versions[entry.version] ??= { sources: {}, consensus: null, sales: NO_SALES, combined: NO_COMBINED });
      version.sales = entry.sales;
      version.combined = entry.combined;
    }
    const before = gathered.settle ? last?.items.get(item.market_hash_name) : undefined;
    if (before !== undefined && sameItem(before, item)) byName.set(item.market_hash_name, before);
  }
  if (!sameWindows) {
    // The windows changed: a kept item whose windows are not the new ones is copied with them.
    const built = new Set(gathered.built);
    for (const [name, item] of byName) {
      if (built.has(item)) continue;
      const sales = windows.get(name);
      if (!hasSales(item, sales)) byName.set(name, withSales(item, sales));
    }
  }
  let all = [...byName.values()];
  if (!gathered.ordered) all.sort((a, b) => byteOrder(a.market_hash_name, b.market_hash_name));
  // Items with windows and no price: the last build's object while the windows and its lack of prices stand.
  const windowedOnly: CompatItem[] = [];
  for (const [name, sales] of windows) {
    if (byName.has(name)) continue;
    const before = last?.items.get(name);
    if (before !== undefined && before.price_rows === 0 && (sameWindows || hasSales(before, sales))) windowedOnly.push(before);
    else {
      const item: CompatItem = withTextSlots({ market_hash_name: name, catalog_id: sales[0]!.catalog_id, first_seen_ms: null, price_rows: 0, versions: {} });
      for (const entry of sales) item.versions[entry.version] = { sources: {}, consensus: null, sales: entry.sales, combined: entry.combined };
      windowedOnly.push(item);
    }
  }
  if (windowedOnly.length > 0) {
    windowedOnly.sort((a, b) => byteOrder(a.market_hash_name, b.market_hash_name));
    all = mergeByName(all, windowedOnly);
    for (const item of windowedOnly) byName.set(item.market_hash_name, item);
  }
  // The map is the next build's "last build" as it is (its order no longer matters).
  lastBuilds.set(db, { items: byName, generation: salesRead.generation });
  return {
    built_at_ms: now.getTime(),
    sales_generation: salesRead.generation,
    items: all,
    sources: [...gathered.sources].sort(byteOrder),
    rates: rates ? { as_of: rates.as_of, per_eur: Object.fromEntries(rates.rates) } : null,
  };
}

/** Two lists of items in byte order of name, as one. */
function mergeByName(a: readonly CompatItem[], b: readonly CompatItem[]): CompatItem[] {
  const merged: CompatItem[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) merged.push(a[i]!.market_hash_name < b[j]!.market_hash_name ? a[i++]! : b[j++]!);
  while (i < a.length) merged.push(a[i++]!);
  while (j < b.length) merged.push(b[j++]!);
  return merged;
}

/** Every source with a price in `items`, in byte order (CompatDataset.sources). */
export function sourcesOfItems(items: Iterable<CompatItem>): string[] {
  const sources = new Set<string>();
  for (const item of items) for (const version of Object.values(item.versions)) for (const source in version.sources) sources.add(source);
  return [...sources].sort(byteOrder);
}

/** The dataset of a snapshot whose prices were gathered in its build (CompatPriceGatherer). */
export function gatheredCompatDataset(db: Queryable, gatherer: CompatPriceGatherer, now: Date): Promise<CompatDataset> {
  return completeCompatDataset(
    db,
    { items: gatherer.items, built: gatherer.built, sources: gatherer.sources, last: gatherer.last, ordered: gatherer.ordered },
    now,
  );
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
        source_time: string;
        observed_ms: number;
      }[]
    >`
      select c.market_hash_name, c.catalog_id, p.version, p.source, p.price::text as price, p.median_price::text as median_price,
             p.bid::text as bid, p.volume_7d, p.quantity,
             -- Whole milliseconds, as the snapshot's rows carry them (CompatPriceGatherer), and their text.
             floor(extract(epoch from p.source_time) * 1000)::float8 as source_time_ms,
             to_char(p.source_time at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as source_time,
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
      source_time: row.source_time,
      fresh,
    };
  }
  for (const item of items.values()) {
    let rows = 0;
    for (const entry of Object.values(item.versions)) {
      const names = Object.keys(entry.sources);
      rows += names.length;
      entry.consensus =
        computeConsensus(
          names.map((source) => ({ source, price: entry.sources[source]!.price, bid: entry.sources[source]!.bid, fresh: entry.sources[source]!.fresh })),
        ).consensus?.price ?? null;
    }
    item.price_rows = rows;
  }
  // Every item is new here: one equal to the last build's is given that object after its windows.
  const sources = new Set(sourcesOfItems(items.values()));
  return completeCompatDataset(db, { items, built: [...items.values()], sources, last: lastBuilds.get(db), ordered: false, settle: true }, now);
}
