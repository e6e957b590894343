import { insertOutboxEvent, subscribedEventTypes } from '../events/outbox.ts';
import type { Queryable, Sql } from '../platform/db.ts';
import type { CatalogItem, CatalogRecord } from './identity.ts';
import { DEFAULT_AGENT_FACTIONS, DEFAULT_SKIN_KINDS, type MarketNameKnowledge, parseMarketHashName, type SkinKind } from './market-name-parser.ts';

/**
 * docs/design.md §19 "New items" (sql/0027): names an upstream lists that the catalog lacks are recorded per
 * source. A name seen on two sources, or on steam (whose whole-market search lists only what Steam's
 * market sells), is parsed; a name that parses into one item becomes a catalog item with
 * `provisional: true`, announced with `catalog.item_added` in the same transaction; a name that does
 * not is kept in unparsed_item_names, counted in /metrics and listed in GET /v2/status.
 */

/** A source whose listing alone makes a name a market item (docs/design.md §19: "or on Steam's search"). */
const AUTHORITATIVE_SOURCE = 'steam';
/** How many sources (steam aside) must list a name before it is parsed. */
const SOURCES_NEEDED = 2;
const TEXT_OID = 25;
const MAX_NAME_LENGTH = 256;

export type UnknownNamesOutcome = {
  /** Items this call added to the catalog (provisional), each announced once. */
  added: CatalogRecord[];
  /** Names that qualified but did not parse (stored), and of those the ones stored for the first time. */
  unparsed: string[];
  newlyUnparsed: string[];
  /**
   * The catalog changed under the caller: an item was added, or a name the caller took for unknown
   * is in the catalog now (another process added it, or a catalog sync did). A cached name map is stale.
   */
  catalogChanged: boolean;
};

/**
 * Records `names` (unknown to the caller's catalog map) as seen on `source` at `at`, and turns those
 * that now qualify into provisional items. Set-based: one statement records and checks every name;
 * the catalog is read again only when some name qualifies.
 */
export async function recordUnknownNames(sql: Sql, input: { source: string; names: readonly string[]; at: Date }): Promise<UnknownNamesOutcome> {
  // No market name is longer (market-name-parser.ts refuses it anyway): a broken body's junk is not kept.
  const names = [...new Set(input.names)].filter((name) => name.length > 0 && name.length <= MAX_NAME_LENGTH);
  if (names.length === 0) return { added: [], unparsed: [], newlyUnparsed: [], catalogChanged: false };
  const rows = await sql<{ name: string; known: boolean; qualifies: boolean }[]>`
    with seen as (
      select distinct name from unnest(${sql.array(names, TEXT_OID)}::text[]) as name
    ), checked as (
      select s.name, exists (select 1 from catalog_items c where c.market_hash_name = s.name) as known from seen s
    ), recorded as (
      insert into unknown_item_sightings as u (market_hash_name, source, first_seen_at, last_seen_at)
      select name, ${input.source}, ${input.at}, ${input.at} from checked where not known
      on conflict (market_hash_name, source) do update set last_seen_at = excluded.last_seen_at
      where u.last_seen_at < excluded.last_seen_at - interval '10 minutes'
    )
    select c.name, c.known,
           not c.known and (
             ${input.source === AUTHORITATIVE_SOURCE}::boolean
             or exists (select 1 from unknown_item_sightings o where o.market_hash_name = c.name and o.source = ${AUTHORITATIVE_SOURCE})
             or (select count(*) from unknown_item_sightings o where o.market_hash_name = c.name and o.source <> ${input.source}) + 1 >= ${SOURCES_NEEDED}
           ) as qualifies
    from checked c`;
  const known = rows.some((row) => row.known);
  const qualifying = rows.filter((row) => row.qualifies).map((row) => row.name);
  if (qualifying.length === 0) return { added: [], unparsed: [], newlyUnparsed: [], catalogChanged: known };

  const knowledge = await catalogKnowledge(sql);
  const parsed: CatalogItem[] = [];
  const unparsed: { name: string; status: 'unrecognised' | 'ambiguous'; reason: string }[] = [];
  for (const name of qualifying) {
    const result = parseMarketHashName(name, knowledge);
    if (result.status === 'parsed') parsed.push(result.item);
    else unparsed.push({ name, status: result.status, reason: result.reason });
  }
  const newlyUnparsed = unparsed.length > 0 ? await recordUnparsedNames(sql, unparsed, input.at) : [];
  const added = parsed.length > 0 ? await insertProvisionalItems(sql, parsed, input.at) : [];
  return { added, unparsed: unparsed.map((entry) => entry.name), newlyUnparsed, catalogChanged: known || added.length > 0 };
}

// Per database handle, for KNOWLEDGE_CACHE_MS: names that keep failing to parse are parsed again on
// every run that sees them, and the catalog's weapons change only with a catalog sync.
const KNOWLEDGE_CACHE_MS = 10 * 60_000;
const knowledgeCaches = new WeakMap<Sql, { knowledge: MarketNameKnowledge; loadedAt: number }>();

/** The parser's knowledge, widened by the catalog's own weapons and agent factions (a synced newer library's). */
async function catalogKnowledge(sql: Sql): Promise<MarketNameKnowledge> {
  const cached = knowledgeCaches.get(sql);
  if (cached && Date.now() - cached.loadedAt < KNOWLEDGE_CACHE_MS) return cached.knowledge;
  const knowledge = await loadCatalogKnowledge(sql);
  knowledgeCaches.set(sql, { knowledge, loadedAt: Date.now() });
  return knowledge;
}

async function loadCatalogKnowledge(db: Queryable): Promise<MarketNameKnowledge> {
  const rows = await db<{ kind: SkinKind | 'agent'; name: string }[]>`
    select distinct type as kind, weapon as name from catalog_items
    where type in ('weapon', 'knife', 'gloves') and weapon is not null and not provisional
    union
    select distinct 'agent', split_part(market_hash_name, ' | ', 2) from catalog_items where type = 'agent' and not provisional`;
  const skinKinds = new Map(DEFAULT_SKIN_KINDS);
  const agentFactions = new Set(DEFAULT_AGENT_FACTIONS);
  for (const row of rows) {
    if (row.kind === 'agent') {
      if (row.name) agentFactions.add(row.name);
    } else if (!skinKinds.has(row.name)) skinKinds.set(row.name, row.kind);
  }
  return { skinKinds, agentFactions };
}

/** Upserts the names that would not parse; returns those stored for the first time. */
async function recordUnparsedNames(db: Queryable, entries: { name: string; status: string; reason: string }[], at: Date): Promise<string[]> {
  const rows = await db<{ market_hash_name: string; inserted: boolean }[]>`
    insert into unparsed_item_names as u (market_hash_name, status, reason, first_seen_at, last_seen_at)
    select name, status, reason, ${at}, ${at}
    from unnest(${db.array(
      entries.map((e) => e.name),
      TEXT_OID,
    )}::text[], ${db.array(
      entries.map((e) => e.status),
      TEXT_OID,
    )}::text[],
                ${db.array(
                  entries.map((e) => e.reason),
                  TEXT_OID,
                )}::text[]) as e(name, status, reason)
    on conflict (market_hash_name) do update set status = excluded.status, reason = excluded.reason, last_seen_at = excluded.last_seen_at
    where (u.status, u.reason) is distinct from (excluded.status, excluded.reason) or u.last_seen_at < excluded.last_seen_at - interval '10 minutes'
    returning u.market_hash_name, (xmax = 0) as inserted`;
  return rows.filter((row) => row.inserted).map((row) => row.market_hash_name);
}

/**
 * Inserts parsed items as provisional catalog rows and, in the same transaction, one
 * `catalog.item_added` per row actually inserted (a second process adding the same name inserts
 * nothing and announces nothing), only while some endpoint subscribes (like the price events).
 */
async function insertProvisionalItems(sql: Sql, items: readonly CatalogItem[], at: Date): Promise<CatalogRecord[]> {
  const text = (values: (string | null)[]) => sql.array(values, TEXT_OID);
  return sql.begin(async (tx) => {
    const inserted = await tx<CatalogRecord[]>`
      insert into catalog_items (catalog_id, market_hash_name, type, weapon, exterior, rarity, stattrak, souvenir,
                                 definition_index, paint_index, phases, provisional, synced_at)
      select u.catalog_id, u.market_hash_name, u.type, u.weapon, u.exterior, null, u.stattrak::boolean, u.souvenir::boolean,
             null, null, coalesce(string_to_array(u.phases, ','), '{}'), true, ${at}
      from unnest(
        ${text(items.map((i) => i.catalog_id))}, ${text(items.map((i) => i.market_hash_name))}, ${text(items.map((i) => i.type))},
        ${text(items.map((i) => i.weapon))}, ${text(items.map((i) => i.exterior))}, ${text(items.map((i) => String(i.stattrak)))},
        ${text(items.map((i) => String(i.souvenir)))}, ${text(items.map((i) => (i.phases.length > 0 ? i.phases.join(',') : null)))}
      ) as u(catalog_id, market_hash_name, type, weapon, exterior, stattrak, souvenir, phases)
      on conflict do nothing
      returning catalog_id, market_hash_name, type, weapon, exterior, rarity, stattrak, souvenir, definition_index, paint_index, phases, provisional`;
    if (inserted.length === 0) return [];
    const names = inserted.map((row) => row.market_hash_name);
    await tx`delete from unparsed_item_names where market_hash_name = any(${tx.array(names, TEXT_OID)}::text[])`;
    const added = inserted.map((row): CatalogRecord => ({ ...row }));
    if ((await subscribedEventTypes(tx, ['catalog.item_added'])).has('catalog.item_added')) {
      for (const record of added) await insertOutboxEvent(tx, { type: 'catalog.item_added', workspaceId: null, payload: record, at });
    }
    return added;
  });
}

export type ProvisionalSummary = {
  provisional_items: number;
  unparsed_names: { count: number; names: string[] };
};

/** How many items are provisional, and how many names would not parse that the catalog still lacks. */
export async function provisionalCounts(db: Queryable): Promise<{ provisional: number; unparsed: number }> {
  const [counts] = await db<{ provisional: number; unparsed: number }[]>`
    select (select count(*) from catalog_items where provisional)::int as provisional,
           (select count(*) from unparsed_item_names u
            where not exists (select 1 from catalog_items c where c.market_hash_name = u.market_hash_name))::int as unparsed`;
  return counts!;
}

/** The counts, with the first `limit` unparsed names (newest first). */
export async function provisionalSummary(db: Queryable, limit = 20): Promise<ProvisionalSummary> {
  const [counts, names] = await Promise.all([
    provisionalCounts(db),
    db<{ market_hash_name: string }[]>`
      select u.market_hash_name from unparsed_item_names u
      where not exists (select 1 from catalog_items c where c.market_hash_name = u.market_hash_name)
      order by u.first_seen_at desc, u.market_hash_name
      limit ${limit}`,
  ]);
  return { provisional_items: counts.provisional, unparsed_names: { count: counts.unparsed, names: names.map((row) => row.market_hash_name) } };
}
