import { findLatestRates } from '../fx/repository.ts';
import type { Queryable } from '../platform/db.ts';
import { computeConsensus } from '../prices/consensus.ts';
import { observedAtSql, priceIsFresh, type SourceClock } from '../prices/freshness.ts';
import type { Freshness, PriceListItemObserver, PublicPriceItem } from '../prices/public-document.ts';
import type { SnapshotInputRow } from '../prices/repository.ts';
import { findSourceClocks } from '../prices/repository.ts';
import type { SalesWindowName } from '../sources/types.ts';
import { forgetPrevious, markSameValues, withTextSlots } from './item-texts.ts';
import type { CompatDataset, CompatItem, CompatSalesWindow, CompatSourcePrice, CompatVersion } from './types.ts';

/** One source's windows of one (item, version), or (source null) the windows combined over sources, as one text (readCompatSales). */
type SalesTextRow = { market_hash_name: string; catalog_id: string; version: string; source: string | null; windows: string };

type Windows = Partial<Record<SalesWindowName, CompatSalesWindow>>;

/** Every sales window of one (item, version): each source's and the combination over sources. */
type CachedSales = {
  market_hash_name: string;
  catalog_id: string;
  version: string;
  sales: CompatVersion['sales'];
  combined: CompatVersion['combined'];
};

/**
 * The windows as of one sales generation (sql/0030), per database client, with each (item, version,
 * source)'s windows by their text: a read keeps the objects of windows whose text did not change.
 */
type SalesRead = { generation: string; entries: CachedSales[]; texts: Map<string, { text: string; windows: Windows }> };
const salesReads = new WeakMap<object, SalesRead>();

/**
 * Every source's sales windows and every combined window, read again only when the sales generation
 * has moved (sql/0030: triggers move it with any change to source_sales or item_sales): most snapshots follow
 * a price run that left ~340 000 windows as they were, whose read was most of a build. The generation
 * is read before the windows, so a change committed during the read makes the next build read again.
 *
 * Postgres writes each (item, version, source)'s windows as one text (decimals as text: no float on
 * the way): ~115 000 rows of five columns rather than ~340 000 of ten (the read took ~2.5 s of parsing
 * at full catalog, now ~1 s). Windows whose text is the
 * one the last read had are that read's objects, and an (item, version) whose every window stands is
 * that read's entry, so an hourly sales read of one marketplace leaves the others' windows (and every
 * text a format made from them) as they were. The entries are shared between builds: builders read
 * them and never change them.
 */
export async function readCompatSales(db: Queryable): Promise<SalesRead> {
  const [row] = await db<{ n: string }[]>`select n::text as n from sales_generation`;
  const generation = row?.n ?? 'none';
  const cached = salesReads.get(db);
  if (cached && cached.generation === generation && row) return cached;
  // `<window>,<median>,<mean>,<min>,<max>,<volume>,<observed ms>` per window (an empty field: null), `;` between.
  const windowsText = (time: 'source_time' | 'updated_at') => db`
    string_agg(concat_ws(',', sales_window, coalesce(median::text, ''), coalesce(mean::text, ''), coalesce(min::text, ''), coalesce(max::text, ''),
                         volume, (extract(epoch from ${db(time)}) * 1000)::float8),
               ';' order by sales_window)`;
  const rows = await db<SalesTextRow[]>`
    select c.market_hash_name, k.catalog_id, k.version, k.source, k.windows
    from (
      select catalog_id, version, source, ${windowsText('source_time')} as windows from source_sales group by catalog_id, version, source
      union all
      -- A combined window is as old as its last recombination (item_sales keeps no source time of its own).
      select catalog_id, version, null, ${windowsText('updated_at')} from item_sales group by catalog_id, version
    ) k
    join catalog_items c on c.catalog_id = k.catalog_id
    order by k.catalog_id, k.version, k.source nulls first`;
  const lastTexts = cached?.texts;
  const lastEntries = new Map<string, CachedSales>();
  for (const entry of cached?.entries ?? []) lastEntries.set(`${entry.catalog_id}\u0000${entry.version}`, entry);
  const texts = new Map<string, { text: string; windows: Windows }>();
  const entries: CachedSales[] = [];
  let entry: CachedSales | null = null;
  /** Whether every window of the entry being read is the last read's object (then the entry is the last read's). */
  let kept = false;
  const finish = () => {
    if (entry === null) return;
    const last = lastEntries.get(`${entry.catalog_id}\u0000${entry.version}`);
    entries.push(kept && last !== undefined && sameWindows(last, entry) ? last : entry);
  };
  for (const row of rows) {
    if (entry === null || entry.catalog_id !== row.catalog_id || entry.version !== row.version) {
      finish();
      entry = { market_hash_name: row.market_hash_name, catalog_id: row.catalog_id, version: row.version, sales: {}, combined: {} };
      kept = true;
    }
    const key = `${row.catalog_id}\u0000${row.version}\u0000${row.source ?? ''}`;
    const last = lastTexts?.get(key);
    const windows = last !== undefined && last.text === row.windows ? last.windows : parsedWindows(row.windows);
    if (windows !== last?.windows) kept = false;
    texts.set(key, { text: row.windows, windows });
    if (row.source === null) entry.combined = windows;
    else entry.sales[row.source] = windows;
  }
  finish();
  const read = { generation, entries, texts };
  if (row) salesReads.set(db, read);
  return read;
}

/** The windows of readCompatSales' text (decimals stay text; the volume and the observed time are numbers, as Postgres wrote them). */
function parsedWindows(text: string): Windows {
  const windows: Windows = {};
  for (const part of text.split(';')) {
    const [name, median, mean, min, max, volume, observed] = part.split(',');
    windows[name as SalesWindowName] = {
      median: median || null,
      mean: mean || null,
      min: min || null,
      max: max || null,
      volume: Number(volume),
      source_time_ms: Number(observed),
    };
  }
  return windows;
}

/** Whether two entries hold the same window objects for the same sources. */
function sameWindows(a: CachedSales, b: CachedSales): boolean {
  if (a.combined !== b.combined) return false;
  let sources = 0;
  for (const source in b.sales) {
    if (a.sales[source] !== b.sales[source]) return false;
    sources += 1;
  }
  for (const _ in a.sales) sources -= 1;
  return sources === 0;
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
type LastBuild = {
  /** Every item, in byte order of name. */
  list: readonly CompatItem[];
  generation: string | null;
  /** How many of the items had a price (the rest are `windowedOnly`). */
  priced: number;
  /** Items with windows and no price, in byte order of name. */
  windowedOnly: CompatItem[];
  /** The items by name, made when a build needs them so (lastByName). */
  byName?: Map<string, CompatItem>;
};

/** The last build's items by name (made once per last build, when a build cannot walk them in order). */
function lastByName(last: LastBuild): Map<string, CompatItem> {
  last.byName ??= new Map(last.list.map((item) => [item.market_hash_name, item]));
  return last.byName;
}
const lastBuilds = new WeakMap<object, LastBuild>();

/** Whether a snapshot row carries what `kept` says (`fresh` judged for this build). */
function rowIsKept(kept: CompatSourcePrice, row: SnapshotInputRow, fresh: boolean): boolean {
  return valuesAreKept(kept, row, fresh) && kept.source_time === row.source_time;
}

/** Whether a snapshot row carries the values `kept` says, its time aside. */
function valuesAreKept(kept: CompatSourcePrice, row: SnapshotInputRow, fresh: boolean): boolean {
  return (
    kept.price === row.price &&
    kept.fresh === fresh &&
    kept.quantity === (row.quantity ?? null) &&
    kept.median_price === (row.median_price ?? null) &&
    kept.bid === row.bid &&
    kept.volume_7d === row.volume_7d
  );
}

/** The consensus the list gave `version` of `entry`. */
function listedConsensus(entry: PublicPriceItem, version: string): string | null {
  const listed = version === 'default' ? entry : entry.versions?.[version];
  return listed?.consensus?.price ?? null;
}

/**
 * What an item made by a gatherer was made from: its prices in the order of the snapshot's rows, with
 * each row's version and source (not enumerable, like the text slots: no copy, comparison or JSON of
 * the item sees it). A new build compares its rows with these by position, with no lookup by key.
 */
const ROW_PRICES = Symbol('compat row prices');
type RowPrices = { prices: CompatSourcePrice[]; versions: string[]; sources: string[] };
type GatheredItem = CompatItem & { [ROW_PRICES]?: RowPrices };

/**
 * The dataset's prices gathered while the keyless snapshot is built (buildPriceSnapshot's `onItem`),
 * from the same rows, freshness and consensus as the list: the index pool's build ahead then reads
 * only what the list does not carry (the sales windows, when they changed, and the rates). An item
 * whose rows match the last build's (of the same database client) is that build's object.
 */
export class CompatPriceGatherer {
  /** The gathered items, in the snapshot's order (byte order of market_hash_name). */
  readonly list: CompatItem[] = [];
  /** How many of the items had a price in the last build too. */
  matched = 0;
  /** Every source with a price in the snapshot. */
  readonly sources = new Set<string>();
  /** The items made for this build (the rest are the last build's objects). */
  readonly built: CompatItem[] = [];
  /** Each built item's predecessor (the last build's item of its name), where it had one. */
  readonly builtBefore: (CompatItem | undefined)[] = [];
  /** Whether the items came in byte order of name (the snapshot query's order; checked, not assumed). */
  ordered = true;
  readonly last: LastBuild | undefined;
  private lastName: string | null = null;
  /** Where the walk through the last build's items (in the same order) stands. */
  private cursor = 0;
  /** Each source's clock, once looked up (and the source noted in `sources`). */
  private readonly clocks = new Map<string, SourceClock>();
  private freshness: Freshness | null = null;
  private lastTimeText = '';
  private lastTimeMs = Number.NaN;
  private nowMs = 0;

  constructor(db: Queryable) {
    this.last = lastBuilds.get(db);
  }

  readonly onItem: PriceListItemObserver = (entry, rows, freshness) => this.gather(entry, rows, freshness);

  private gather(entry: PublicPriceItem, rows: readonly SnapshotInputRow[], freshness: Freshness): void {
    const name = entry.market_hash_name;
    if (this.lastName !== null && this.lastName >= name) this.ordered = false;
    this.lastName = name;
    if (freshness !== this.freshness) {
      this.freshness = freshness;
      this.nowMs = freshness.now.getTime();
      this.clocks.clear();
    }
    const before = this.before(name);
    if (before !== undefined) {
      // The formats took over `before`'s texts when its build made them: what it followed can go.
      forgetPrevious(before);
      if (before.price_rows !== 0) this.matched += 1;
    }
    if (before !== undefined && this.isKept(before, entry, rows)) {
      // Every row matched the kept price at its place: the same prices, versions and consensus.
      this.list.push(before);
      return;
    }
    const item = this.builtItem(entry, rows, before);
    this.list.push(item);
    this.built.push(item);
    this.builtBefore.push(before);
  }

  /**
   * The last build's item named `name`: found by walking the last build's items alongside (both in
   * byte order: a comparison an item, no lookup by name), or by name once the order broke.
   */
  private before(name: string): GatheredItem | undefined {
    const last = this.last;
    if (last === undefined) return undefined;
    if (!this.ordered) return lastByName(last).get(name);
    const list = last.list;
    for (let at = this.cursor; at < list.length; at += 1) {
      const other = list[at]!;
      if (other.market_hash_name === name) {
        this.cursor = at + 1;
        return other;
      }
      if (other.market_hash_name > name) {
        this.cursor = at;
        return undefined;
      }
    }
    this.cursor = list.length;
    return undefined;
  }

  /** A source time's milliseconds: a listing gives every row it confirms one time, parsed once. */
  private timeMs(text: string): number {
    if (text !== this.lastTimeText) {
      this.lastTimeText = text;
      this.lastTimeMs = Date.parse(text);
    }
    return this.lastTimeMs;
  }

  /** Whether the row's price is fresh at the build (the list's rule, priceIsFresh). */
  private fresh(row: SnapshotInputRow): boolean {
    let clock = this.clocks.get(row.source);
    if (clock === undefined) {
      this.clocks.set(row.source, (clock = this.freshness!.sources.get(row.source) ?? NEVER));
      this.sources.add(row.source);
    }
    return priceIsFresh(row.observed_ms, clock, this.nowMs);
  }

  /** Whether the last build's `before` was made from these rows (the same prices at the same places) and carries the list's consensus. */
  private isKept(before: GatheredItem, entry: PublicPriceItem, rows: readonly SnapshotInputRow[]): boolean {
    const kept = before[ROW_PRICES];
    if (kept === undefined || kept.prices.length !== rows.length) return false;
    let version: string | null = null;
    for (let index = 0; index < rows.length; index += 1) {
      const row = rows[index]!;
      if (kept.versions[index] !== row.version || kept.sources[index] !== row.source || !rowIsKept(kept.prices[index]!, row, this.fresh(row))) return false;
      // Rows come grouped by version: each version's consensus is compared once.
      if (row.version !== version) {
        version = row.version;
        if (before.versions[version]!.consensus !== listedConsensus(entry, version)) return false;
      }
    }
    return true;
  }

  /** A new item from its rows; a price that did not change is the last build's object (`before`'s). */
  private builtItem(entry: PublicPriceItem, rows: readonly SnapshotInputRow[], before: GatheredItem | undefined): CompatItem {
    const first = rows[0]!;
    const item: GatheredItem = withTextSlots(
      {
        market_hash_name: entry.market_hash_name,
        catalog_id: first.catalog_id,
        first_seen_ms: null,
        price_rows: rows.length,
        versions: {},
      },
      before,
    );
    const prices: CompatSourcePrice[] = new Array(rows.length);
    // The rows' versions and sources, as the last build's where they are the same (most changes are of
    // prices and times, not of which rows there are): two arrays fewer an item.
    const prior = before?.[ROW_PRICES];
    let sameLayout = prior !== undefined && prior.prices.length === rows.length;
    // Whether every value is the last build's (the rows' times aside): the item's windows are given later.
    let sameValues = sameLayout;
    let target: CompatVersion | undefined;
    for (let index = 0; index < rows.length; index += 1) {
      const row = rows[index]!;
      const fresh = this.fresh(row);
      if (sameLayout && (prior!.versions[index] !== row.version || prior!.sources[index] !== row.source)) sameLayout = sameValues = false;
      if (target === undefined || row.version !== rows[index - 1]!.version) {
        target = item.versions[row.version] ??= { sources: {}, consensus: listedConsensus(entry, row.version), sales: NO_SALES, combined: NO_COMBINED };
        if (sameValues && before!.versions[row.version]!.consensus !== target.consensus) sameValues = false;
      }
      // The last build's price at this place (the same layout so far), else looked up by version and source.
      const previous = sameLayout ? prior!.prices[index] : before?.versions[row.version]?.sources[row.source];
      const valuesKept = previous !== undefined && valuesAreKept(previous, row, fresh);
      if (!valuesKept) sameValues = false;
      const price: CompatSourcePrice =
        valuesKept && previous.source_time === row.source_time
          ? previous
          : {
              price: row.price,
              median_price: row.median_price ?? null,
              bid: row.bid,
              volume_7d: row.volume_7d,
              quantity: row.quantity ?? null,
              source_time_ms: this.timeMs(row.source_time),
              source_time: row.source_time,
              fresh,
            };
      target.sources[row.source] = price;
      prices[index] = price;
    }
    const made: RowPrices = sameLayout
      ? { prices, versions: prior!.versions, sources: prior!.sources }
      : { prices, versions: rows.map((row) => row.version), sources: rows.map((row) => row.source) };
    Object.defineProperty(item, ROW_PRICES, { value: made, enumerable: false, writable: false, configurable: false });
    markSameValues(item, sameValues);
    return item;
  }
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
  const copy: CompatItem = withTextSlots({ ...item, versions }, item);
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
    /** In byte order of name when `ordered`: the last build's objects, and `built`. */
    list: CompatItem[];
    /** The items made for this dataset (no windows yet; no other build holds them). */
    built: readonly CompatItem[];
    /** Each built item's predecessor, where the gatherer knew it. */
    builtBefore?: readonly (CompatItem | undefined)[];
    sources: ReadonlySet<string>;
    last: LastBuild | undefined;
    ordered: boolean;
    /** How many of the items had a price in the last build too (unknown: the names are compared one by one). */
    matched?: number;
    /** Whether a built item equal to the last build's is given that object (the read path: every item is built). */
    settle?: boolean;
  },
  now: Date,
): Promise<CompatDataset> {
  const [salesRead, rates] = await Promise.all([readCompatSales(db), findLatestRates(db)]);
  const windows = salesByName(salesRead);
  const { last } = gathered;
  let all = gathered.list;
  const sameWindows = last !== undefined && last.generation === salesRead.generation;
  for (let index = 0; index < gathered.built.length; index += 1) {
    const item = gathered.built[index]!;
    // New windows: an item's values may differ from its predecessor's in them.
    if (!sameWindows) markSameValues(item, false);
    const before = sameWindows ? gathered.builtBefore?.[index] : undefined;
    if (before !== undefined) {
      // The windows stand: its predecessor's are this read's (no lookup by name).
      for (const name in before.versions) {
        const windowed = before.versions[name]!;
        if (windowed.sales === NO_SALES && windowed.combined === NO_COMBINED) continue;
        const version = (item.versions[name] ??= { sources: {}, consensus: null, sales: NO_SALES, combined: NO_COMBINED });
        version.sales = windowed.sales;
        version.combined = windowed.combined;
      }
      continue;
    }
    for (const entry of windows.get(item.market_hash_name) ?? []) {
      const version = (item.versions[entry.version] ??= { sources: {}, consensus: null, sales: NO_SALES, combined: NO_COMBINED });
      version.sales = entry.sales;
      version.combined = entry.combined;
    }
  }
  if (gathered.settle && last !== undefined) {
    const lastItems = lastByName(last);
    for (let index = 0; index < all.length; index += 1) {
      const before = lastItems.get(all[index]!.market_hash_name);
      if (before !== undefined && sameItem(before, all[index]!)) all[index] = before;
    }
  }
  if (!sameWindows) {
    // The windows changed: a kept item whose windows are not the new ones is copied with them.
    const built = new Set(gathered.built);
    for (let index = 0; index < all.length; index += 1) {
      const item = all[index]!;
      if (built.has(item)) continue;
      const sales = windows.get(item.market_hash_name);
      if (!hasSales(item, sales)) all[index] = withSales(item, sales);
    }
  }
  if (!gathered.ordered) all.sort((a, b) => byteOrder(a.market_hash_name, b.market_hash_name));
  const priced = all.length;
  // Items with windows and no price: the last build's objects while the windows and the names with
  // a price stand (every name priced now was priced then, and as many), else looked for name by name.
  let windowedOnly: CompatItem[] = [];
  if (sameWindows && gathered.matched === priced && last.priced === priced) windowedOnly = last.windowedOnly;
  else {
    const pricedNames = new Set(all.map((item) => item.market_hash_name));
    const lastItems = last === undefined ? undefined : lastByName(last);
    for (const [name, sales] of windows) {
      if (pricedNames.has(name)) continue;
      const before = lastItems?.get(name);
      if (before !== undefined && before.price_rows === 0 && (sameWindows || hasSales(before, sales))) windowedOnly.push(before);
      else {
        const item: CompatItem = withTextSlots({ market_hash_name: name, catalog_id: sales[0]!.catalog_id, first_seen_ms: null, price_rows: 0, versions: {} });
        for (const entry of sales) item.versions[entry.version] = { sources: {}, consensus: null, sales: entry.sales, combined: entry.combined };
        windowedOnly.push(item);
      }
    }
    windowedOnly.sort((a, b) => byteOrder(a.market_hash_name, b.market_hash_name));
  }
  if (windowedOnly.length > 0) all = mergeByName(all, windowedOnly);
  // The next build walks these items alongside its own (both in byte order of name).
  lastBuilds.set(db, { list: all, generation: salesRead.generation, priced, windowedOnly });
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
    {
      list: gatherer.list,
      matched: gatherer.matched,
      built: gatherer.built,
      builtBefore: gatherer.builtBefore,
      sources: gatherer.sources,
      last: gatherer.last,
      ordered: gatherer.ordered,
    },
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
  const list = [...items.values()];
  return completeCompatDataset(db, { list, built: list, sources, last: lastBuilds.get(db), ordered: false, settle: true }, now);
}
