import { itemInsights } from '../../inspect/index.ts';
import { recordSeenIcons, type SeenIcon } from '../../media/images/item-icons.ts';
import type { ImageHosts } from '../../media/images/item-images.ts';
import type { Config } from '../../platform/config.ts';
import { copyRows, type Queryable, type Sql, type TransactionSql } from '../../platform/db.ts';
import type { Logger } from '../../platform/logger.ts';
import type { SourceName } from '../../platform/source-names.ts';
import type { Conversion } from '../../prices/currency.ts';
import { newId } from '../../util/ids.ts';
import { SecretKeyring } from '../../webhooks/secrets.ts';
import { isObject, SteamUnavailableError } from '../steam-client.ts';
import { dropToken, ownerTokenFor } from '../steam-token.ts';
import { valueAssets } from '../valuation.ts';
import type { StoredAsset } from './asset-record.ts';
import { type Protection, UNKNOWN_PROTECTION } from './holds.ts';
import { assetImageOf, type CatalogMatch, DEFAULT_IMAGE_HOSTS, normaliseInventory } from './normalise.ts';
import { fetchInventoryPages, type InventoryContext, type InventoryPage, type InventoryRead, publicRead } from './steam-community.ts';
import { ownerInventoryRead, SteamTokenRefusedError } from './steam-econ.ts';

/**
 * The inventory snapshot store (docs/design.md §11): fetched pages normalised and stored as an immutable
 * snapshot (inventory_snapshots + inventory_assets), the latest one reused while fresh, and pages of
 * one snapshot read back and rendered from Postgres, pinned to that snapshot.
 */

/**
 * A stored snapshot. `workspace_id` null: the public read, shared by every workspace; else an
 * owner-token read, seen only by that workspace (docs/design.md §17). `contexts`: [2], or [2, 16] with a token.
 */
export type InventorySnapshot = {
  id: string;
  steam_id: string;
  fetched_at: Date;
  total_assets: number;
  workspace_id: string | null;
  contexts: InventoryContext[];
};

/**
 * `keyring` opens owner tokens (default: built from the configuration's WEBHOOK_SECRET_KEY); `demand`
 * hears the catalog items of each snapshot stored (docs/design.md §19: steam's sales read them first).
 */
export type InventoryDeps = {
  config: Config;
  sql: Sql;
  log: Logger;
  now: () => Date;
  keyring?: SecretKeyring;
  demand?: { record(catalogIds: Iterable<string>): void };
};

const keyringOf = (deps: InventoryDeps): SecretKeyring => deps.keyring ?? SecretKeyring.ofConfig(deps.config);

const SNAPSHOT_COLUMNS = 'id, steam_id, fetched_at, total_assets, workspace_id, contexts';
type SnapshotRow = Omit<InventorySnapshot, 'contexts'> & { contexts: (number | string)[] };
const snapshotOf = (row: SnapshotRow): InventorySnapshot => ({ ...row, contexts: row.contexts.map(Number) as InventoryContext[] });

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

/** Catalog items of these names, in one set-based query. */
export async function findCatalogMatches(db: Queryable, names: string[]): Promise<Map<string, CatalogMatch>> {
  const unique = [...new Set(names)];
  if (unique.length === 0) return new Map();
  const rows = await db<(CatalogMatch & { market_hash_name: string })[]>`
    select market_hash_name, catalog_id, definition_index, paint_index
    from catalog_items where market_hash_name = any(${unique}::text[])`;
  return new Map(
    rows.map((row) => [row.market_hash_name, { catalog_id: row.catalog_id, definition_index: row.definition_index, paint_index: row.paint_index }]),
  );
}

/** A snapshot normalised from fetched pages, not yet stored (see insertInventorySnapshot). */
export type PreparedSnapshot = {
  snapshot: InventorySnapshot;
  records: StoredAsset[];
  upstreamTotal: number | null;
  /** Assets whose hold or protection text no form could read (their hold stays null; logged by the caller). */
  unreadableHolds: number;
  /** The distinct icons the read carried (docs/design.md §18), recorded in item_icons with the snapshot. */
  icons: SeenIcon[];
};

/**
 * Normalises a read into a new snapshot (catalog matches read in one query): the public read's
 * pages (context 2), or an owner read's contexts merged, 2 first. An asset id met twice (an item
 * moving between contexts while the pages were read) is kept once, where it was met first.
 */
export async function prepareInventorySnapshot(
  db: Queryable,
  steamId64: string,
  input: InventoryPage[] | InventoryRead,
  fetchedAt: Date,
  images: ImageHosts = DEFAULT_IMAGE_HOSTS,
): Promise<PreparedSnapshot> {
  const read = Array.isArray(input) ? publicRead(input) : input;
  const names: string[] = [];
  for (const { pages } of read.contexts) {
    for (const page of pages)
      for (const d of page.descriptions ?? []) if (isObject(d) && typeof d.market_hash_name === 'string') names.push(d.market_hash_name);
  }
  const catalog = await findCatalogMatches(db, names);
  let records: StoredAsset[] = [];
  let unreadableHolds = 0;
  let upstreamTotal: number | null = null;
  let icons: SeenIcon[] = [];
  for (const { context, pages } of read.contexts) {
    const normalised = normaliseInventory(steamId64, pages, catalog, { readAt: fetchedAt, context, images });
    records = records.length === 0 ? normalised.records : records.concat(normalised.records);
    icons = icons.length === 0 ? normalised.icons : icons.concat(normalised.icons);
    unreadableHolds += normalised.unreadableHolds;
    const reported = pages[0]?.total_inventory_count;
    if (typeof reported === 'number' && Number.isSafeInteger(reported)) upstreamTotal = (upstreamTotal ?? 0) + reported;
  }
  if (read.contexts.length > 1) {
    const seen = new Set<string>();
    records = records.filter((record) => {
      if (seen.has(record.asset_id)) return false;
      seen.add(record.asset_id);
      return true;
    });
  }
  return {
    snapshot: {
      id: newId(),
      steam_id: steamId64,
      fetched_at: fetchedAt,
      total_assets: records.length,
      workspace_id: read.workspaceId,
      contexts: read.contexts.map(({ context }) => context),
    },
    records,
    upstreamTotal,
    unreadableHolds,
    icons,
  };
}

/** Stores a prepared snapshot in the caller's transaction (rows by COPY). */
export async function insertInventorySnapshot(tx: TransactionSql, prepared: PreparedSnapshot): Promise<void> {
  const { snapshot, records } = prepared;
  await tx`
    insert into inventory_snapshots (id, steam_id, fetched_at, total_assets, upstream_total, workspace_id, contexts)
    values (${snapshot.id}, ${snapshot.steam_id}, ${snapshot.fetched_at}, ${records.length}, ${prepared.upstreamTotal}, ${snapshot.workspace_id}, ${snapshot.contexts}::smallint[])`;
  await copyRows(
    tx,
    'inventory_assets (snapshot_id, position, asset_id, tradable, catalog_id, record)',
    records.map((record, position) => [snapshot.id, position, record.asset_id, record.tradable ? 't' : 'f', record.catalog_id, JSON.stringify(record)]),
  );
  // Last, so the snapshot's transaction holds the rows it refreshes for the shortest time.
  await recordSeenIcons(tx, prepared.icons, snapshot.fetched_at);
}

/** Normalises fetched pages and stores them as a new snapshot (one transaction, rows by COPY). */
export async function storeInventorySnapshot(
  sql: Sql,
  steamId64: string,
  pages: InventoryPage[],
  fetchedAt: Date,
  images: ImageHosts = DEFAULT_IMAGE_HOSTS,
): Promise<InventorySnapshot> {
  const prepared = await prepareInventorySnapshot(sql, steamId64, pages, fetchedAt, images);
  await sql.begin((tx) => insertInventorySnapshot(tx, prepared));
  return prepared.snapshot;
}

/** The latest snapshot of one scope: the public read (`workspaceId` null) or that workspace's owner reads. */
export async function latestSnapshot(db: Queryable, steamId64: string, workspaceId: string | null = null): Promise<InventorySnapshot | null> {
  const [row] = await db<SnapshotRow[]>`
    select ${db.unsafe(SNAPSHOT_COLUMNS)} from inventory_snapshots
    where steam_id = ${steamId64} and coalesce(workspace_id::text, '') = ${workspaceId ?? ''}
    order by fetched_at desc, id desc limit 1`;
  return row ? snapshotOf(row) : null;
}

export async function findSnapshot(db: Queryable, snapshotId: string): Promise<InventorySnapshot | null> {
  const [row] = await db<SnapshotRow[]>`select ${db.unsafe(SNAPSHOT_COLUMNS)} from inventory_snapshots where id = ${snapshotId}`;
  return row ? snapshotOf(row) : null;
}

/** Whether a workspace may read this snapshot: a public one, or one its own owner token read. */
export const snapshotVisibleTo = (snapshot: InventorySnapshot, workspaceId: string | null): boolean =>
  snapshot.workspace_id === null || snapshot.workspace_id === workspaceId;

/**
 * The latest snapshot of an inventory no older than `maxAgeSeconds`, fetching a new one when there
 * is none (or `refresh`). When Steam is unavailable or throttling, an older snapshot is returned
 * with `stale: true`. Throws SteamPrivateError, SteamNotFoundError, or SteamUnavailableError (no
 * snapshot to fall back on); see steamApiError for their API answers.
 *
 * With `workspaceId` (docs/design.md §17): when that workspace holds a live owner token for the SteamID, the
 * snapshot is its own (contexts 2 and 16, read with the token); a token Steam refuses is dropped
 * (audited) and the public read serves. Without one, the public read, shared by every workspace.
 */
export async function ensureInventorySnapshot(
  deps: InventoryDeps,
  steamId64: string,
  options: { maxAgeSeconds: number; refresh?: boolean; workspaceId?: string | null },
): Promise<{ snapshot: InventorySnapshot; stale: boolean }> {
  const owner = options.workspaceId ? await ownerTokenFor(deps.sql, keyringOf(deps), options.workspaceId, steamId64, deps.now()) : null;
  if (owner && options.workspaceId) {
    const workspaceId = options.workspaceId;
    try {
      return await ensureScopedSnapshot(deps, steamId64, options, workspaceId, () => ownerInventoryRead(deps, steamId64, { workspaceId, token: owner.token }));
    } catch (error) {
      if (!(error instanceof SteamTokenRefusedError)) throw error;
      await dropToken(deps.sql, owner.accountId, 'refused', { now: deps.now() });
      deps.log.warn(
        { steam_id: steamId64, account_id: Number(owner.accountId), status: error.status },
        'steam refused the owner token; dropped, the public read serves',
      );
    }
  }
  return ensureScopedSnapshot(deps, steamId64, options, null, async () => publicRead(await fetchInventoryPages(deps, steamId64)));
}

async function ensureScopedSnapshot(
  deps: InventoryDeps,
  steamId64: string,
  options: { maxAgeSeconds: number; refresh?: boolean },
  workspaceId: string | null,
  read: () => Promise<InventoryRead>,
): Promise<{ snapshot: InventorySnapshot; stale: boolean }> {
  const latest = await latestSnapshot(deps.sql, steamId64, workspaceId);
  if (latest && !options.refresh && isFreshSnapshot(latest, deps.now(), options.maxAgeSeconds)) {
    return { snapshot: latest, stale: false };
  }
  let fetched: InventoryRead;
  try {
    fetched = await read();
  } catch (error) {
    if (error instanceof SteamUnavailableError) {
      deps.log.warn({ steam_id: steamId64, reason: error.reason, cached: Boolean(latest), owner_read: workspaceId !== null }, 'steam inventory fetch failed');
      if (latest) return { snapshot: latest, stale: true };
    }
    throw error;
  }
  const prepared = await prepareInventorySnapshot(deps.sql, steamId64, fetched, deps.now(), deps.config);
  // docs/design.md §17: text no form reads is not an error; the read says how many assets kept a null hold.
  if (prepared.unreadableHolds > 0)
    deps.log.warn({ steam_id: steamId64, unreadable_holds: prepared.unreadableHolds }, 'inventory hold text without a readable instant');
  await deps.sql.begin((tx) => insertInventorySnapshot(tx, prepared));
  deps.demand?.record(prepared.records.flatMap((record) => (record.catalog_id ? [record.catalog_id] : [])));
  return { snapshot: prepared.snapshot, stale: false };
}

/** Younger than `maxAgeSeconds` (INVENTORY_TTL_SECONDS): served without asking Steam. */
export function isFreshSnapshot(snapshot: InventorySnapshot, now: Date, maxAgeSeconds: number): boolean {
  return now.getTime() - snapshot.fetched_at.getTime() < maxAgeSeconds * 1000;
}

export type SnapshotAsset = {
  tradable: boolean;
  trade_hold_until: string | null;
  protection: Protection;
  catalog_id: string | null;
  market_hash_name: string | null;
  record: StoredAsset;
};

/** These assets of a snapshot (absent ones are missing from the map), for trade intents. */
export async function findSnapshotAssets(
  db: Queryable,
  snapshotId: string,
  assetIds: string[],
  images: ImageHosts = DEFAULT_IMAGE_HOSTS,
): Promise<Map<string, SnapshotAsset>> {
  if (assetIds.length === 0) return new Map();
  const rows = await db<{ asset_id: string; tradable: boolean; catalog_id: string | null; record: StoredAsset }[]>`
    select asset_id, tradable, catalog_id, record from inventory_assets
    where snapshot_id = ${snapshotId} and asset_id = any(${assetIds}::text[])`;
  return new Map(
    rows.map((row) => {
      const record = withStoredFields(row.record, images);
      return [
        row.asset_id,
        {
          tradable: row.tradable,
          trade_hold_until: record.trade_hold_until,
          protection: record.protection,
          catalog_id: row.catalog_id,
          market_hash_name: record.market_hash_name,
          record,
        },
      ];
    }),
  );
}

/**
 * Records stored before insights (docs/design.md §14), protection (docs/design.md §17) or image (docs/design.md §18) existed lack
 * them; a snapshot can outlive its TTL (a cursor pins it, and Steam failing serves it stale), so such a
 * record gets them when read (insights computed, protection UNKNOWN_PROTECTION, image cs2-lib's of the
 * skin: the description's icon was not kept), never stored back (snapshots are immutable). Records
 * stored since carry all three and are not touched.
 */
function withStoredFields(record: StoredAsset, images: ImageHosts): StoredAsset {
  const hasImage = (record as Partial<StoredAsset>).image !== undefined;
  if (isObject(record.insights) && isObject(record.protection) && hasImage) return record;
  return {
    ...record,
    insights: isObject(record.insights) ? record.insights : itemInsights(record.item, record.state ?? {}),
    protection: isObject(record.protection) ? record.protection : UNKNOWN_PROTECTION,
    image: hasImage ? record.image : assetImageOf(images, null, record.item, record.state ?? {}),
  };
}

export type SnapshotPageRow = {
  position: number;
  catalog_id: string | null;
  paint_index: number | null;
  stickers: { sticker_id: number }[] | null;
  charms: { charm_id: number }[] | null;
  record: string;
  /** The record has every field stored since (insights, protection, image): sent as stored. */
  complete: boolean;
};

/** One page of a snapshot after `afterPosition` (exclusive), as stored JSON text, plus whether more follow. */
export async function readSnapshotPage(
  db: Queryable,
  snapshotId: string,
  afterPosition: number,
  limit: number,
  images: ImageHosts = DEFAULT_IMAGE_HOSTS,
): Promise<{ rows: SnapshotPageRow[]; more: boolean }> {
  // record::text: the stored JSON goes out as is, never parsed and re-serialised per request.
  const rows = await db<SnapshotPageRow[]>`
    select position, catalog_id, (record->'state'->>'paint_index')::int as paint_index, record->'state'->'stickers' as stickers,
           record->'state'->'charms' as charms, record::text as record, record ?& array['insights', 'protection', 'image'] as complete from inventory_assets
    where snapshot_id = ${snapshotId} and position > ${afterPosition}
    order by position limit ${limit + 1}`;
  const more = rows.length > limit;
  if (more) rows.pop();
  for (const row of rows) if (!row.complete) row.record = JSON.stringify(withStoredFields(JSON.parse(row.record) as StoredAsset, images));
  return { rows, more };
}

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
    /** Where item images are, for records stored before `image` existed (default the configuration's defaults). */
    images?: ImageHosts;
  },
): Promise<RenderedInventoryPage> {
  const page = await readSnapshotPage(db, snapshot.id, options.afterPosition, options.limit, options.images);
  const values = new Map<number, string>();
  const conversion = options.conversion ?? null;
  if (options.valuation) {
    // docs/design.md §14's one rule (valuation.ts): phase version without fallback, stickers and charms as their own items.
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
  const head = `{${fx}"steam_id":${JSON.stringify(snapshot.steam_id)},"snapshot_id":${JSON.stringify(snapshot.id)},"contexts":${JSON.stringify(snapshot.contexts)},"fetched_at":${JSON.stringify(snapshot.fetched_at.toISOString())},"stale":`;
  const body = `${head}false,"total_assets":${snapshot.total_assets},"data":[${data}],"next_cursor":${JSON.stringify(nextCursor)}}`;
  return { fresh: Buffer.from(body), staleAt: head.length };
}
