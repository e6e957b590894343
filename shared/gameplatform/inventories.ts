import { z } from 'zod';
import type { Config } from '../platform/config.ts';
import { copyRows, type Queryable, type Sql, type TransactionSql } from '../platform/db.ts';
import { newId } from '../util/ids.ts';
import type { Conversion } from '../prices/currency.ts';
import type { SourceName } from '../sources/names.ts';
import { assetValueSchema, valueAssets } from './valuation.ts';
import {
  CertificateError,
  decodeCertificate,
  familyOfDefinition,
  insightsSchema,
  itemIdentitySchema,
  itemInsights,
  itemStateSchema,
  phaseVersionOfPaint,
  type CharmState,
  type ItemIdentity,
  type ItemState,
} from '../inspect/index.ts';
import { CHARM_PATTERN_MAX } from '../inspect/item-validation.ts';
import { MAX_NAME_TAG_LENGTH } from '../inspect/selector.ts';
import type { Logger } from '../platform/logger.ts';
import { SOURCE_NAMES } from '../sources/names.ts';
import {
  fetchInventoryPage,
  isObject,
  SteamUnavailableError,
  type InventoryPage,
} from './steam-client.ts';

/**
 * DESIGN 11 inventories: every upstream page of a CS2 inventory fetched within a time budget,
 * normalised to one record per asset, stored as an immutable snapshot (inventory_snapshots +
 * inventory_assets), and served from Postgres in pages pinned to that snapshot.
 */

export { assetValueSchema };

export const inventoryAssetSchema = z.object({
  asset_id: z.string(),
  class_id: z.string(),
  instance_id: z.string(),
  market_hash_name: z.string().nullable(),
  catalog_id: z.string().nullable().describe('null when the catalog does not know the item'),
  name: z.string().nullable(),
  type: z.string().nullable(),
  tradable: z.boolean(),
  marketable: z.boolean(),
  trade_hold_until: z.string().nullable().describe('From the "Tradable After …" text of the description, else null'),
  item: itemIdentitySchema.nullable().describe('null when neither the certificate nor the catalog identifies the item'),
  state: itemStateSchema.describe(
    'From the item certificate (property 6) where it has the value, else paint seed (property 1), wear (property 2), name tag (property 5), a standalone charm’s pattern (property 3) and an attached charm’s pattern (asset_accessories, property 3)',
  ),
  insights: insightsSchema,
  certificate: z.string().nullable().describe('Asset property 6, the hex inspect certificate'),
  inspect_link: z.string().nullable(),
  value: assetValueSchema.nullable().describe('With `valuation=<marketplace>`: the item and its stickers and charms at that marketplace (DESIGN 14), else null'),
});
export type InventoryAsset = z.infer<typeof inventoryAssetSchema>;
/** What inventory_assets.record holds: the asset without its valuation (added when read). */
export type StoredAsset = Omit<InventoryAsset, 'value'>;

export const inventoryPageSchema = z.object({
  steam_id: z.string(),
  snapshot_id: z.string(),
  fetched_at: z.string(),
  stale: z.boolean().describe('True when the snapshot is older than INVENTORY_TTL_SECONDS (Steam failed, or a cursor pins an older snapshot)'),
  total_assets: z.number().int(),
  data: z.array(inventoryAssetSchema),
  next_cursor: z.string().nullable(),
});

export type InventorySnapshot = { id: string; steam_id: string; fetched_at: Date; total_assets: number };

export type InventoryDeps = { config: Config; sql: Sql; log: Logger; now: () => Date };

/**
 * One rendered page of GET /v2/inventories as the bytes sent: `fresh` is the body with
 * `"stale":false`, `staleAt` the byte offset of that `false`, so the `stale: true` variant (computed
 * per request from fetched_at) is spliced in without rendering or serialising the page again
 * (inventory-cache.ts keeps pages and their variants).
 */
export type RenderedInventoryPage = {
  fresh: Uint8Array;
  staleAt: number;
  staleBody?: Uint8Array;
  /** Compressed variants, made at their first request and kept with the page (`<stale>:<coding>`). */
  encoded?: Map<string, Uint8Array>;
};

/** Wall-clock budget of one whole-inventory fetch (every page, waits included). */
export const INVENTORY_FETCH_BUDGET_MS = 20_000;
/** One page request's timeout (cut to what is left of the budget). */
const PAGE_TIMEOUT_MS = 10_000;
/** A 429's Retry-After is waited out only when at most this long (and within the budget). */
const MAX_RETRY_WAIT_MS = 3_000;
const MAX_RETRIES_PER_PAGE = 2;

// ---------------------------------------------------------------------------------------------
// Normalising

const ASSET_ID = /^[0-9]{1,20}$/;
const MONTHS: Record<string, number> = { Jan: 0, Feb: 1, Mar: 2, Apr: 3, May: 4, Jun: 5, Jul: 6, Aug: 7, Sep: 8, Oct: 9, Nov: 10, Dec: 11 };
// "Tradable After Jun 20, 2025 (7:00:00) GMT" and the 2025 form "Tradable/Marketable After …".
const TRADE_HOLD = /Tradable(?:\/Marketable)? After ([A-Z][a-z]{2}) (\d{1,2}), (\d{4}) \((\d{1,2}):(\d{2}):(\d{2})\) GMT/;

/** The instant of a "Tradable After <date> (<time>) GMT" line, else null. */
export function parseTradeHold(lines: unknown[]): string | null {
  for (const line of lines) {
    if (!isObject(line) || typeof line.value !== 'string') continue;
    const match = TRADE_HOLD.exec(line.value);
    if (!match) continue;
    const [, month, day, year, hour, minute, second] = match;
    const monthIndex = MONTHS[month!];
    if (monthIndex === undefined) continue;
    const at = new Date(Date.UTC(Number(year), monthIndex, Number(day), Number(hour), Number(minute), Number(second)));
    if (Number.isNaN(at.getTime()) || at.getUTCDate() !== Number(day)) continue;
    return at.toISOString();
  }
  return null;
}

/** The price version of a Doppler / Gamma Doppler paint: shared with the insights' `phase` (DESIGN 14). */
export { phaseVersionOfPaint };

const stringOf = (value: unknown): string | null => (typeof value === 'string' ? value : typeof value === 'number' && Number.isFinite(value) ? String(value) : null);
const flag = (value: unknown): boolean => value === 1 || value === true || value === '1';

/**
 * What one asset's properties say. Steam's property ids (IEconService/GetAssetPropertySchema): 1 paint
 * seed, 2 wear, 3 charm pattern, 4 sticker wear, 5 name tag, 6 item certificate. Since 2025 the
 * certificate usually lacks the name tag and the charm patterns, which come as property 5, as
 * property 3 of a standalone charm, and as property 3 in the `standalone_properties` of the charm's
 * entry in `asset_accessories` (DESIGN 14). Every entry also has a `name`, localized with `l=`:
 * only `propertyid` is read, never the name.
 */
type AssetProperties = {
  paintSeed?: number;
  wear?: number;
  /** Property 3 of the asset itself: a standalone charm's pattern. */
  charmPattern?: number;
  /** Property 5. */
  nameTag?: string;
  /** Property 6. */
  certificate: string | null;
  /** Property 3 of each accessory that has one, in Steam's order: the patterns of attached charms. */
  accessoryCharmPatterns: number[];
};

function charmPatternOf(property: Record<string, unknown>): number | undefined {
  const pattern = Number(stringOf(property.int_value));
  return Number.isInteger(pattern) && pattern >= 0 && pattern <= CHARM_PATTERN_MAX ? pattern : undefined;
}

/** The pattern (property 3) in one `asset_accessories` entry's standalone_properties, if any. */
function accessoryCharmPattern(accessory: unknown): number | undefined {
  if (!isObject(accessory) || !Array.isArray(accessory.standalone_properties)) return undefined;
  for (const property of accessory.standalone_properties) {
    if (isObject(property) && Number(property.propertyid) === 3) return charmPatternOf(property);
  }
  return undefined;
}

/**
 * Properties of one asset: `entry` is its `asset_properties` item, which carries `asset_accessories`
 * beside `asset_properties` (as the community inventory sends it); `looseAccessories` are entries
 * of a page-level `asset_accessories` array naming this asset id (read too, should Steam send them so).
 */
function readProperties(entry: unknown, looseAccessories: unknown[] = []): AssetProperties {
  const out: AssetProperties = { certificate: null, accessoryCharmPatterns: [] };
  const nested = isObject(entry) && Array.isArray(entry.asset_accessories) ? entry.asset_accessories : [];
  for (const accessory of [...nested, ...looseAccessories]) {
    const pattern = accessoryCharmPattern(accessory);
    if (pattern !== undefined) out.accessoryCharmPatterns.push(pattern);
  }
  if (!isObject(entry) || !Array.isArray(entry.asset_properties)) return out;
  for (const property of entry.asset_properties) {
    if (!isObject(property)) continue;
    const id = Number(property.propertyid);
    if (id === 1) {
      const seed = Number(stringOf(property.int_value));
      if (Number.isInteger(seed) && seed >= 0 && seed <= 1000) out.paintSeed = seed;
    } else if (id === 2) {
      const wear = Number(stringOf(property.float_value));
      if (Number.isFinite(wear) && wear >= 0 && wear <= 1) out.wear = wear;
    } else if (id === 3) {
      const pattern = charmPatternOf(property);
      if (pattern !== undefined) out.charmPattern = pattern;
    } else if (id === 5) {
      const nameTag = property.string_value;
      if (typeof nameTag === 'string' && nameTag.length >= 1 && nameTag.length <= MAX_NAME_TAG_LENGTH) out.nameTag = nameTag;
    } else if (id === 6) {
      const certificate = stringOf(property.string_value);
      if (certificate && certificate.length <= 4096 && /^[0-9A-Fa-f]+$/.test(certificate)) out.certificate = certificate.toUpperCase();
    }
  }
  return out;
}

/**
 * The state with what the properties add where the certificate (or the catalog) left a gap: the
 * certificate wins where it has the value (DESIGN 14). A charm pattern needs a charm to go to, and
 * only the certificate names charm ids (an accessory carries a class id, not the charm id), so
 * patterns fill charms the certificate lists without one: property 3 of a standalone charm its
 * charms[0], the accessories' patterns the weapon's charms in order.
 */
function withPropertyValues(state: ItemState, item: ItemIdentity | null, props: AssetProperties): ItemState {
  let out = state;
  if (out.paint_seed === undefined && props.paintSeed !== undefined) out = { ...out, paint_seed: props.paintSeed };
  if (out.wear === undefined && props.wear !== undefined) out = { ...out, wear: props.wear };
  if (out.name_tag === undefined && props.nameTag !== undefined) out = { ...out, name_tag: props.nameTag };
  const patterns = item?.family === 'charm' ? (props.charmPattern === undefined ? [] : [props.charmPattern]) : props.accessoryCharmPatterns;
  if (out.charms && patterns.length > 0) {
    const charms: CharmState[] = out.charms.map((charm, position) => {
      const pattern = patterns[position];
      return charm.pattern === undefined && pattern !== undefined ? { ...charm, pattern } : charm;
    });
    out = { ...out, charms };
  }
  return out;
}

/** The inspect action's link with its placeholders filled, or null when one stays unknown. */
function inspectLinkOf(actions: unknown, steamId64: string, assetId: string, certificate: string | null): string | null {
  if (!Array.isArray(actions)) return null;
  const action = actions.find((entry) => isObject(entry) && typeof entry.link === 'string' && entry.link.includes('csgo_econ_action_preview'));
  if (!action) return null;
  let link = (action as { link: string }).link.replaceAll('%owner_steamid%', steamId64).replaceAll('%assetid%', assetId);
  if (link.includes('%propid:6%')) {
    if (!certificate) return null;
    link = link.replaceAll('%propid:6%', certificate);
  }
  return /%[a-z_:0-9]+%/i.test(link) ? null : link;
}

export type CatalogMatch = { catalog_id: string; definition_index: number | null; paint_index: number | null };

/** One record per asset, in upstream order; duplicate asset ids (overlapping pages) are kept once. */
export function normaliseInventory(steamId64: string, pages: InventoryPage[], catalog: Map<string, CatalogMatch>): StoredAsset[] {
  const descriptions = new Map<string, Record<string, unknown>>();
  const properties = new Map<string, unknown>();
  const looseAccessories = new Map<string, unknown[]>();
  for (const page of pages) {
    const pageAccessories = (page as { asset_accessories?: unknown }).asset_accessories;
    for (const accessory of Array.isArray(pageAccessories) ? pageAccessories : []) {
      if (!isObject(accessory) || typeof accessory.assetid !== 'string') continue;
      const list = looseAccessories.get(accessory.assetid);
      if (list) list.push(accessory);
      else looseAccessories.set(accessory.assetid, [accessory]);
    }
    for (const description of page.descriptions ?? []) {
      if (isObject(description)) descriptions.set(`${stringOf(description.classid)}_${stringOf(description.instanceid)}`, description);
    }
    for (const entry of page.asset_properties ?? []) {
      if (isObject(entry) && typeof entry.assetid === 'string') properties.set(entry.assetid, entry);
    }
  }
  const seen = new Set<string>();
  const records: StoredAsset[] = [];
  for (const page of pages) {
    for (const asset of page.assets ?? []) {
      if (!isObject(asset)) continue;
      const assetId = stringOf(asset.assetid);
      const classId = stringOf(asset.classid) ?? '0';
      const instanceId = stringOf(asset.instanceid) ?? '0';
      if (!assetId || !ASSET_ID.test(assetId) || seen.has(assetId)) continue;
      seen.add(assetId);
      const description = descriptions.get(`${classId}_${instanceId}`) ?? {};
      const marketHashName = typeof description.market_hash_name === 'string' ? description.market_hash_name : null;
      const match = marketHashName ? catalog.get(marketHashName) : undefined;
      const props = readProperties(properties.get(assetId), looseAccessories.get(assetId));
      let item: StoredAsset['item'] = null;
      let state: ItemState = {};
      if (props.certificate) {
        try {
          const decoded = decodeCertificate(props.certificate);
          item = decoded.item;
          state = decoded.state;
        } catch (error) {
          // A certificate we cannot read leaves the state to properties 1 and 2 (never a failure).
          if (!(error instanceof CertificateError)) throw error;
        }
      }
      if (!item && match?.definition_index != null) item = { family: familyOfDefinition(match.definition_index), definition_index: match.definition_index };
      if (state.paint_index === undefined && match?.paint_index != null) state = { paint_index: match.paint_index, ...state };
      state = withPropertyValues(state, item, props);
      const ownerLines = Array.isArray(description.owner_descriptions) ? description.owner_descriptions : [];
      const lines = Array.isArray(description.descriptions) ? description.descriptions : [];
      records.push({
        asset_id: assetId,
        class_id: classId,
        instance_id: instanceId,
        market_hash_name: marketHashName,
        catalog_id: match?.catalog_id ?? null,
        name: typeof description.name === 'string' ? description.name : null,
        type: typeof description.type === 'string' ? description.type : null,
        tradable: flag(description.tradable),
        marketable: flag(description.marketable),
        trade_hold_until: parseTradeHold([...ownerLines, ...lines]),
        item,
        state,
        // Computed once here and stored with the record (DESIGN 14), so reading a page never recomputes it.
        insights: itemInsights(item, state),
        certificate: props.certificate,
        inspect_link: inspectLinkOf(description.actions, steamId64, assetId, props.certificate),
      });
    }
  }
  return records;
}

// ---------------------------------------------------------------------------------------------
// Fetching

/**
 * Every page of the inventory, following `start_assetid` while `more_items`, at most
 * INVENTORY_MAX_PAGES pages and INVENTORY_FETCH_BUDGET_MS in all. A 429 is retried after its
 * Retry-After only when that wait is short and fits the budget; otherwise the error propagates.
 */
export async function fetchInventoryPages(
  deps: Pick<InventoryDeps, 'config' | 'now'>,
  steamId64: string,
  budgetMs = INVENTORY_FETCH_BUDGET_MS,
  options: {
    /** Awaited before every request (the inventory watch spends one unit of its Steam budget per page). */
    beforeRequest?: () => Promise<void>;
    /** Retries of a throttled page within the budget (default 2; the watch retries at its next interval instead). */
    retriesPerPage?: number;
    /** One page request's timeout (default 10 s). */
    pageTimeoutMs?: number;
  } = {},
): Promise<InventoryPage[]> {
  const deadline = Date.now() + budgetMs;
  const retriesPerPage = options.retriesPerPage ?? MAX_RETRIES_PER_PAGE;
  const pages: InventoryPage[] = [];
  let start: string | null = null;
  for (;;) {
    if (pages.length >= deps.config.INVENTORY_MAX_PAGES) {
      throw new SteamUnavailableError(`inventory has more than ${deps.config.INVENTORY_MAX_PAGES} pages`, 60_000);
    }
    let page: InventoryPage | undefined;
    for (let attempt = 0; page === undefined; attempt += 1) {
      await options.beforeRequest?.();
      const left = deadline - Date.now();
      if (left <= 0) throw new SteamUnavailableError(`fetch budget of ${budgetMs} ms spent`, 30_000);
      try {
        page = await fetchInventoryPage(deps.config, steamId64, start, { timeoutMs: Math.min(options.pageTimeoutMs ?? PAGE_TIMEOUT_MS, left), now: deps.now });
      } catch (error) {
        const waitMs = error instanceof SteamUnavailableError && error.throttled ? error.retryAfterMs : Infinity;
        if (attempt >= retriesPerPage || waitMs > MAX_RETRY_WAIT_MS || Date.now() + waitMs >= deadline) throw error;
        await Bun.sleep(waitMs);
      }
    }
    pages.push(page);
    if (!flag(page.more_items)) return pages;
    const next = stringOf(page.last_assetid);
    if (!next || !ASSET_ID.test(next) || next === start) throw new SteamUnavailableError('more_items without a usable last_assetid', 30_000);
    start = next;
  }
}

// ---------------------------------------------------------------------------------------------
// Storing and reading

/** Catalog items of these names, in one set-based query. */
export async function findCatalogMatches(db: Queryable, names: string[]): Promise<Map<string, CatalogMatch>> {
  const unique = [...new Set(names)];
  if (unique.length === 0) return new Map();
  const rows = await db<(CatalogMatch & { market_hash_name: string })[]>`
    select market_hash_name, catalog_id, definition_index, paint_index
    from catalog_items where market_hash_name = any(${unique}::text[])`;
  return new Map(rows.map((row) => [row.market_hash_name, { catalog_id: row.catalog_id, definition_index: row.definition_index, paint_index: row.paint_index }]));
}

/** A snapshot normalised from fetched pages, not yet stored (see insertInventorySnapshot). */
export type PreparedSnapshot = { snapshot: InventorySnapshot; records: StoredAsset[]; upstreamTotal: number | null };

/** Normalises fetched pages into a new snapshot (catalog matches read in one query). */
export async function prepareInventorySnapshot(db: Queryable, steamId64: string, pages: InventoryPage[], fetchedAt: Date): Promise<PreparedSnapshot> {
  const names: string[] = [];
  for (const page of pages) for (const d of page.descriptions ?? []) if (isObject(d) && typeof d.market_hash_name === 'string') names.push(d.market_hash_name);
  const catalog = await findCatalogMatches(db, names);
  const records = normaliseInventory(steamId64, pages, catalog);
  const reported = pages[0]?.total_inventory_count;
  return {
    snapshot: { id: newId(), steam_id: steamId64, fetched_at: fetchedAt, total_assets: records.length },
    records,
    upstreamTotal: typeof reported === 'number' && Number.isSafeInteger(reported) ? reported : null,
  };
}

/** Stores a prepared snapshot in the caller's transaction (rows by COPY). */
export async function insertInventorySnapshot(tx: TransactionSql, prepared: PreparedSnapshot): Promise<void> {
  const { snapshot, records } = prepared;
  await tx`
    insert into inventory_snapshots (id, steam_id, fetched_at, total_assets, upstream_total)
    values (${snapshot.id}, ${snapshot.steam_id}, ${snapshot.fetched_at}, ${records.length}, ${prepared.upstreamTotal})`;
  await copyRows(
    tx,
    'inventory_assets (snapshot_id, position, asset_id, tradable, catalog_id, record)',
    records.map((record, position) => [snapshot.id, position, record.asset_id, record.tradable ? 't' : 'f', record.catalog_id, JSON.stringify(record)]),
  );
}

/** Normalises fetched pages and stores them as a new snapshot (one transaction, rows by COPY). */
export async function storeInventorySnapshot(sql: Sql, steamId64: string, pages: InventoryPage[], fetchedAt: Date): Promise<InventorySnapshot> {
  const prepared = await prepareInventorySnapshot(sql, steamId64, pages, fetchedAt);
  await sql.begin((tx) => insertInventorySnapshot(tx, prepared));
  return prepared.snapshot;
}

export async function latestSnapshot(db: Queryable, steamId64: string): Promise<InventorySnapshot | null> {
  const [row] = await db<InventorySnapshot[]>`
    select id, steam_id, fetched_at, total_assets from inventory_snapshots
    where steam_id = ${steamId64} order by fetched_at desc, id desc limit 1`;
  return row ?? null;
}

export async function findSnapshot(db: Queryable, snapshotId: string): Promise<InventorySnapshot | null> {
  const [row] = await db<InventorySnapshot[]>`select id, steam_id, fetched_at, total_assets from inventory_snapshots where id = ${snapshotId}`;
  return row ?? null;
}

/**
 * The latest snapshot of an inventory no older than `maxAgeSeconds`, fetching a new one when there
 * is none (or `refresh`). When Steam is unavailable or throttling, an older snapshot is returned
 * with `stale: true`. Throws SteamPrivateError, SteamNotFoundError, or SteamUnavailableError (no
 * snapshot to fall back on); see steamApiError for their API answers.
 */
export async function ensureInventorySnapshot(
  deps: InventoryDeps,
  steamId64: string,
  options: { maxAgeSeconds: number; refresh?: boolean },
): Promise<{ snapshot: InventorySnapshot; stale: boolean }> {
  const latest = await latestSnapshot(deps.sql, steamId64);
  if (latest && !options.refresh && isFreshSnapshot(latest, deps.now(), options.maxAgeSeconds)) {
    return { snapshot: latest, stale: false };
  }
  let pages: InventoryPage[];
  try {
    pages = await fetchInventoryPages(deps, steamId64);
  } catch (error) {
    if (error instanceof SteamUnavailableError) {
      deps.log.warn({ steam_id: steamId64, reason: error.reason, cached: Boolean(latest) }, 'steam inventory fetch failed');
      if (latest) return { snapshot: latest, stale: true };
    }
    throw error;
  }
  const stored = await storeInventorySnapshot(deps.sql, steamId64, pages, deps.now());
  return { snapshot: stored, stale: false };
}

/** Younger than `maxAgeSeconds` (INVENTORY_TTL_SECONDS): served without asking Steam. */
export function isFreshSnapshot(snapshot: InventorySnapshot, now: Date, maxAgeSeconds: number): boolean {
  return now.getTime() - snapshot.fetched_at.getTime() < maxAgeSeconds * 1000;
}

export type SnapshotAsset = { tradable: boolean; trade_hold_until: string | null; catalog_id: string | null; market_hash_name: string | null; record: StoredAsset };

/** These assets of a snapshot (absent ones are missing from the map), for trade intents. */
export async function findSnapshotAssets(db: Queryable, snapshotId: string, assetIds: string[]): Promise<Map<string, SnapshotAsset>> {
  if (assetIds.length === 0) return new Map();
  const rows = await db<{ asset_id: string; tradable: boolean; catalog_id: string | null; record: StoredAsset }[]>`
    select asset_id, tradable, catalog_id, record from inventory_assets
    where snapshot_id = ${snapshotId} and asset_id = any(${assetIds}::text[])`;
  return new Map(
    rows.map((row) => [
      row.asset_id,
      { tradable: row.tradable, trade_hold_until: row.record.trade_hold_until, catalog_id: row.catalog_id, market_hash_name: row.record.market_hash_name, record: withStoredInsights(row.record) },
    ]),
  );
}

/**
 * Records stored before insights existed (DESIGN 14) lack them; a snapshot can outlive its TTL (a
 * cursor pins it, and Steam failing serves it stale), so such a record gets them computed when read,
 * never stored back (snapshots are immutable). Records stored since carry them and are not touched.
 */
function withStoredInsights(record: StoredAsset): StoredAsset {
  if (isObject(record.insights)) return record;
  return { ...record, insights: itemInsights(record.item, record.state ?? {}) };
}

export type SnapshotPageRow = {
  position: number;
  catalog_id: string | null;
  paint_index: number | null;
  stickers: { sticker_id: number }[] | null;
  charms: { charm_id: number }[] | null;
  record: string;
  has_insights: boolean;
};

/** One page of a snapshot after `afterPosition` (exclusive), as stored JSON text, plus whether more follow. */
export async function readSnapshotPage(
  db: Queryable,
  snapshotId: string,
  afterPosition: number,
  limit: number,
): Promise<{ rows: SnapshotPageRow[]; more: boolean }> {
  // record::text: the stored JSON goes out as is, never parsed and re-serialised per request.
  const rows = await db<SnapshotPageRow[]>`
    select position, catalog_id, (record->'state'->>'paint_index')::int as paint_index, record->'state'->'stickers' as stickers,
           record->'state'->'charms' as charms, record::text as record, record ? 'insights' as has_insights from inventory_assets
    where snapshot_id = ${snapshotId} and position > ${afterPosition}
    order by position limit ${limit + 1}`;
  const more = rows.length > limit;
  if (more) rows.pop();
  for (const row of rows) if (!row.has_insights) row.record = JSON.stringify(withStoredInsights(JSON.parse(row.record) as StoredAsset));
  return { rows, more };
}

export { latestPricesOf, priceVersionOf } from './valuation.ts';

/**
 * One page of a snapshot after `afterPosition`, rendered as the response body (stale: false; see
 * inventoryPageBytes for the other). The stored records go out as Postgres wrote them: each gets
 * its `value` spliced in before its closing brace, so a page is never parsed and re-serialised.
 */
export async function renderInventoryPage(
  db: Queryable,
  snapshot: InventorySnapshot,
  options: {
    afterPosition: number;
    limit: number;
    valuation: SourceName | undefined;
    /** The valuation's currency (null: USD); its `fx` goes at the top of the page. */
    conversion?: Conversion | null;
    nextCursor: (lastPosition: number) => string;
  },
): Promise<RenderedInventoryPage> {
  const page = await readSnapshotPage(db, snapshot.id, options.afterPosition, options.limit);
  const values = new Map<number, string>();
  const conversion = options.conversion ?? null;
  if (options.valuation) {
    // DESIGN 14's one rule (valuation.ts): phase version without fallback, stickers and charms as their own items.
    const valued = await valueAssets(
      db,
      options.valuation,
      page.rows.map((row) => ({ catalog_id: row.catalog_id, paint_index: row.paint_index, stickers: row.stickers ?? [], charms: row.charms ?? [] })),
    );
    page.rows.forEach((row, index) => {
      const value = valued[index]!;
      const shown = conversion
        ? {
            ...value,
            price: value.price === null ? null : conversion.convert(value.price),
            currency: conversion.currency,
            stickers_total: conversion.convert(value.stickers_total),
            charms_total: conversion.convert(value.charms_total),
            total: conversion.convert(value.total),
          }
        : value;
      values.set(row.position, JSON.stringify(shown));
    });
  }
  const last = page.rows.at(-1);
  const nextCursor = page.more && last ? options.nextCursor(last.position) : null;
  const data = page.rows.map((row) => `${row.record.slice(0, -1)},"value":${values.get(row.position) ?? 'null'}}`).join(',');
  // Everything before `false` is ASCII (digits, a UUID, an ISO date), so its length is its byte offset.
  const fx = conversion ? `"currency":${JSON.stringify(conversion.currency)},"fx":${JSON.stringify(conversion.fx)},` : '';
  const head = `{${fx}"steam_id":${JSON.stringify(snapshot.steam_id)},"snapshot_id":${JSON.stringify(snapshot.id)},"fetched_at":${JSON.stringify(snapshot.fetched_at.toISOString())},"stale":`;
  const body = `${head}false,"total_assets":${snapshot.total_assets},"data":[${data}],"next_cursor":${JSON.stringify(nextCursor)}}`;
  return { fresh: Buffer.from(body), staleAt: head.length };
}
