import type { Queryable, Sql } from '../platform/db.ts';
import type { CatalogItem, CatalogRecord, Exterior, ItemType, PhaseVersion, Rarity } from './identity.ts';

/**
 * catalog_items (sql/0002). The catalog is written only by `syncCatalog` (set-based, idempotent) and
 * read by the catalog list, the price routes and ingest.
 */

// Rows per insert statement. Each statement binds one array per column (11 parameters), far under
// Postgres's 65 535-parameter limit; chunks only bound the size of one statement and its arrays.
const SYNC_CHUNK_ROWS = 5_000;
// One sync at a time: a second run waits and then finds nothing to do.
const SYNC_LOCK_KEY = 0x63617461; // 'cata'
const TEXT_OID = 25;

const nullableString = (value: number | null) => (value === null ? null : String(value));

export type CatalogSyncCounts = {
  inserted: number;
  updated: number;
  unchanged: number;
  /** Rows no longer generated and removed. */
  deleted: number;
  /** Rows no longer generated but kept because latest_prices still references them. */
  retained: number;
  /** Provisional rows (docs/design.md §19) this catalog generates: now regular items, same id and prices. */
  adopted: number;
  /** Provisional rows this catalog still lacks: kept as they are. */
  provisional: number;
  /** Items in the generated catalog. */
  total: number;
};

/**
 * Makes catalog_items equal to `items`: inserts new rows, updates rows whose attributes changed
 * (leaving unchanged rows and their synced_at alone), and deletes rows no longer generated unless a
 * latest price still refers to them. One transaction: readers see the old or the new catalog.
 * docs/design.md §19: a provisional row (shared/catalog/provisional.ts) that `items` generates becomes a regular
 * item with the generated attributes, keeping its catalog_id and so its prices; one it does not
 * generate stays provisional.
 */
export async function syncCatalog(sql: Sql, items: readonly CatalogItem[]): Promise<CatalogSyncCounts> {
  const seen = new Set<string>();
  for (const item of items) {
    if (seen.has(item.catalog_id)) throw new Error(`syncCatalog: duplicate catalog_id ${item.catalog_id} (${item.market_hash_name})`);
    seen.add(item.catalog_id);
  }
  // Every column travels as one text[] parameter (postgres.js infers array types from the first
  // element, which breaks on nulls and booleans) and is cast back in SQL.
  const text = (values: (string | null)[]) => sql.array(values, TEXT_OID);
  return sql.begin(async (tx) => {
    await tx`select pg_advisory_xact_lock(${SYNC_LOCK_KEY})`;
    const [provisional] = await tx<{ adopted: number }[]>`
      select count(*)::int as adopted from catalog_items c
      where c.provisional and c.catalog_id = any(${text(items.map((i) => i.catalog_id))}::text[])`;
    let inserted = 0;
    let updated = 0;
    for (let start = 0; start < items.length; start += SYNC_CHUNK_ROWS) {
      const chunk = items.slice(start, start + SYNC_CHUNK_ROWS);
      const rows = await tx<{ inserted: boolean }[]>`
        insert into catalog_items as c (catalog_id, market_hash_name, type, weapon, exterior, rarity, stattrak, souvenir,
                                        definition_index, paint_index, phases, synced_at)
        select u.catalog_id, u.market_hash_name, u.type, u.weapon, u.exterior, u.rarity, u.stattrak::boolean, u.souvenir::boolean,
               u.definition_index::integer, u.paint_index::integer, coalesce(string_to_array(u.phases, ','), '{}'), now()
        from unnest(
          ${text(chunk.map((i) => i.catalog_id))}, ${text(chunk.map((i) => i.market_hash_name))},
          ${text(chunk.map((i) => i.type))}, ${text(chunk.map((i) => i.weapon))},
          ${text(chunk.map((i) => i.exterior))}, ${text(chunk.map((i) => i.rarity))},
          ${text(chunk.map((i) => String(i.stattrak)))}, ${text(chunk.map((i) => String(i.souvenir)))},
          ${text(chunk.map((i) => nullableString(i.definition_index)))}, ${text(chunk.map((i) => nullableString(i.paint_index)))},
          ${text(chunk.map((i) => (i.phases.length > 0 ? i.phases.join(',') : null)))}
        ) as u(catalog_id, market_hash_name, type, weapon, exterior, rarity, stattrak, souvenir, definition_index, paint_index, phases)
        on conflict (catalog_id) do update set
          market_hash_name = excluded.market_hash_name, type = excluded.type, weapon = excluded.weapon,
          exterior = excluded.exterior, rarity = excluded.rarity, stattrak = excluded.stattrak,
          souvenir = excluded.souvenir, definition_index = excluded.definition_index,
          paint_index = excluded.paint_index, phases = excluded.phases, provisional = false, synced_at = excluded.synced_at
        where (c.market_hash_name, c.type, c.weapon, c.exterior, c.rarity, c.stattrak, c.souvenir, c.definition_index, c.paint_index, c.phases, c.provisional)
              is distinct from
              (excluded.market_hash_name, excluded.type, excluded.weapon, excluded.exterior, excluded.rarity, excluded.stattrak,
               excluded.souvenir, excluded.definition_index, excluded.paint_index, excluded.phases, false)
        returning (xmax = 0) as inserted`;
      for (const row of rows) {
        if (row.inserted) inserted += 1;
        else updated += 1;
      }
    }
    // An anti-join against the generated ids (a hash join), not `<> all(array)`, which is quadratic.
    // Provisional rows the library still lacks are not stale: they stay until a library generates them.
    const [stale] = await tx<{ deleted: number; retained: number; provisional: number }[]>`
      with generated as (
        select unnest(${text(items.map((i) => i.catalog_id))}::text[]) as catalog_id
      ), gone as (
        select c.catalog_id, c.provisional,
               exists (select 1 from latest_prices p where p.catalog_id = c.catalog_id) as referenced
        from catalog_items c
        where not exists (select 1 from generated g where g.catalog_id = c.catalog_id)
      ), removed as (
        delete from catalog_items c using gone
        where c.catalog_id = gone.catalog_id and not gone.referenced and not gone.provisional
        returning 1
      )
      select (select count(*) from removed)::int as deleted,
             (select count(*) from gone where referenced and not provisional)::int as retained,
             (select count(*) from gone where provisional)::int as provisional`;
    // Names recorded as unknown (sql/0027) that the catalog now has are no longer news.
    await tx`delete from unknown_item_sightings s where exists (select 1 from catalog_items c where c.market_hash_name = s.market_hash_name)`;
    await tx`delete from unparsed_item_names u where exists (select 1 from catalog_items c where c.market_hash_name = u.market_hash_name)`;
    return {
      inserted,
      updated,
      unchanged: items.length - inserted - updated,
      deleted: stale!.deleted,
      retained: stale!.retained,
      adopted: provisional!.adopted,
      provisional: stale!.provisional,
      total: items.length,
    };
  });
}

export type CatalogFilters = {
  /** Case-insensitive literal substring of market_hash_name. */
  q?: string;
  type?: ItemType;
  weapon?: string;
  exterior?: Exterior;
  rarity?: Rarity;
  /** Items whose `phases` contain this phase. */
  phase?: PhaseVersion;
  stattrak?: boolean;
  souvenir?: boolean;
  definition_index?: number;
  paint_index?: number;
};

/** Keyset position: the market_hash_name of the last item of a page. */
export type CatalogPosition = { name: string };

type CatalogRow = CatalogItem;

/** `%`, `_` and `\` match themselves (docs/design.md §9): escaped for LIKE with `\` as the escape character. */
export function likeLiteral(text: string): string {
  return text.replace(/[\\%_]/g, (char) => `\\${char}`);
}

/** One page ordered by market_hash_name; returns the position of the last row when another page exists. */
export async function listCatalogItems(
  db: Queryable,
  filters: CatalogFilters,
  after: CatalogPosition | null,
  limit: number,
): Promise<{ items: CatalogRecord[]; next: CatalogPosition | null }> {
  const rows = await db<CatalogRecord[]>`
    select catalog_id, market_hash_name, type, weapon, exterior, rarity, stattrak, souvenir, definition_index, paint_index, phases, provisional
    from catalog_items
    where true
      ${filters.q !== undefined ? db`and lower(market_hash_name) like '%' || lower(${likeLiteral(filters.q)}) || '%' escape '\\'` : db``}
      ${filters.type !== undefined ? db`and type = ${filters.type}` : db``}
      ${filters.weapon !== undefined ? db`and weapon = ${filters.weapon}` : db``}
      ${filters.exterior !== undefined ? db`and exterior = ${filters.exterior}` : db``}
      ${filters.rarity !== undefined ? db`and rarity = ${filters.rarity}` : db``}
      ${filters.phase !== undefined ? db`and phases @> array[${filters.phase}]::text[]` : db``}
      ${filters.stattrak !== undefined ? db`and stattrak = ${filters.stattrak}` : db``}
      ${filters.souvenir !== undefined ? db`and souvenir = ${filters.souvenir}` : db``}
      ${filters.definition_index !== undefined ? db`and definition_index = ${filters.definition_index}` : db``}
      ${filters.paint_index !== undefined ? db`and paint_index = ${filters.paint_index}` : db``}
      ${after ? db`and market_hash_name > ${after.name}` : db``}
    order by market_hash_name
    limit ${limit + 1}`;
  const page = rows.slice(0, limit);
  const last = page[page.length - 1];
  return {
    items: page.map((row) => ({ ...toCatalogItem(row), provisional: row.provisional })),
    next: rows.length > limit && last ? { name: last.market_hash_name } : null,
  };
}

export async function findCatalogItem(db: Queryable, catalogId: string): Promise<CatalogItem | null> {
  const [row] = await db<CatalogRow[]>`
    select catalog_id, market_hash_name, type, weapon, exterior, rarity, stattrak, souvenir, definition_index, paint_index, phases
    from catalog_items where catalog_id = ${catalogId}`;
  return row ? toCatalogItem(row) : null;
}

export async function catalogItemCount(db: Queryable): Promise<number> {
  const [row] = await db<{ count: number }[]>`select count(*)::int as count from catalog_items`;
  return row!.count;
}

/** Cheaper than a count: whether the catalog has been loaded at all. */
export async function catalogIsLoaded(db: Queryable): Promise<boolean> {
  const [row] = await db<{ loaded: boolean }[]>`select exists (select 1 from catalog_items) as loaded`;
  return row!.loaded;
}

function toCatalogItem(row: CatalogRow): CatalogItem {
  return {
    catalog_id: row.catalog_id,
    market_hash_name: row.market_hash_name,
    type: row.type,
    weapon: row.weapon,
    exterior: row.exterior,
    rarity: row.rarity,
    stattrak: row.stattrak,
    souvenir: row.souvenir,
    definition_index: row.definition_index,
    paint_index: row.paint_index,
    phases: row.phases,
  };
}

/** The weapon, knife and glove names the catalog uses, sorted. */
export async function catalogWeaponNames(db: Queryable): Promise<string[]> {
  const rows = await db<{ weapon: string }[]>`select distinct weapon from catalog_items where weapon is not null order by weapon`;
  return rows.map((row) => row.weapon);
}
