import { SEGMENTS, type Segment, type SegmentFilter } from '../market/segments.ts';
import type { Queryable } from '../platform/db.ts';

/** A stored calculation as the API publishes it (segment/value null for the whole market). */
export type Calculation = {
  id: string;
  index_run_id: string;
  methodology: string;
  marketplace: string;
  segment: Segment | null;
  value: string | null;
  status: 'succeeded' | 'failed';
  failure_reason: string | null;
  inception: boolean;
  level: string | null;
  previous_level: string | null;
  link_factor: string | null;
  previous_calculation_id: string | null;
  constituent_count: number;
  as_of: Date;
  calculated_at: Date;
};

export type IndexQuery = { marketplace: string; methodology: string; filter: SegmentFilter };

const stored = (filter: SegmentFilter) => ({ segment: filter?.segment ?? '', value: filter?.value ?? '' });

function calculationColumns(db: Queryable) {
  return db`
    c.id, c.index_run_id, c.methodology, c.marketplace, nullif(c.segment, '') as segment, nullif(c.value, '') as value,
    c.status, c.failure_reason, c.inception, c.level::text as level, c.previous_level::text as previous_level,
    c.link_factor::text as link_factor, c.previous_calculation_id, c.constituent_count, c.as_of, c.calculated_at`;
}

/** The newest successful calculation for exactly this query, or null. */
export async function findLatestCalculation(db: Queryable, query: IndexQuery): Promise<Calculation | null> {
  const { segment, value } = stored(query.filter);
  const [row] = await db<Calculation[]>`
    select ${calculationColumns(db)}
    from market_index_latest l join market_index_calculations c on c.id = l.calculation_id
    where l.marketplace = ${query.marketplace} and l.methodology = ${query.methodology} and l.segment = ${segment} and l.value = ${value}`;
  return row ?? null;
}

export async function findCalculation(db: Queryable, id: string): Promise<Calculation | null> {
  const [row] = await db<Calculation[]>`select ${calculationColumns(db)} from market_index_calculations c where c.id = ${id}`;
  return row ?? null;
}

export type Constituent = {
  catalog_id: string;
  market_hash_name: string;
  version: string;
  /** Null only in an inception calculation (its constituents are the base prices). */
  previous_price: string | null;
  current_price: string;
};

export type ConstituentPosition = { catalog_id: string; version: string };

/**
 * One page of a calculation's constituents in (catalog_id, version) order: the rows of its index
 * run in its segment that carry a previous price (at inception, every row of the segment).
 */
export async function listConstituents(
  db: Queryable,
  calculation: Calculation,
  after: ConstituentPosition | null,
  limit: number,
): Promise<{ items: Constituent[]; next: ConstituentPosition | null }> {
  const segment = calculation.segment;
  if (segment !== null && !SEGMENTS.includes(segment)) throw new Error(`unknown segment ${segment}`);
  const rows = await db<Constituent[]>`
    select p.catalog_id, c.market_hash_name, p.version, p.previous_price::text as previous_price, p.current_price::text as current_price
    from market_index_prices p
    join catalog_items c on c.catalog_id = p.catalog_id
    where p.index_run_id = ${calculation.index_run_id}
      ${calculation.inception ? db`` : db`and p.previous_price is not null`}
      ${segment === null ? db`` : db`and p.${db(segment)} = ${calculation.value}`}
      ${after ? db`and (p.catalog_id, p.version) > (${after.catalog_id}::text, ${after.version}::text)` : db``}
    order by p.catalog_id, p.version
    limit ${limit + 1}`;
  const items = rows.slice(0, limit);
  const last = items[items.length - 1];
  return { items, next: rows.length > limit && last ? { catalog_id: last.catalog_id, version: last.version } : null };
}

export type LevelPoint = Pick<Calculation, 'id' | 'as_of' | 'calculated_at' | 'level' | 'previous_level' | 'link_factor' | 'constituent_count' | 'inception'>;
export type LevelPosition = { as_of: string; id: string };

/** Successful calculations of the query with from ≤ as_of < to, oldest first, keyset on (as_of, id). */
export async function listLevelHistory(
  db: Queryable,
  query: IndexQuery,
  window: { from: Date; to: Date },
  after: LevelPosition | null,
  limit: number,
): Promise<{ points: LevelPoint[]; next: LevelPosition | null }> {
  const { segment, value } = stored(query.filter);
  const rows = await db<(LevelPoint & { position: string })[]>`
    select id, as_of, calculated_at, level::text as level, previous_level::text as previous_level, link_factor::text as link_factor,
           constituent_count, inception,
           to_char(as_of at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as position
    from market_index_calculations
    where marketplace = ${query.marketplace} and methodology = ${query.methodology} and segment = ${segment} and value = ${value}
      and status = 'succeeded' and as_of >= ${window.from} and as_of < ${window.to}
      ${after ? db`and (as_of, id) > (${after.as_of}::timestamptz, ${after.id}::uuid)` : db``}
    order by as_of, id
    limit ${limit + 1}`;
  const page = rows.slice(0, limit);
  const last = page[page.length - 1];
  return {
    points: page.map(({ position: _position, ...point }) => point),
    next: rows.length > limit && last ? { as_of: last.position, id: last.id } : null,
  };
}
