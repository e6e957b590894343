import type { Sql } from '../platform/db.ts';
import type { Logger } from '../platform/logger.ts';
import { type Conversion, convertMoneyFields, withCurrency } from './currency.ts';
import type { DerivedListRequest } from './derived-list.ts';
import { DerivedListPool } from './derived-list-pool.ts';
import {
  type EncodedBody,
  encodeBody,
  encodeSmallBody,
  type ItemExtras,
  itemPricesFromList,
  type LazyEncodedBody,
  lazyEncodedBody,
  type PublicPriceItem,
} from './public-document.ts';
import { findNewestPriceSnapshot, findNewestPriceSnapshotId, type PriceSnapshotRecord } from './repository.ts';
import { SNAPSHOT_BROTLI_QUALITY } from './snapshot.ts';
import type { SnapshotIndex } from './snapshot-index.ts';

/** What indexes a snapshot and builds its derived lists: a DerivedListPool (tests may stand in for it). */
export type DerivedListBuilder = Pick<DerivedListPool, 'build' | 'index'>;

/** How often an API process asks Postgres whether a newer snapshot exists (at most; only while serving). */
export const SNAPSHOT_POLL_INTERVAL_MS = 2_000;
/**
 * A process that has served no keyless price request for this long is idle: an announced snapshot
 * is not loaded (fetching and parsing ~18 MB costs a fraction of a second of CPU per build); the one
 * in hand is dropped instead and the next request loads the newest.
 */
export const SNAPSHOT_IDLE_AFTER_MS = 60_000;
// Bodies derived in the API (per-source lists, single items) are compressed once per snapshot.
const DERIVED_BROTLI_QUALITY = 5;
// Per-item bodies are memoised per snapshot; a crawler walking every name resets the memo rather than growing it.
const ITEM_BODY_MEMO_LIMIT = 20_000;
// Derived lists (per source, per currency, both) held per snapshot, the least recently built dropped
// first: each holds the list in up to three encodings (~35 MB with nine sources), each made when first asked for.
const DERIVED_LIST_LIMIT = 8;

/** What tells two conversions apart: the currency and the exact rates it was made with. */
const conversionKey = (conversion: Conversion | null) =>
  conversion ? `${conversion.currency}@${conversion.fx.as_of}:${conversion.rates.quote}/${conversion.rates.usd}` : 'USD';

/** The snapshot's bytes in a SharedArrayBuffer: every derived-list build reads them without a copy. */
function sharedCopy(bytes: Buffer): Buffer {
  const shared = Buffer.from(new SharedArrayBuffer(bytes.length));
  shared.set(bytes);
  return shared;
}

/**
 * One stored snapshot held in memory: the full list in every encoding as stored, where each item is
 * in it by market_hash_name, and the bodies derived from it (per source, per item), each computed
 * once. Made by `LoadedPriceSnapshot.load`: the list is parsed in a derived-list thread, never here.
 */
export class LoadedPriceSnapshot {
  readonly id: number;
  readonly createdAt: Date;
  readonly itemCount: number;
  readonly etag: string;
  /**
   * The list in every encoding. Compressed here, once, on the thread pool, started as the snapshot is
   * loaded (a process loads snapshots only while it serves the list); older snapshots stored
   * their own encodings.
   */
  readonly body: Promise<EncodedBody>;
  /**
   * Each item's position in the index by market_hash_name: its JSON text is read from the list's own
   * bytes when asked for. Neither parsed objects (tens of thousands of small object graphs kept for
   * the snapshot's life made every garbage collection slower) nor a string per item.
   */
  private readonly byName: Map<string, number>;
  private readonly index: SnapshotIndex;
  /** The full list's JSON, in a SharedArrayBuffer (the derived-list threads read it in place). */
  private readonly json: Buffer;
  /** Where the items' JSON is: the list's own bytes, or the index's copy (see SnapshotIndex.items). */
  private readonly items: Buffer;
  private readonly derivedBodies = new Map<string, Promise<LazyEncodedBody>>();
  /** derivedBody's answers: every encoding of a derived body, made once. */
  private readonly everyEncoding = new WeakMap<LazyEncodedBody, Promise<EncodedBody>>();
  private readonly itemBodies = new Map<string, EncodedBody>();

  /**
   * The snapshot of `record`, indexed by `lists` (a derived-list thread) and starting to compress
   * the full list on the thread pool; `lists` also builds its derived lists (per source, per currency).
   */
  static async load(record: PriceSnapshotRecord, lists: DerivedListBuilder): Promise<LoadedPriceSnapshot> {
    const json = sharedCopy(record.body);
    return new LoadedPriceSnapshot(record, json, await lists.index(json), lists);
  }

  private constructor(
    record: PriceSnapshotRecord,
    json: Buffer,
    index: SnapshotIndex,
    private readonly lists: DerivedListBuilder,
  ) {
    this.id = record.id;
    this.createdAt = record.created_at;
    this.itemCount = record.item_count;
    this.etag = record.etag;
    this.json = json;
    this.index = index;
    this.items = index.items ? Buffer.from(index.items.buffer, index.items.byteOffset, index.items.byteLength) : json;
    this.byName = new Map();
    let from = 0;
    for (let position = 0; position < index.nameEnds.length; position += 1) {
      const to = index.nameEnds[position]!;
      this.byName.set(index.names.slice(from, to), position);
      from = to;
    }
    this.body =
      record.body_gzip && record.body_br
        ? Promise.resolve({ etag: record.etag, json: this.json, gzip: record.body_gzip, br: record.body_br })
        : encodeBody(this.json, { brotliQuality: SNAPSHOT_BROTLI_QUALITY, etag: record.etag });
    // Requests await it and see a failure; this only keeps an unawaited failure from being unhandled.
    this.body.catch(() => undefined);
  }

  /**
   * The list restricted to one source and/or in another currency (docs/design.md §9 and §14), derived at its
   * first request, then reused while the snapshot is current; the full USD list is `body`. A new set
   * of exchange rates makes a new body. The list is built in a derived-list thread and each encoding
   * is compressed on the thread pool when first asked for (LazyEncodedBody): the event loop only
   * waits (docs/design.md §21), and the first client waits only for its own encoding. Concurrent requests for
   * one body share its build; a failed build is forgotten, so the next request tries again.
   */
  lazyDerivedBody(source: string | undefined, conversion: Conversion | null): Promise<EncodedBody | LazyEncodedBody> {
    if (source === undefined && conversion === null) return this.body;
    const key = `${source ?? '*'}|${conversionKey(conversion)}`;
    let body = this.derivedBodies.get(key);
    if (!body) {
      const request: DerivedListRequest = {};
      if (source !== undefined) request.source = source;
      if (conversion) request.conversion = { currency: conversion.currency, fx: conversion.fx, rate: conversion.rates.quote, usdRate: conversion.rates.usd };
      const building = this.lists
        .build(this.json, request)
        .then((built) => lazyEncodedBody(built.json, { brotliQuality: DERIVED_BROTLI_QUALITY, etag: built.etag }));
      body = building;
      building.catch(() => {
        if (this.derivedBodies.get(key) === building) this.derivedBodies.delete(key);
      });
      if (this.derivedBodies.size >= DERIVED_LIST_LIMIT) this.derivedBodies.delete(this.derivedBodies.keys().next().value!);
      this.derivedBodies.set(key, building);
    }
    return body;
  }

  /** lazyDerivedBody with every encoding made (the same bytes a request is served), once per body. */
  async derivedBody(source: string | undefined, conversion: Conversion | null): Promise<EncodedBody> {
    const body = await this.lazyDerivedBody(source, conversion);
    if (!('encoded' in body)) return body;
    let every = this.everyEncoding.get(body);
    if (!every) {
      every = Promise.all([body.encoded('gzip'), body.encoded('br')]).then(([gzip, br]) => ({ etag: body.etag, json: body.json, gzip, br }));
      const made = every;
      made.catch(() => {
        if (this.everyEncoding.get(body) === made) this.everyEncoding.delete(body);
      });
      this.everyEncoding.set(body, made);
    }
    return every;
  }

  /**
   * Every stored version of one item (in the conversion's currency), or null when the snapshot has no
   * price for that name. With `extrasOf` (GET /v1/prices/{name}) the item's `image` (docs/design.md §18) and
   * each version's sales windows and liquidity (docs/design.md §19) follow its catalog_id, looked up once per
   * snapshot and name (the body is kept with them), so a repeated request costs no query; without it
   * the body has no `image` and no sales.
   */
  itemBody(marketHashName: string, conversion: Conversion | null = null): EncodedBody | null {
    return this.buildItemBody(marketHashName, conversion, undefined);
  }

  /** itemBody with the item's image, sales and liquidity (see there); the memo is consulted before any lookup. */
  async itemBodyWithExtras(
    marketHashName: string,
    conversion: Conversion | null,
    extrasOf: (catalogId: string) => Promise<ItemExtras>,
  ): Promise<EncodedBody | null> {
    const memoKey = `${conversion ? `${marketHashName}\u0000${conversionKey(conversion)}` : marketHashName}\u0000extras`;
    const memo = this.itemBodies.get(memoKey);
    if (memo) return memo;
    const position = this.byName.get(marketHashName);
    if (position === undefined) return null;
    const catalogId = this.catalogIdAt(position);
    return this.buildItemBody(marketHashName, conversion, await extrasOf(catalogId));
  }

  private catalogIdAt(position: number): string {
    const text = this.items.toString('utf8', this.index.starts[position], this.index.ends[position]);
    return (JSON.parse(text) as PublicPriceItem).catalog_id;
  }

  private buildItemBody(marketHashName: string, conversion: Conversion | null, extras: ItemExtras | undefined): EncodedBody | null {
    const memoKey = `${conversion ? `${marketHashName}\u0000${conversionKey(conversion)}` : marketHashName}${extras === undefined ? '' : '\u0000extras'}`;
    const memo = this.itemBodies.get(memoKey);
    if (memo) return memo;
    const position = this.byName.get(marketHashName);
    if (position === undefined) return null;
    const text = this.items.toString('utf8', this.index.starts[position], this.index.ends[position]);
    let document = itemPricesFromList(JSON.parse(text) as PublicPriceItem, extras);
    if (conversion) {
      convertMoneyFields(document.versions, conversion.convert);
      document = withCurrency(document, conversion);
    }
    const body = encodeSmallBody(JSON.stringify(document), { brotliQuality: DERIVED_BROTLI_QUALITY });
    if (this.itemBodies.size >= ITEM_BODY_MEMO_LIMIT) this.itemBodies.clear();
    this.itemBodies.set(memoKey, body);
    return body;
  }
}

/**
 * The newest price snapshot of this API process (docs/design.md §9: keyless prices are served from memory,
 * never by a per-request query over all items). Loaded at first use; afterwards a request that finds
 * the last check older than the poll interval starts a background `select max(id)` and is served
 * the snapshot in hand. `notify()` (Redis pub/sub from the builder) checks at once. Owns the threads
 * that build derived lists (`close()` ends them).
 */
export class PriceSnapshotCache {
  private loaded: LoadedPriceSnapshot | null = null;
  private lastCheckAt = Number.NEGATIVE_INFINITY;
  private checking: Promise<void> | null = null;
  private recheck = false;
  private lastUsedAt = Number.NEGATIVE_INFINITY;
  private readonly pollIntervalMs: number;
  private readonly idleAfterMs: number;
  /** Builds the derived lists of every snapshot this cache loads, off the event loop. */
  readonly lists: DerivedListPool;

  constructor(
    private readonly sql: Sql,
    private readonly log: Logger,
    options: { pollIntervalMs?: number; idleAfterMs?: number; lists?: DerivedListPool } = {},
  ) {
    this.pollIntervalMs = options.pollIntervalMs ?? SNAPSHOT_POLL_INTERVAL_MS;
    this.idleAfterMs = options.idleAfterMs ?? SNAPSHOT_IDLE_AFTER_MS;
    this.lists = options.lists ?? new DerivedListPool({ log });
  }

  /** Ends the derived-list threads (builds in flight reject). */
  close(): Promise<void> {
    return this.lists.close();
  }

  /** The id of the snapshot in hand (null when none is loaded), for tests and logs. */
  get loadedId(): number | null {
    return this.loaded?.id ?? null;
  }

  /** The snapshot to serve, or null when none exists yet (or none could be loaded). */
  async current(): Promise<LoadedPriceSnapshot | null> {
    this.lastUsedAt = performance.now();
    if (!this.loaded) {
      await this.refresh(false);
      return this.loaded;
    }
    void this.refresh(false);
    return this.loaded;
  }

  /**
   * A newer snapshot was announced: check now (or right after a check in flight). An idle process
   * drops the snapshot in hand instead, so the next request loads the newest and an API nobody
   * asks for prices neither spends CPU on every build nor holds the list in memory.
   */
  notify(): void {
    if (performance.now() - this.lastUsedAt > this.idleAfterMs) {
      if (this.loaded) this.log.debug({ snapshot_id: this.loaded.id }, 'idle: price snapshot dropped until the next request');
      this.loaded = null;
      this.lastCheckAt = Number.NEGATIVE_INFINITY;
      return;
    }
    if (this.checking) this.recheck = true;
    else void this.refresh(true);
  }

  private refresh(force: boolean): Promise<void> {
    if (this.checking) return this.checking;
    const now = performance.now();
    if (!force && now - this.lastCheckAt < this.pollIntervalMs) return Promise.resolve();
    this.lastCheckAt = now;
    this.checking = this.loadIfNewer().finally(() => {
      this.checking = null;
      if (this.recheck) {
        this.recheck = false;
        void this.refresh(true);
      }
    });
    return this.checking;
  }

  private async loadIfNewer(): Promise<void> {
    try {
      const newestId = await findNewestPriceSnapshotId(this.sql);
      if (newestId === null || (this.loaded && newestId <= this.loaded.id)) return;
      const record = await findNewestPriceSnapshot(this.sql);
      if (!record || (this.loaded && record.id <= this.loaded.id)) return;
      this.loaded = await LoadedPriceSnapshot.load(record, this.lists);
      this.log.debug({ snapshot_id: record.id, items: record.item_count }, 'price snapshot loaded');
    } catch (error) {
      // Keep serving the snapshot in hand; the next poll tries again. With none in hand the requests
      // waiting for this check answer 503, and the next request checks again at once rather than
      // after the poll interval: the snapshot exists, and a failure here is usually a passing one
      // (a connection that could not be opened in time).
      if (!this.loaded) this.lastCheckAt = Number.NEGATIVE_INFINITY;
      this.log.warn({ err: (error as Error).message }, 'could not check for a newer price snapshot');
    }
  }
}
