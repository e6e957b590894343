import { SEGMENTS } from '../market/segments.ts';
import { copyRows, type Sql, type TransactionSql } from '../platform/db.ts';
import { freshPriceSql } from '../prices/freshness.ts';
import { newId } from '../util/ids.ts';
import { chainLevel, formatScaled, INCEPTION_LEVEL, linkFromSum, METHODOLOGY, scaledRatio } from './methodology.ts';
import type { Calculation } from './repository.ts';

/** One fresh price of the marketplace at t, with the item's segment attributes and its price at t-1. */
type VectorRow = {
  catalog_id: string;
  version: string;
  type: string;
  weapon: string | null;
  rarity: string | null;
  exterior: string | null;
  price: string;
  previous_price: string | null;
};

type Accumulator = { segment: string; value: string; priced: number; constituents: number; sum: bigint };

/** A calculation as stored: the whole market is segment '' with value ''. */
type CalculationRow = Omit<Calculation, 'segment' | 'value'> & { segment: string; value: string };

export type IndexRunOutcome =
  | { status: 'skipped'; reason: string }
  | {
      status: 'calculated';
      indexRunId: string;
      ingestRunId: string;
      asOf: Date;
      priced: number;
      succeeded: number;
      failed: number;
      inceptions: number;
      ms: number;
      timings: Record<string, number>;
    };

/** The whole market is stored as segment '' with value ''. */
const MARKET = '';

/**
 * Calculates `cs2.chain-equal-weight.v1` for one marketplace as of its newest successful ingest
 * run: for the whole market and every segment value present now or calculated before. Serialised
 * per marketplace, and holding the ingest pool's lock of that source in shared mode, so the prices
 * read are exactly those of that run. A second call for the same ingest run is a no-op.
 */
export async function calculateMarketIndex(sql: Sql, input: { marketplace: string; now: () => Date }): Promise<IndexRunOutcome> {
  const { marketplace } = input;
  const started = performance.now();
  const timings: Record<string, number> = {};
  let mark = started;
  const lap = (name: string) => {
    const at = performance.now();
    timings[name] = Math.round(at - mark);
    mark = at;
  };
  return sql.begin(async (tx): Promise<IndexRunOutcome> => {
    await tx`select pg_advisory_xact_lock(hashtext(${`market-index:${marketplace}`}))`;
    // The ingest pool holds this lock (exclusively) while it writes a run of the source.
    await tx`select pg_advisory_xact_lock_shared(hashtext(${`ingest:${marketplace}`}))`;
    const [source] = await tx<{ last_success_at: Date | null }[]>`select last_success_at from price_sources where name = ${marketplace}`;
    const [ingestRun] = await tx<{ id: string }[]>`
      select id from ingest_runs where source = ${marketplace} and status = 'succeeded' order by finished_at desc limit 1`;
    if (!source?.last_success_at || !ingestRun) return { status: 'skipped', reason: 'the marketplace has no successful ingest run' };
    const asOf = source.last_success_at;
    const [done] = await tx`
      select 1 from market_index_runs where marketplace = ${marketplace} and methodology = ${METHODOLOGY} and ingest_run_id = ${ingestRun.id}`;
    if (done) return { status: 'skipped', reason: 'this ingest run is already calculated' };
    const [previousRun] = await tx<{ id: string; as_of: Date }[]>`
      select id, as_of from market_index_runs where marketplace = ${marketplace} and methodology = ${METHODOLOGY}
      order by as_of desc limit 1`;
    if (previousRun && previousRun.as_of >= asOf) return { status: 'skipped', reason: 'a calculation as of this time or later exists' };

    // Priced fresh at t by the one rule of GET /health and the price API (shared/prices/freshness.ts).
    const rows = await tx<VectorRow[]>`
      select l.catalog_id, l.version, c.type, c.weapon, c.rarity, c.exterior, l.price::text as price,
             p.current_price::text as previous_price
      from current_prices l
      join catalog_items c on c.catalog_id = l.catalog_id
      join price_sources s on s.name = l.source
      left join market_index_prices p on p.index_run_id = ${previousRun?.id ?? null} and p.catalog_id = l.catalog_id and p.version = l.version
      where l.source = ${marketplace} and l.price > 0 and ${freshPriceSql(tx, asOf, { price: 'l', source: 's' })}`;
    const latest = await tx<{ segment: string; value: string; calculation_id: string; level: string }[]>`
      select segment, value, calculation_id, level::text as level from market_index_latest
      where marketplace = ${marketplace} and methodology = ${METHODOLOGY}`;
    lap('read');

    const accumulators = accumulate(rows);
    const calculatedAt = input.now();
    // The id carries the calculation time: its price vector is stored (and dropped) by that day (sql/0011).
    const indexRunId = newId(calculatedAt);
    const previousBySegment = new Map(latest.map((row) => [`${row.segment}\u0000${row.value}`, row]));
    for (const row of latest) {
      const key = `${row.segment}\u0000${row.value}`;
      if (!accumulators.has(key)) accumulators.set(key, { segment: row.segment, value: row.value, priced: 0, constituents: 0, sum: 0n });
    }
    const calculations: CalculationRow[] = [];
    for (const [key, acc] of accumulators) {
      const previous = previousBySegment.get(key);
      const base = {
        id: newId(),
        index_run_id: indexRunId,
        marketplace,
        methodology: METHODOLOGY,
        segment: acc.segment,
        value: acc.value,
        as_of: asOf,
        calculated_at: calculatedAt,
      };
      if (previous && acc.constituents > 0) {
        const link = linkFromSum(acc.sum, acc.constituents);
        calculations.push({
          ...base,
          status: 'succeeded',
          failure_reason: null,
          inception: false,
          level: chainLevel(previous.level, link),
          previous_level: previous.level,
          link_factor: formatScaled(link),
          previous_calculation_id: previous.calculation_id,
          constituent_count: acc.constituents,
        });
      } else if (!previous && acc.priced > 0) {
        calculations.push({
          ...base,
          status: 'succeeded',
          failure_reason: null,
          inception: true,
          level: INCEPTION_LEVEL,
          previous_level: null,
          link_factor: null,
          previous_calculation_id: null,
          constituent_count: acc.priced,
        });
      } else {
        calculations.push({
          ...base,
          status: 'failed',
          failure_reason:
            acc.priced === 0
              ? `no constituents: no item of this segment is priced fresh by ${marketplace} now`
              : `no constituents: none of the ${acc.priced} items priced fresh by ${marketplace} now was priced fresh at the previous calculation`,
          inception: false,
          level: null,
          previous_level: previous?.level ?? null,
          link_factor: null,
          previous_calculation_id: previous?.calculation_id ?? null,
          constituent_count: 0,
        });
      }
    }
    lap('compute');

    const durationMs = Math.round(performance.now() - started);
    await tx`
      insert into market_index_runs (id, marketplace, methodology, ingest_run_id, as_of, previous_run_id, calculated_at, priced_count, duration_ms)
      values (${indexRunId}, ${marketplace}, ${METHODOLOGY}, ${ingestRun.id}, ${asOf}, ${previousRun?.id ?? null}, ${calculatedAt}, ${rows.length}, ${durationMs})`;
    await copyRows(
      tx,
      'market_index_prices (index_run_id, catalog_id, version, type, weapon, rarity, exterior, previous_price, current_price)',
      rows.map((row) => [indexRunId, row.catalog_id, row.version, row.type, row.weapon, row.rarity, row.exterior, row.previous_price, row.price]),
    );
    lap('write_prices');
    await insertCalculations(tx, calculations);
    lap('write_calculations');
    const succeeded = calculations.filter((row) => row.status === 'succeeded');
    return {
      status: 'calculated',
      indexRunId,
      ingestRunId: ingestRun.id,
      asOf,
      priced: rows.length,
      succeeded: succeeded.length,
      failed: calculations.length - succeeded.length,
      inceptions: succeeded.filter((row) => row.inception).length,
      ms: Math.round(performance.now() - started),
      timings,
    };
  });
}

/** Per segment value: items priced now, constituents (priced at t-1 too) and the exact sum of their ratios. */
function accumulate(rows: readonly VectorRow[]): Map<string, Accumulator> {
  const accumulators = new Map<string, Accumulator>();
  const add = (segment: string, value: string | null, ratio: bigint | null) => {
    if (value === null) return;
    const key = `${segment}\u0000${value}`;
    let acc = accumulators.get(key);
    if (!acc) {
      acc = { segment, value, priced: 0, constituents: 0, sum: 0n };
      accumulators.set(key, acc);
    }
    acc.priced += 1;
    if (ratio !== null) {
      acc.constituents += 1;
      acc.sum += ratio;
    }
  };
  for (const row of rows) {
    const ratio = row.previous_price === null ? null : scaledRatio(row.previous_price, row.price);
    add(MARKET, MARKET, ratio);
    for (const segment of SEGMENTS) add(segment, row[segment], ratio);
  }
  return accumulators;
}

async function insertCalculations(tx: TransactionSql, calculations: CalculationRow[]): Promise<void> {
  if (calculations.length === 0) return;
  await tx`insert into market_index_calculations ${tx(calculations)}`;
  const succeeded = calculations.filter((row) => row.status === 'succeeded');
  if (succeeded.length === 0) return;
  const latest = succeeded.map((row) => ({
    marketplace: row.marketplace,
    methodology: row.methodology,
    segment: row.segment,
    value: row.value,
    calculation_id: row.id,
    level: row.level,
    as_of: row.as_of,
  }));
  await tx`
    insert into market_index_latest ${tx(latest)}
    on conflict (marketplace, methodology, segment, value) do update set
      calculation_id = excluded.calculation_id, level = excluded.level, as_of = excluded.as_of`;
}
