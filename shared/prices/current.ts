import { z } from 'zod';
import { type ImageHosts, type ItemImage, itemImageSchema, itemImages } from '../media/images/item-images.ts';
import type { Queryable } from '../platform/db.ts';
import { summarizeDecimals } from '../util/decimal.ts';
import { computeConsensus, consensusSchema } from './consensus.ts';
import { fxSchema } from './currency.ts';
import { ageSeconds, priceIsFresh, type SourceClock } from './freshness.ts';
import { type CurrentPriceRow, findItemWithCurrentPrices } from './repository.ts';
import type { PriceRunWatch } from './run-watch.ts';
import { findItemSales, type Liquidity, liquidityOf, liquiditySchema, type Sales, salesOrEmpty, salesSchema } from './sales.ts';

/**
 * docs/design.md §14: a source that prices in another currency (skinbaron, EUR) is stored in USD; its own
 * price is shown as it wrote it, and `?currency=` never converts it (shared/prices/currency.ts).
 */
export const originalPriceSchema = z
  .object({
    price: z.string().describe('The price as the source wrote it, in its own currency, a decimal string'),
    currency: z.string().describe('ISO 4217 code of that currency (`EUR` for skinbaron)'),
  })
  .describe('Only for a source that prices in another currency than USD (skinbaron): its own price, never converted by `?currency=`');

// Prices are decimal strings: money never passes through a JS number.
const sourcePriceSchema = z.object({
  source: z.string().describe('Marketplace name'),
  price: z.string().describe('Lowest ask, a decimal string'),
  median_price: z.string().nullable(),
  bid: z.string().nullable().describe('Highest buy order, a decimal string; null where the source publishes none'),
  volume_7d: z.number().int().nullable().describe('Sales in the last 7 days, where the source says'),
  quantity: z.number().int().nullable().describe('Listings at the source, when it reports them'),
  original: originalPriceSchema.optional(),
  source_time: z.string().describe('When the source observed the price'),
  ingested_at: z.string(),
  freshness: z
    .enum(['fresh', 'stale'])
    .describe(
      'fresh while the source itself is fresh (as on GET /health) and the price is at most `stale_after_seconds` old; the consensus uses only fresh sources',
    ),
  age_seconds: z
    .number()
    .int()
    .describe('Whole seconds since the price was observed: since `source_time`, or since we read it when that is earlier (an upstream clock ahead of ours)'),
  stale_after_seconds: z.number().int().describe('The source’s stale threshold'),
  outlier: z.literal(true).optional().describe('Present when this fresh source is an outlier of the consensus (docs/design.md §13)'),
});

const versionPricesSchema = z.object({
  version: z.string().describe('`default`, a phase, `pattern-<seed>` or `tier-<n>`'),
  image: itemImageSchema.nullable().describe('docs/design.md §18: the image of this version (a Doppler phase shows that phase)'),
  // Across this version's sources (stale ones included; each source says its freshness).
  min: z.string(),
  median: z.string(),
  max: z.string(),
  consensus: consensusSchema,
  sales: salesSchema,
  liquidity: liquiditySchema.describe(
    'docs/design.md §19: `listings` the sum of the fresh sources’ `quantity`, `sales_7d` the 7-day sales volume, `days_to_sell` = listings × 7 / sales_7d to one decimal (how long today’s supply lasts at last week’s pace; not a score)',
  ),
  sources: z.array(sourcePriceSchema),
});

/** GET /v2/prices/{catalog_id}. */
export const itemPricesSchema = z.object({
  catalog_id: z.string(),
  market_hash_name: z.string(),
  image: itemImageSchema.nullable(),
  currency: z.string().describe('USD, or the `?currency=` asked for'),
  fx: fxSchema.optional(),
  versions: z.array(versionPricesSchema).describe('Empty when the item is not priced in the requested version'),
});

export type SourcePrice = z.infer<typeof sourcePriceSchema>;
export type VersionPrices = z.infer<typeof versionPricesSchema>;
export type ItemPrices = z.infer<typeof itemPricesSchema>;

/**
 * One item's stored prices, serialised once except for what depends on the time of the request:
 * each source's `freshness` and `age_seconds`, and so the consensus and the outlier flags, are filled
 * in per request between the fixed JSON text around them. Field order and values are exactly those
 * of the object ItemPrices describes.
 */
export type PreparedItemPrices = {
  /** `{"catalog_id":…,"market_hash_name":…,"image":…,"currency":"USD","versions":[` */
  head: string;
  /** In response order: `default` first, then the others in byte order. */
  versions: PreparedVersion[];
};

type PreparedVersion = {
  version: string;
  /** `{"version":…,"image":…,"min":…,"median":…,"max":…,"consensus":` */
  head: string;
  /** The version's sales windows (docs/design.md §19), stored: the same for every request. */
  sales: Sales;
  /** `,"sales":{…},"liquidity":` */
  salesJson: string;
  sources: PreparedSource[];
  /**
   * The consensus JSON, the liquidity JSON (its listings are the fresh sources') and outlier flags by
   * which sources are fresh (one character per source): the freshness of an item's few sources changes
   * rarely, so each combination is computed once.
   */
  consensusByFreshness: Map<string, { json: string; liquidity: string; outliers: boolean[] }>;
};

type PreparedSource = {
  /** `{"source":…,…,"ingested_at":…,"freshness":"` */
  head: string;
  source: string;
  price: string;
  bid: string | null;
  quantity: number | null;
  /** When we last saw the price at this value (shared/prices/freshness.ts). */
  observedMs: number;
  /** Its source's last success and stale threshold. */
  clock: SourceClock;
  /** `,"stale_after_seconds":…` */
  tail: string;
};

const text = (value: string | null) => JSON.stringify(value);

function prepareSource(row: CurrentPriceRow): PreparedSource {
  return {
    head:
      `{"source":${text(row.source)},"price":${text(row.price)},"median_price":${text(row.median_price)},` +
      `"bid":${text(row.bid)},"volume_7d":${row.volume_7d === null ? 'null' : String(row.volume_7d)},` +
      `"quantity":${row.quantity === null ? 'null' : String(row.quantity)},` +
      (row.original_price === null ? '' : `"original":{"price":${text(row.original_price)},"currency":${text(row.original_currency)}},`) +
      `"source_time":${text(row.source_time.toISOString())},` +
      `"ingested_at":${text(row.ingested_at.toISOString())},"freshness":"`,
    source: row.source,
    price: row.price,
    bid: row.bid,
    quantity: row.quantity,
    observedMs: row.observed_at.getTime(),
    clock: { lastSuccessMs: row.last_success_at?.getTime() ?? null, staleAfterSeconds: row.stale_after_seconds },
    tail: `,"stale_after_seconds":${row.stale_after_seconds}`,
  };
}

/**
 * The rows of findItemWithCurrentPrices (every version), prepared for renderItemPrices; null for an
 * unknown item. `images`: the item's image and each version's (docs/design.md §18), null for none.
 */
export function prepareItemPrices(
  found: ItemWithPrices,
  images: ItemImages = { item: null, versions: new Map() },
  sales: ReadonlyMap<string, Sales> = new Map(),
): PreparedItemPrices | null {
  if (!found) return null;
  const byVersion = new Map<string, CurrentPriceRow[]>();
  for (const row of found.prices) {
    const list = byVersion.get(row.version) ?? [];
    list.push(row);
    byVersion.set(row.version, list);
  }
  const versions: PreparedVersion[] = [];
  for (const [version, rows] of byVersion) {
    const summary = summarizeDecimals(rows.map((row) => row.price))!;
    const versionSales = salesOrEmpty(sales.get(version));
    versions.push({
      version,
      head: `{"version":${text(version)},"image":${JSON.stringify(images.versions.get(version) ?? null)},"min":${text(summary.min)},"median":${text(summary.median)},"max":${text(summary.max)},"consensus":`,
      sales: versionSales,
      salesJson: `,"sales":${JSON.stringify(versionSales)},"liquidity":`,
      sources: rows.map(prepareSource),
      consensusByFreshness: new Map(),
    });
  }
  return {
    head: `{"catalog_id":${text(found.item.catalog_id)},"market_hash_name":${text(found.item.market_hash_name)},"image":${JSON.stringify(images.item)},"currency":"USD","versions":[`,
    versions,
  };
}

function consensusFor(entry: PreparedVersion, freshness: boolean[]): { json: string; liquidity: string; outliers: boolean[] } {
  const key = freshness.map((fresh) => (fresh ? '1' : '0')).join('');
  let found = entry.consensusByFreshness.get(key);
  if (!found) {
    const { consensus, outliers } = computeConsensus(
      entry.sources.map((source, index) => ({ source: source.source, price: source.price, bid: source.bid, fresh: freshness[index]! })),
    );
    const liquidity = liquidityOf(
      entry.sources.filter((_source, index) => freshness[index]).map((source) => source.quantity),
      entry.sales['7d'],
    );
    found = { json: JSON.stringify(consensus), liquidity: JSON.stringify(liquidity), outliers: entry.sources.map((source) => outliers.has(source.source)) };
    entry.consensusByFreshness.set(key, found);
  }
  return found;
}

/**
 * The JSON body of GET /v2/prices/{catalog_id} as of `now`: every stored version, or only `version`
 * (none when the item has no price in it). Ages, freshness and the consensus are computed here, per request.
 */
export function renderItemPrices(prepared: PreparedItemPrices, version: string | undefined, now: Date): string {
  const nowMs = now.getTime();
  let body = prepared.head;
  let first = true;
  for (const entry of prepared.versions) {
    if (version !== undefined && entry.version !== version) continue;
    // The one freshness rule (shared/prices/freshness.ts), the same as GET /health's for the source.
    const ages = entry.sources.map((source) => ageSeconds(source.observedMs, nowMs));
    const freshness = entry.sources.map((source) => priceIsFresh(source.observedMs, source.clock, nowMs));
    const consensus = consensusFor(entry, freshness);
    body += `${first ? '' : ','}${entry.head}${consensus.json}${entry.salesJson}${consensus.liquidity},"sources":[`;
    first = false;
    for (let index = 0; index < entry.sources.length; index += 1) {
      const source = entry.sources[index]!;
      body +=
        `${index === 0 ? '' : ','}${source.head}${freshness[index] ? 'fresh' : 'stale'}","age_seconds":${ages[index]}${source.tail}` +
        `${consensus.outliers[index] ? ',"outlier":true}' : '}'}`;
    }
    body += ']}';
  }
  return `${body}]}`;
}

type ItemWithPrices = Awaited<ReturnType<typeof findItemWithCurrentPrices>>;
type ItemImages = { item: ItemImage | null; versions: Map<string, ItemImage | null> };

/** An item's prices and images (the item's and each priced version's, one query), prepared; null for an unknown id. */
async function loadItemPrices(db: Queryable, hosts: ImageHosts, catalogId: string): Promise<PreparedItemPrices | null> {
  const found = await findItemWithCurrentPrices(db, catalogId);
  if (!found) return null;
  const versions = [...new Set(found.prices.map((row) => row.version))];
  const [[item, ...perVersion], sales] = await Promise.all([
    itemImages(db, hosts, [{ catalog_id: catalogId }, ...versions.map((version) => ({ catalog_id: catalogId, version }))]),
    findItemSales(db, catalogId),
  ]);
  return prepareItemPrices(found, { item: item ?? null, versions: new Map(versions.map((version, index) => [version, perVersion[index] ?? null])) }, sales);
}

/**
 * GET /v2/prices/{id}: items' stored prices (prepared for rendering), read through a per-process
 * cache kept until an ingest run is seen (PriceRunWatch: announced on Redis, or found by a check at
 * most PRICE_CACHE_MS old), not for a fixed time: prices change only when a run commits. Without a
 * run watch (PRICE_CACHE_MS 0) it keeps nothing and every read goes to Postgres. Built once in
 * api/deps.ts. Freshness and ages are computed per request (renderItemPrices). Prices are the same
 * for every caller, so one entry serves every workspace (each request is still authenticated,
 * scope-checked and metered before it gets here). Unknown ids are not kept, so an item added by a
 * catalog sync is found at once. Concurrent misses of one item share one query.
 */
export class ItemPriceReader {
  private readonly entries = new Map<string, { generation: number; prices: Promise<PreparedItemPrices | null> }>();

  constructor(
    private readonly db: Queryable,
    private readonly runs: PriceRunWatch | null,
    /** Where item images are (docs/design.md §18): images are read with the prices and kept as long. */
    private readonly images: ImageHosts,
    private readonly maxEntries = 20_000,
  ) {}

  /** The item's prices, null when the catalog id is unknown. */
  async read(catalogId: string): Promise<PreparedItemPrices | null> {
    if (!this.runs) return loadItemPrices(this.db, this.images, catalogId);
    const generationOrCheck = this.runs.generation();
    const generation = typeof generationOrCheck === 'number' ? generationOrCheck : await generationOrCheck;
    const cached = this.entries.get(catalogId);
    if (cached && cached.generation === generation) return cached.prices;
    const prices = loadItemPrices(this.db, this.images, catalogId);
    // Re-inserted, so the oldest entries are the first out when the cache is full.
    this.entries.delete(catalogId);
    if (this.entries.size >= this.maxEntries) this.entries.delete(this.entries.keys().next().value!);
    const entry = { generation, prices };
    this.entries.set(catalogId, entry);
    const forget = () => {
      if (this.entries.get(catalogId) === entry) this.entries.delete(catalogId);
    };
    // A failed load is retried by the next request; an unknown id is looked up again.
    prices.then((found) => found ?? forget(), forget);
    return prices;
  }
}

/**
 * What GET /v1/prices/{market_hash_name} adds to a list item (docs/design.md §18 and §19), read once per
 * snapshot and item (PriceSnapshotCache keeps the body): the item's image, each version's sales
 * windows, and each version's liquidity with the listings of the sources fresh at `now`.
 */
export async function loadPublicItemExtras(
  db: Queryable,
  hosts: ImageHosts,
  catalogId: string,
  now: Date,
): Promise<{ image: ItemImage | null; sales: ReadonlyMap<string, Sales>; liquidity: ReadonlyMap<string, Liquidity> }> {
  const [image, sales, found] = await Promise.all([
    itemImages(db, hosts, [{ catalog_id: catalogId }]),
    findItemSales(db, catalogId),
    findItemWithCurrentPrices(db, catalogId),
  ]);
  const nowMs = now.getTime();
  const quantities = new Map<string, (number | null)[]>();
  for (const row of found?.prices ?? []) {
    const clock = { lastSuccessMs: row.last_success_at?.getTime() ?? null, staleAfterSeconds: row.stale_after_seconds };
    const list = quantities.get(row.version) ?? [];
    if (priceIsFresh(row.observed_at.getTime(), clock, nowMs)) list.push(row.quantity);
    quantities.set(row.version, list);
  }
  const liquidity = new Map<string, Liquidity>();
  for (const [version, fresh] of quantities) liquidity.set(version, liquidityOf(fresh, sales.get(version)?.['7d'] ?? null));
  return { image: image[0] ?? null, sales, liquidity };
}
