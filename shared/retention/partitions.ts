import type { Queryable, Sql } from '../platform/db.ts';
import type { Logger } from '../platform/logger.ts';
import { windowStart } from '../util/time.ts';
import { failDeliveriesOfExpiredEvents } from '../webhooks/deliveries.ts';
import type { RetentionPolicy } from './policy.ts';

/**
 * Time partitions (sql/0011): the tables that grow with every ingest run are range-partitioned by
 * time; partitions are created ahead of the rows they will hold and dropped whole once everything
 * in them is older than the table's retention. Nothing here deletes rows one by one from a hot
 * table: only the DEFAULT partition (rows no range partition covered when they arrived, normally
 * none) is moved or pruned row by row.
 */
export type Step = 'day' | 'month' | 'year';

export type PartitionedTable = {
  /** The partitioned table whose partitions are time ranges. */
  table: string;
  /** The partition key column. */
  column: string;
  /** `time`: a timestamptz. `uuidv7`: a UUIDv7 id, whose first 48 bits are its creation time in ms. */
  key: 'time' | 'uuidv7';
  step: Step;
  /** The retention of its rows, in days. */
  retentionDays: (policy: RetentionPolicy) => number;
  /** Storage options of new partitions (`fillfactor = 80`). */
  storage?: string;
  /** Runs in the transaction that drops `partition`, before it is dropped. */
  beforeDrop?: (tx: Queryable, partition: string, log: Logger) => Promise<void>;
};

export const PARTITIONED_TABLES: readonly PartitionedTable[] = [
  { table: 'price_observations', column: 'ingested_at', key: 'time', step: 'day', retentionDays: (policy) => policy.observations },
  // docs/design.md §19: every change of a source's sales window (sql/0026); skinport's hourly read changes most of them.
  { table: 'sales_observations', column: 'ingested_at', key: 'time', step: 'day', retentionDays: (policy) => policy.observations },
  {
    table: 'event_outbox',
    column: 'created_at',
    key: 'time',
    step: 'day',
    retentionDays: (policy) => policy.outbox,
    beforeDrop: async (tx, partition, log) => {
      const { failed, unpublished } = await failDeliveriesOfExpiredEvents(tx, partition);
      if (failed > 0 || unpublished > 0)
        log.warn({ partition, failed_deliveries: failed, undispatched_events: unpublished }, 'events expired before they were delivered');
    },
  },
  { table: 'price_event_pages', column: 'created_at', key: 'time', step: 'day', retentionDays: (policy) => policy.outbox },
  // The price stream's log (sql/0019): retained like the outbox; Redis holds its newest entries.
  { table: 'price_stream', column: 'created_at', key: 'time', step: 'day', retentionDays: (policy) => policy.outbox },
  { table: 'ingest_runs', column: 'slot_start', key: 'time', step: 'day', retentionDays: (policy) => policy.ingestRuns },
  { table: 'market_index_prices', column: 'index_run_id', key: 'uuidv7', step: 'day', retentionDays: (policy) => policy.indexVectors },
  {
    table: 'price_rollups_10m',
    column: 'bucket_start',
    key: 'time',
    step: 'day',
    storage: 'fillfactor = 80',
    retentionDays: (policy) => policy.rollups['10m'],
  },
  {
    table: 'price_rollups_hourly',
    column: 'bucket_start',
    key: 'time',
    step: 'month',
    storage: 'fillfactor = 80',
    retentionDays: (policy) => policy.rollups.hourly,
  },
  {
    table: 'price_rollups_daily',
    column: 'bucket_start',
    key: 'time',
    step: 'year',
    storage: 'fillfactor = 80',
    retentionDays: (policy) => policy.rollups.daily,
  },
];

/** Partitions kept ready ahead of now: a week of days, or the current and next month or year. */
const AHEAD: Record<Step, number> = { day: 7, month: 2, year: 2 };
/** DDL on a busy table waits at most this long for its lock; the next maintenance run tries again. */
const LOCK_TIMEOUT = '5s';

/** The start of the step (UTC) that holds `at`. */
export function stepStart(at: Date, step: Step): Date {
  const year = at.getUTCFullYear();
  if (step === 'year') return new Date(Date.UTC(year, 0, 1));
  if (step === 'month') return new Date(Date.UTC(year, at.getUTCMonth(), 1));
  return new Date(Date.UTC(year, at.getUTCMonth(), at.getUTCDate()));
}

export function nextStep(start: Date, step: Step): Date {
  if (step === 'year') return new Date(Date.UTC(start.getUTCFullYear() + 1, 0, 1));
  if (step === 'month') return new Date(Date.UTC(start.getUTCFullYear(), start.getUTCMonth() + 1, 1));
  return new Date(start.getTime() + 86_400_000);
}

/** `<table>_p2026`, `<table>_p202611`, `<table>_p20261124`. */
export function partitionName(table: string, start: Date, step: Step): string {
  const iso = start.toISOString();
  const digits =
    step === 'year' ? iso.slice(0, 4) : step === 'month' ? iso.slice(0, 4) + iso.slice(5, 7) : iso.slice(0, 4) + iso.slice(5, 7) + iso.slice(8, 10);
  return `${table}_p${digits}`;
}

/** The smallest UUIDv7 of an instant: its milliseconds in the first 48 bits, zeros after. */
export function uuidv7Floor(at: Date): string {
  const hex = at.getTime().toString(16).padStart(12, '0');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-0000-0000-000000000000`;
}

/** A range bound as the key's SQL literal. */
function boundLiteral(spec: PartitionedTable, at: Date): string {
  return spec.key === 'uuidv7' ? uuidv7Floor(at) : at.toISOString();
}

export type Partition = { name: string; isDefault: boolean; lower: number | null; upper: number | null };

const BOUND = /^FOR VALUES FROM \((MINVALUE|'[^']*')\) TO \((MAXVALUE|'[^']*')\)$/;

/** A bound's instant in ms: null for MINVALUE / MAXVALUE. Time bounds are read with TimeZone UTC. */
function boundInstant(spec: PartitionedTable, text: string): number | null {
  if (text === 'MINVALUE' || text === 'MAXVALUE') return null;
  const literal = text.slice(1, -1);
  if (spec.key === 'uuidv7') return Number.parseInt(literal.replace('-', '').slice(0, 12), 16);
  // '2026-11-24 00:00:00+00', with a fraction when a bound has one.
  const instant = Date.parse(`${literal.replace(' ', 'T').replace(/\+00$/, '')}Z`);
  if (Number.isNaN(instant)) throw new Error(`${spec.table}: cannot read partition bound ${text}`);
  return instant;
}

/** The partitions of `spec.table` with their bounds (a transaction with TimeZone UTC). */
export async function listPartitions(tx: Queryable, spec: PartitionedTable): Promise<Partition[]> {
  const rows = await tx<{ name: string; bound: string }[]>`
    select c.relname as name, pg_get_expr(c.relpartbound, c.oid) as bound
    from pg_inherits i join pg_class c on c.oid = i.inhrelid
    where i.inhparent = ${spec.table}::regclass
    order by c.relname`;
  return rows.map(({ name, bound }) => {
    if (bound === 'DEFAULT') return { name, isDefault: true, lower: null, upper: null };
    const match = BOUND.exec(bound);
    if (!match) throw new Error(`${spec.table}: unexpected partition bound of ${name}: ${bound}`);
    return { name, isDefault: false, lower: boundInstant(spec, match[1]!), upper: boundInstant(spec, match[2]!) };
  });
}

const overlaps = (partition: Partition, start: number, end: number) =>
  !partition.isDefault && (partition.lower === null || partition.lower < end) && (partition.upper === null || partition.upper > start);

async function lockedDdl<T>(sql: Sql, spec: PartitionedTable, work: (tx: Queryable) => Promise<T>): Promise<T> {
  let result: T | undefined;
  await sql.begin(async (tx) => {
    // One maintainer of a table at a time, whichever process runs it.
    await tx`select pg_advisory_xact_lock(hashtext(${`partitions:${spec.table}`}))`;
    await tx.unsafe(`set local lock_timeout = '${LOCK_TIMEOUT}'`);
    await tx.unsafe(`set local timezone = 'UTC'`);
    result = await work(tx);
  });
  return result as T;
}

/**
 * Creates the partitions of the steps from the one holding `now` to AHEAD steps later that no
 * partition covers yet. Rows already in the DEFAULT partition for such a step move into it.
 * Returns the names created.
 */
export async function ensurePartitions(sql: Sql, spec: PartitionedTable, now: Date): Promise<string[]> {
  return lockedDdl(sql, spec, async (tx) => {
    const partitions = await listPartitions(tx, spec);
    const fallback = partitions.find((partition) => partition.isDefault);
    const created: string[] = [];
    let start = stepStart(now, spec.step);
    for (let index = 0; index < AHEAD[spec.step]; index += 1, start = nextStep(start, spec.step)) {
      const end = nextStep(start, spec.step);
      if (partitions.some((partition) => overlaps(partition, start.getTime(), end.getTime()))) continue;
      const name = partitionName(spec.table, start, spec.step);
      const from = boundLiteral(spec, start);
      const to = boundLiteral(spec, end);
      // A new range may not leave rows of its own in the default partition: they move with it.
      let moved = 0;
      if (fallback) {
        await tx.unsafe(
          `create temp table partition_moved on commit drop as
           with taken as (delete from ${fallback.name} where ${spec.column} >= $1 and ${spec.column} < $2 returning *) select * from taken`,
          [from, to],
        );
        const [count] = await tx.unsafe<{ moved: number }[]>(`select count(*)::int as moved from partition_moved`);
        moved = count!.moved;
      }
      await tx.unsafe(
        `create table ${name} partition of ${spec.table} for values from ('${from}') to ('${to}')${spec.storage ? ` with (${spec.storage})` : ''}`,
      );
      if (fallback) {
        if (moved > 0) await tx.unsafe(`insert into ${spec.table} select * from partition_moved`);
        await tx.unsafe(`drop table partition_moved`);
      }
      created.push(name);
    }
    return created;
  });
}

/**
 * Drops every range partition whose rows are all older than the table's retention at `now` (its
 * upper bound at or before now − retention), after its `beforeDrop`, and deletes default-partition
 * rows past the same point. Returns the names dropped and the default rows deleted.
 */
export async function dropExpiredPartitions(
  sql: Sql,
  spec: PartitionedTable,
  policy: RetentionPolicy,
  now: Date,
  log: Logger,
): Promise<{ dropped: string[]; defaultRowsDeleted: number }> {
  const cutoff = windowStart(now, spec.retentionDays(policy));
  return lockedDdl(sql, spec, async (tx) => {
    const partitions = await listPartitions(tx, spec);
    const dropped: string[] = [];
    let defaultRowsDeleted = 0;
    for (const partition of partitions) {
      if (partition.isDefault) {
        const result = await tx.unsafe(`delete from ${partition.name} where ${spec.column} < $1`, [boundLiteral(spec, cutoff)]);
        defaultRowsDeleted = result.count;
      } else if (partition.upper !== null && partition.upper <= cutoff.getTime()) {
        await spec.beforeDrop?.(tx, partition.name, log);
        await tx.unsafe(`drop table ${partition.name}`);
        dropped.push(partition.name);
      }
    }
    return { dropped, defaultRowsDeleted };
  });
}

export type RetentionReport = Record<string, { created: string[]; dropped: string[]; defaultRowsDeleted: number } | { error: string }>;

/**
 * The maintenance pool's retention run: for every partitioned table, partitions ahead of `now`, and
 * expired ones dropped. A table whose DDL cannot get its lock in time (or fails) is reported and
 * left for the next run; the others go on.
 */
export async function applyRetention(sql: Sql, policy: RetentionPolicy, now: Date, log: Logger): Promise<RetentionReport> {
  const report: RetentionReport = {};
  for (const spec of PARTITIONED_TABLES) {
    try {
      const created = await ensurePartitions(sql, spec, now);
      const { dropped, defaultRowsDeleted } = await dropExpiredPartitions(sql, spec, policy, now, log);
      report[spec.table] = { created, dropped, defaultRowsDeleted };
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      log.warn({ table: spec.table, err: message }, 'retention: table left for the next run');
      report[spec.table] = { error: message };
    }
  }
  return report;
}
