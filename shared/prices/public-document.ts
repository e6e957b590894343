import { promisify } from 'node:util';
import { brotliCompress, brotliCompressSync, gzip, gzipSync, constants as zlibConstants } from 'node:zlib';
import { z } from 'zod';
import { type ItemImage, itemImageSchema } from '../media/images/item-image-schema.ts';
import { sha256Hex } from '../util/crypto.ts';
import { summarizeDecimals } from '../util/decimal.ts';
import { computeConsensus, consensusSchema } from './consensus.ts';
import { fxSchema } from './currency.ts';
import { originalPriceSchema } from './current.ts';
import { priceIsFresh, type SourceClock } from './freshness.ts';
import type { SnapshotInputRow } from './repository.ts';
import { type Liquidity, liquiditySchema, type Sales, sales7dSchema, salesSchema } from './sales.ts';

/**
 * The keyless price documents (docs/design.md §9): `GET /v1/prices` (every priced item, optionally one
 * source) and `GET /v1/prices/{market_hash_name}`. Pure functions: the snapshot builder assembles
 * the full list from the database; the API derives the per-source lists and per-item bodies from it.
 */
// Prices are decimal strings: money never passes through a JS number.
const publicSourcePriceSchema = z.object({
  price: z.string().describe('Lowest ask'),
  source_time: z.string(),
  bid: z.string().optional().describe('Highest buy order; only where the source publishes one (the keyed answer says null)'),
  volume_7d: z.number().int().optional().describe('Sales in the last 7 days; only where the source says'),
  original: originalPriceSchema.optional(),
  outlier: z.literal(true).optional().describe('Present when this source was fresh and an outlier of the consensus when the list was built'),
});

const publicVersionPricesShape = {
  sources: z.record(z.string(), publicSourcePriceSchema).describe('Keyed by source name, in byte order'),
  // Null only when the version has no source (an item priced only in other versions).
  min: z.string().nullable(),
  median: z.string().nullable(),
  max: z.string().nullable(),
  consensus: consensusSchema.describe('Cross-market consensus of the sources fresh when the list was built (docs/design.md §13); null when none was'),
  sales_7d: sales7dSchema.optional(),
};
const publicVersionPricesSchema = z.object(publicVersionPricesShape);

/** One item of the list: its `default` version at the top level, other stored versions under `versions`. */
const publicPriceItemSchema = z.object({
  market_hash_name: z.string(),
  catalog_id: z.string(),
  ...publicVersionPricesShape,
  versions: z
    .record(z.string(), publicVersionPricesSchema)
    .optional()
    .describe('Only present when the item has stored versions besides `default` (Doppler phases, …)'),
});

/** GET /v1/prices. */
export const publicPriceListSchema = z.object({
  currency: z.string().describe('USD, or the `?currency=` asked for'),
  fx: fxSchema.optional(),
  source: z.string().optional().describe('Present in a `?source=` list'),
  item_count: z.number().int(),
  oldest_input_at: z.string().nullable().describe('The oldest source_time among every price in the document'),
  items: z.array(publicPriceItemSchema),
});

/** GET /v1/prices/{market_hash_name}. */
export const publicItemPricesSchema = z.object({
  market_hash_name: z.string(),
  catalog_id: z.string(),
  image: itemImageSchema
    .nullable()
    .optional()
    .describe(
      'docs/design.md §18: the item’s image (its `default` version’s), as of the snapshot: the newest icon Steam showed it with, else cs2-lib’s, else null. The art is Valve’s',
    ),
  currency: z.string().describe('USD, or the `?currency=` asked for'),
  fx: fxSchema.optional(),
  versions: z
    .array(
      publicVersionPricesSchema.omit({ sales_7d: true }).extend({
        version: z.string(),
        sales: salesSchema,
        liquidity: liquiditySchema.describe(
          '`listings` the sum of the `quantity` of the sources fresh when the item was first read from this snapshot, `sales_7d` the 7-day sales volume, `days_to_sell` = listings × 7 / sales_7d to one decimal (not a score)',
        ),
      }),
    )
    .describe('`default` first'),
});

export type PublicSourcePrice = z.infer<typeof publicSourcePriceSchema>;
export type PublicVersionPrices = z.infer<typeof publicVersionPricesSchema>;
export type PublicPriceItem = z.infer<typeof publicPriceItemSchema>;
export type PublicPriceList = z.infer<typeof publicPriceListSchema>;
export type PublicItemPrices = z.infer<typeof publicItemPricesSchema>;

/**
 * What decides freshness in a list: its build time and each source's last success and stale
 * threshold (price_sources), judged by the one rule of GET /health and the keyed `freshness`
 * (shared/prices/freshness.ts). A source without a row is never fresh.
 */
export type Freshness = { now: Date; sources: ReadonlyMap<string, SourceClock> };

const NO_SUCCESS: SourceClock = { lastSuccessMs: null, staleAfterSeconds: 0 };

/**
 * One version's prices; `observedMs` holds each source's observed time (SnapshotInputRow.observed_ms),
 * `sales7d` its 7-day sales window (docs/design.md §19), left out when no source has one.
 */
function versionPrices(
  sources: Record<string, PublicSourcePrice>,
  observedMs: ReadonlyMap<string, number>,
  freshness: Freshness,
  sales7d?: { median: string | null; volume: number },
): PublicVersionPrices {
  const entries = Object.entries(sources);
  const summary = summarizeDecimals(entries.map(([, source]) => source.price));
  const nowMs = freshness.now.getTime();
  const { consensus, outliers } = computeConsensus(
    entries.map(([name, source]) => ({
      source: name,
      price: source.price,
      bid: source.bid ?? null,
      fresh: priceIsFresh(observedMs.get(name)!, freshness.sources.get(name) ?? NO_SUCCESS, nowMs),
    })),
    summary ?? undefined,
  );
  for (const name of outliers) sources[name]!.outlier = true;
  const prices: PublicVersionPrices = { sources, min: summary?.min ?? null, median: summary?.median ?? null, max: summary?.max ?? null, consensus };
  if (sales7d) prices.sales_7d = sales7d;
  return prices;
}

const noPrices = (): PublicVersionPrices => ({ sources: {}, min: null, median: null, max: null, consensus: null });

function item(marketHashName: string, catalogId: string, defaultPrices: PublicVersionPrices, others: Record<string, PublicVersionPrices>): PublicPriceItem {
  const entry: PublicPriceItem = { market_hash_name: marketHashName, catalog_id: catalogId, ...defaultPrices };
  if (Object.keys(others).length > 0) entry.versions = others;
  return entry;
}

/** The oldest source_time of one item (every version). */
function oldestTimeOf(entry: PublicPriceItem): string | null {
  // Every time has the same fixed-width RFC 3339 UTC form, so text order is time order.
  let oldest: string | null = null;
  const visit = (prices: PublicVersionPrices) => {
    for (const source of Object.values(prices.sources)) if (oldest === null || source.source_time < oldest) oldest = source.source_time;
  };
  visit(entry);
  for (const other of Object.values(entry.versions ?? {})) visit(other);
  return oldest;
}

function oldestTime(items: PublicPriceItem[]): string | null {
  let oldest: string | null = null;
  for (const entry of items) {
    const time = oldestTimeOf(entry);
    if (time !== null && (oldest === null || time < oldest)) oldest = time;
  }
  return oldest;
}

/** One list item from all of its rows (ordered by version, `default` first, then source). */
function itemFromRows(rows: readonly SnapshotInputRow[], freshness: Freshness): PublicPriceItem {
  const first = rows[0]!;
  let defaultPrices = noPrices();
  const others: Record<string, PublicVersionPrices> = {};
  let index = 0;
  while (index < rows.length) {
    const version = rows[index]!.version;
    const { sales_7d_volume: sold, sales_7d_median: soldMedian } = rows[index]!;
    const sales7d = sold == null ? undefined : { median: soldMedian ?? null, volume: sold };
    const sources: Record<string, PublicSourcePrice> = {};
    const observed = new Map<string, number>();
    for (; index < rows.length && rows[index]!.version === version; index += 1) {
      const row = rows[index]!;
      // bid and volume_7d only where the source has them: most of the list's ~250 000 entries have
      // neither, and writing nulls for them cost ~10 % of the compressed list.
      const entry: PublicSourcePrice = { price: row.price, source_time: row.source_time };
      if (row.bid !== null) entry.bid = row.bid;
      if (row.volume_7d !== null) entry.volume_7d = row.volume_7d;
      if (row.original_price != null) entry.original = { price: row.original_price, currency: row.original_currency! };
      sources[row.source] = entry;
      observed.set(row.source, row.observed_ms);
    }
    if (version === 'default') defaultPrices = versionPrices(sources, observed, freshness, sales7d);
    else others[version] = versionPrices(sources, observed, freshness, sales7d);
  }
  return item(first.market_hash_name, first.catalog_id, defaultPrices, others);
}

/** Groups rows ordered by item into items, calling `emit` once an item's last row has been seen. */
class ItemGrouper {
  private rows: SnapshotInputRow[] = [];

  constructor(
    private readonly freshness: Freshness,
    private readonly emit: (entry: PublicPriceItem, rows: readonly SnapshotInputRow[]) => void,
  ) {}

  add(rows: readonly SnapshotInputRow[]): void {
    for (const row of rows) {
      if (this.rows.length > 0 && this.rows[0]!.catalog_id !== row.catalog_id) this.flush();
      this.rows.push(row);
    }
  }

  flush(): void {
    if (this.rows.length === 0) return;
    this.emit(itemFromRows(this.rows, this.freshness), this.rows);
    this.rows = [];
  }
}

/** The full list from the snapshot query's rows (ordered by item, then version with `default` first, then source). */
export function assemblePriceList(rows: readonly SnapshotInputRow[], freshness: Freshness): PublicPriceList {
  const items: PublicPriceItem[] = [];
  const grouper = new ItemGrouper(freshness, (entry) => items.push(entry));
  grouper.add(rows);
  grouper.flush();
  return { currency: 'USD', item_count: items.length, oldest_input_at: oldestTime(items), items };
}

/** Sees one item of a list being built, with the rows it was built from and the freshness it was judged by. */
export type PriceListItemObserver = (entry: PublicPriceItem, rows: readonly SnapshotInputRow[], freshness: Freshness) => void;

/**
 * The full list's JSON as UTF-8 bytes, built from rows arriving in chunks (in the snapshot query's
 * order) one item at a time: it holds each item's encoded JSON, never every row or every item object
 * at once, nor the whole text as one JavaScript string (names with ★ or ™ make such a string two
 * bytes per character: ~56 MB for nine sources, beside its ~28 MB encoding). The bytes are exactly
 * those of `JSON.stringify(assemblePriceList(allRows))`.
 */
export class PriceListJsonBuilder {
  private readonly parts: Buffer[] = [];
  private bytes = 0;
  private oldest: string | null = null;
  private readonly grouper: ItemGrouper;

  /** `onItem`, when given, also sees each item with the rows it was built from (shared/compat/dataset.ts gathers the drop-in formats' prices this way). */
  constructor(freshness: Freshness, onItem?: PriceListItemObserver) {
    this.grouper = new ItemGrouper(freshness, (entry, rows) => {
      onItem?.(entry, rows, freshness);
      const time = oldestTimeOf(entry);
      if (time !== null && (this.oldest === null || time < this.oldest)) this.oldest = time;
      const part = Buffer.from(this.parts.length === 0 ? JSON.stringify(entry) : `,${JSON.stringify(entry)}`);
      this.parts.push(part);
      this.bytes += part.length;
    });
  }

  add(rows: readonly SnapshotInputRow[]): void {
    this.grouper.add(rows);
  }

  finish(): { json: Buffer; item_count: number; oldest_input_at: string | null } {
    this.grouper.flush();
    const head = Buffer.from(`{"currency":"USD","item_count":${this.parts.length},"oldest_input_at":${JSON.stringify(this.oldest)},"items":[`);
    const tail = Buffer.from(']}');
    const json = Buffer.concat([head, ...this.parts, tail], head.length + this.bytes + tail.length);
    const itemCount = this.parts.length;
    this.parts.length = 0;
    return { json, item_count: itemCount, oldest_input_at: this.oldest };
  }
}

/**
 * The list restricted to one source: versions without it are dropped, and items left without any
 * price. Each version keeps its cross-market consensus, so the source can be read against it.
 */
export function filterPriceListBySource(list: PublicPriceList, source: string): PublicPriceList {
  const only = (prices: PublicVersionPrices): PublicVersionPrices | null => {
    const price = prices.sources[source];
    if (!price) return null;
    const filtered: PublicVersionPrices = {
      sources: { [source]: price },
      min: price.price,
      median: price.price,
      max: price.price,
      consensus: prices.consensus,
    };
    if (prices.sales_7d) filtered.sales_7d = prices.sales_7d;
    return filtered;
  };
  const items: PublicPriceItem[] = [];
  for (const entry of list.items) {
    const others: Record<string, PublicVersionPrices> = {};
    for (const [name, prices] of Object.entries(entry.versions ?? {})) {
      const filtered = only(prices);
      if (filtered) others[name] = filtered;
    }
    const defaultPrices = only(entry);
    if (!defaultPrices && Object.keys(others).length === 0) continue;
    items.push(item(entry.market_hash_name, entry.catalog_id, defaultPrices ?? noPrices(), others));
  }
  return { currency: 'USD', source, item_count: items.length, oldest_input_at: oldestTime(items), items };
}

/**
 * What GET /v1/prices/{market_hash_name} adds to an item of the list, looked up once per snapshot and
 * item: its image (docs/design.md §18) and per version its sales windows and liquidity (docs/design.md §19).
 */
export type ItemExtras = { image: ItemImage | null; sales: ReadonlyMap<string, Sales>; liquidity: ReadonlyMap<string, Liquidity> };

const NO_SALES: Sales = { '24h': null, '7d': null, '30d': null, '90d': null };
const NO_LIQUIDITY: Liquidity = { listings: null, sales_7d: null, days_to_sell: null };

/**
 * `GET /v1/prices/{market_hash_name}`: every stored version of one list item, `default` first, each
 * with its full sales windows and liquidity in place of the list's `sales_7d`; `extras` undefined
 * (tests, benches) leaves out the image and gives every version no sales.
 */
export function itemPricesFromList(entry: PublicPriceItem, extras?: ItemExtras): PublicItemPrices {
  const versions: PublicItemPrices['versions'] = [];
  const withSales = (version: string, prices: PublicVersionPrices) => {
    const { sales_7d: _list, ...rest } = prices;
    return { version, ...rest, sales: extras?.sales.get(version) ?? NO_SALES, liquidity: extras?.liquidity.get(version) ?? NO_LIQUIDITY };
  };
  if (Object.keys(entry.sources).length > 0) {
    versions.push(
      withSales('default', {
        sources: entry.sources,
        min: entry.min,
        median: entry.median,
        max: entry.max,
        consensus: entry.consensus,
        sales_7d: entry.sales_7d,
      }),
    );
  }
  for (const [name, prices] of Object.entries(entry.versions ?? {})) versions.push(withSales(name, prices));
  if (extras === undefined) return { market_hash_name: entry.market_hash_name, catalog_id: entry.catalog_id, currency: 'USD', versions };
  return { market_hash_name: entry.market_hash_name, catalog_id: entry.catalog_id, image: extras.image, currency: 'USD', versions };
}

/** A response body in every encoding we serve, with its strong ETag (quoted SHA-256 of the JSON). */
export type EncodedBody = { etag: string; json: Buffer; gzip: Buffer; br: Buffer };

export function etagOf(json: string | Uint8Array): string {
  return `"${sha256Hex(json)}"`;
}

const gzipAsync = promisify(gzip);
const brotliAsync = promisify(brotliCompress);

function brotliOptions(raw: Buffer, quality: number) {
  return {
    params: {
      [zlibConstants.BROTLI_PARAM_MODE]: zlibConstants.BROTLI_MODE_TEXT,
      [zlibConstants.BROTLI_PARAM_QUALITY]: quality,
      [zlibConstants.BROTLI_PARAM_SIZE_HINT]: raw.length,
    },
  };
}

/**
 * Compresses on libuv's thread pool, not the event loop. Brotli quality trades time for size: the
 * full list (once per snapshot, in each API process that serves it) uses a higher one than the
 * bodies derived from it. `etag`, when the caller already has it (etagOf of these bytes, computed
 * off the event loop), saves hashing megabytes here.
 */
export async function encodeBody(json: string | Buffer, options: { brotliQuality: number; gzipLevel?: number; etag?: string }): Promise<EncodedBody> {
  const raw = typeof json === 'string' ? Buffer.from(json) : json;
  const [gzipped, brotli] = await Promise.all([gzipAsync(raw, { level: options.gzipLevel ?? 6 }), brotliAsync(raw, brotliOptions(raw, options.brotliQuality))]);
  return { etag: options.etag ?? etagOf(raw), json: raw, gzip: gzipped, br: brotli };
}

/**
 * A body whose compressed encodings are made when first asked for, each once (on the thread pool,
 * as encodeBody; a failed one is forgotten, so the next ask tries again). The ETag is of the JSON, so
 * it is known before any encoding: the first client of a derived list waits only for the encoding it
 * negotiated (none for identity), never for the others.
 */
export type LazyEncodedBody = { etag: string; json: Buffer; encoded(coding: 'gzip' | 'br'): Promise<Buffer> };

export function lazyEncodedBody(json: Buffer, options: { brotliQuality: number; gzipLevel?: number; etag?: string }): LazyEncodedBody {
  const made = new Map<'gzip' | 'br', Promise<Buffer>>();
  return {
    etag: options.etag ?? etagOf(json),
    json,
    encoded(coding) {
      let bytes = made.get(coding);
      if (!bytes) {
        const making = coding === 'gzip' ? gzipAsync(json, { level: options.gzipLevel ?? 6 }) : brotliAsync(json, brotliOptions(json, options.brotliQuality));
        bytes = making;
        making.catch(() => {
          if (made.get(coding) === making) made.delete(coding);
        });
        made.set(coding, making);
      }
      return bytes;
    },
  };
}

/** For small bodies (one item): synchronous, cheaper than a trip to the thread pool. */
export function encodeSmallBody(json: string, options: { brotliQuality: number }): EncodedBody {
  const raw = Buffer.from(json);
  return {
    etag: etagOf(raw),
    json: raw,
    gzip: gzipSync(raw),
    br: brotliCompressSync(raw, {
      params: { [zlibConstants.BROTLI_PARAM_MODE]: zlibConstants.BROTLI_MODE_TEXT, [zlibConstants.BROTLI_PARAM_QUALITY]: options.brotliQuality },
    }),
  };
}
