import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { catalogIdFor } from '../../shared/catalog/identity.ts';
import { calculateMarketIndex } from '../../shared/market-index/calculate.ts';
import { type Calculation, findCalculation, findLatestCalculation, listConstituents } from '../../shared/market-index/repository.ts';
import { createLogger } from '../../shared/platform/logger.ts';
import { type HistoryPageInput, itemHistoryPage, resolveHistoryWindow } from '../../shared/prices/history.ts';
import { claimIngestRun, type StagedObservation, writeIngestRun } from '../../shared/prices/ingest.ts';
import { applyRetention, listPartitions, PARTITIONED_TABLES, type RetentionReport, stepStart } from '../../shared/retention/partitions.ts';
import { type RetentionPolicy, retentionPolicy } from '../../shared/retention/policy.ts';
import { dispatchOutboxBatch, EVENT_EXPIRED } from '../../shared/webhooks/deliveries.ts';
import { scratchTestApp, type TestApp, testClock, workspaceWithKey } from '../helpers.ts';
import { subscribedEndpoint } from '../webhooks/webhooks-fixtures.ts';

/**
 * Issue 13, data lifecycle: a month and a half of simulated ingest runs (with index calculations,
 * a subscribed webhook endpoint and the maintenance pool's hourly retention run once a simulated
 * day) in a database of its own, on a clock that starts now. Tables whose retention is shorter than
 * the simulation end at a constant size; reads inside the retention windows are the same before and
 * after partitions are dropped.
 */
const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const DAYS = 45;
const RUNS_PER_DAY = 6;
const ITEMS = 12;
const SOURCE = 'skinport';
// Prices stay fresh from one run to the next (4 h apart), so every calculation links to the previous.
const STALE_AFTER_SECONDS = 6 * 3_600;

const clock = testClock(new Date(stepStart(new Date(), 'day').getTime() + DAY + 30 * 60_000));
const log = createLogger({ level: 'silent', name: 'retention-test' });
let t: TestApp;
let policy: RetentionPolicy;
const names = Array.from({ length: ITEMS }, (_, index) => `Sticker | Retention ${index}`);
const catalogIds = names.map(catalogIdFor);
let slot = 0;
let endpointId = '';

/** Every run: a third of the items move (a different third each run), the rest are seen again unchanged. */
function priceOf(item: number, run: number): string {
  const moves = Math.floor((run + (item % 3)) / 3);
  return `${(10 + item + moves * 0.25).toFixed(2)}`;
}

async function ingestRun(run: number): Promise<void> {
  const at = clock.now();
  const runId = (await claimIngestRun(t.deps.sql, SOURCE, (slot += 1), at))!;
  const rows: StagedObservation[] = catalogIds.map((catalogId, item) => ({
    catalog_id: catalogId,
    version: 'default',
    price: priceOf(item, run),
    median_price: null,
    quantity: 5,
    source_time: at,
  }));
  await writeIngestRun(t.deps.sql, {
    runId,
    source: SOURCE,
    rows,
    ingestedAt: at,
    staleAfterSeconds: STALE_AFTER_SECONDS,
    received: rows.length,
    skipped: 0,
    unknownNames: 0,
  });
  await calculateMarketIndex(t.deps.sql, { marketplace: SOURCE, now: clock.now });
  // The dispatcher fans the run's events out (no worker delivers them: they stay pending).
  await dispatchOutboxBatch(t.deps.sql, 1_000, at);
}

const TABLES = [
  'price_observations',
  'event_outbox',
  'price_stream',
  'ingest_runs',
  'market_index_prices',
  'price_rollups_10m',
  'price_rollups_hourly',
  'price_rollups_daily',
] as const;
type Sizes = Record<(typeof TABLES)[number], number>;

async function sizes(): Promise<Sizes> {
  const counts = await Promise.all(
    TABLES.map(async (table) => (await t.deps.sql.unsafe<{ count: number }[]>(`select count(*)::int as count from ${table}`))[0]!.count),
  );
  return Object.fromEntries(TABLES.map((table, index) => [table, counts[index]])) as Sizes;
}

/** Every read a client could make inside the retention windows, as exact JSON text. */
async function readsInsideWindows(calculationIds: string[]): Promise<string> {
  const now = clock.now();
  const history = async (granularity: '10m' | 'hourly' | 'daily', days: number) => {
    const input: HistoryPageInput = {
      catalogId: catalogIds[4]!,
      marketplace: SOURCE,
      granularity,
      version: null,
      window: resolveHistoryWindow(granularity, new Date(now.getTime() - days * DAY), now, now, policy.rollups[granularity]),
    };
    return (await itemHistoryPage(t.deps.sql, input, null, 1_000))!.dataJson;
  };
  const constituents = async (calculation: Calculation) => JSON.stringify((await listConstituents(t.deps.sql, calculation, null, 1_000)).items);
  const calculations = await Promise.all(calculationIds.map((id) => findCalculation(t.deps.sql, id)));
  const latest = await findLatestCalculation(t.deps.sql, { marketplace: SOURCE, methodology: 'cs2.chain-equal-weight.v1', filter: null });
  return JSON.stringify({
    tenMinutes: await history('10m', 30),
    hourly: await history('hourly', 40),
    daily: await history('daily', 44),
    latest,
    constituents: await Promise.all(calculations.map((calculation) => constituents(calculation!))),
  });
}

const dropped = (report: RetentionReport, table: string) => {
  const entry = report[table]!;
  if ('error' in entry) throw new Error(`${table}: ${entry.error}`);
  return entry.dropped;
};

beforeAll(async () => {
  t = await scratchTestApp({ tag: 'retention', now: clock.now });
  policy = retentionPolicy(t.deps.config);
  await t.deps.sql`
    insert into catalog_items (catalog_id, market_hash_name, type)
    select * from unnest(${catalogIds}::text[], ${names}::text[], ${names.map(() => 'sticker')}::text[])`;
  const ws = await workspaceWithKey(t);
  endpointId = await subscribedEndpoint(t.deps.sql, ws.workspace.id, ['price.updated', 'prices.updated'], clock.now());
}, 60_000);

afterAll(async () => {
  await t?.close();
});

describe('retention over a simulated month and a half', () => {
  test('tables end at a constant size, partitions are dropped whole, and reads inside the windows do not change', async () => {
    const daily: Sizes[] = [];
    let run = 0;
    const reads = { before: '', after: '' };
    let finalReport: RetentionReport = {};
    for (let day = 0; day < DAYS; day += 1) {
      for (let index = 0; index < RUNS_PER_DAY; index += 1) {
        await ingestRun(run);
        run += 1;
        clock.advance(DAY / RUNS_PER_DAY);
      }
      if (day === DAYS - 1) {
        // The last retention run has three days of expired partitions to drop: what a client reads
        // inside the windows is captured before and after it.
        const recent = await t.deps.sql<{ id: string }[]>`
          select id from market_index_calculations
          where status = 'succeeded' and segment = '' and calculated_at >= ${new Date(clock.now().getTime() - 1.5 * DAY)}
          order by calculated_at limit 3`;
        expect(recent.length).toBe(3);
        reads.before = await readsInsideWindows(recent.map((row) => row.id));
        finalReport = await applyRetention(t.deps.sql, policy, clock.now(), log);
        reads.after = await readsInsideWindows(recent.map((row) => row.id));
      } else if (day < DAYS - 4) {
        await applyRetention(t.deps.sql, policy, clock.now(), log);
      }
      daily.push(await sizes());
    }

    // Reads inside the windows are the same, byte for byte, though partitions were dropped under them.
    expect(reads.after).toBe(reads.before);
    const parsed = JSON.parse(reads.after) as { tenMinutes: string; hourly: string; constituents: string[] };
    expect(JSON.parse(parsed.tenMinutes).length).toBeGreaterThan(0);
    expect(parsed.constituents.every((page) => JSON.parse(page).length === ITEMS)).toBe(true);
    for (const table of ['price_observations', 'event_outbox', 'price_stream', 'ingest_runs', 'market_index_prices', 'price_rollups_10m']) {
      expect(dropped(finalReport, table).length).toBeGreaterThanOrEqual(3);
    }

    // Tables whose retention is shorter than the simulation: the same size at the end of each of the
    // last days that ran retention, and after the final run (one day's partitions in, one day's out);
    // the old tables attached by the migration are gone.
    const last = [...daily.slice(DAYS - 9, DAYS - 4), daily.at(-1)!];
    for (const table of ['price_observations', 'event_outbox', 'price_stream', 'ingest_runs', 'market_index_prices', 'price_rollups_10m'] as const) {
      const perDay = daily[1]![table] - daily[0]![table];
      expect(perDay).toBeGreaterThan(0);
      expect(new Set(last.map((size) => size[table])).size).toBe(1);
      const spec = PARTITIONED_TABLES.find((candidate) => candidate.table === table)!;
      // At most its retention in whole days plus the day in progress.
      expect(last[0]![table]).toBeLessThanOrEqual((spec.retentionDays(policy) + 1) * perDay);
      const partitions = await listPartitions(t.deps.sql, spec);
      expect(partitions.some((partition) => partition.name.endsWith('_legacy'))).toBe(false);
    }
    // Longer horizons keep growing within the simulation, by the same amount each day.
    for (const table of ['price_rollups_hourly', 'price_rollups_daily'] as const) {
      expect(daily.at(-1)![table] - daily.at(-2)![table]).toBe(daily[2]![table] - daily[1]![table]);
    }

    // Deliveries of expired events were failed before their partition went, never left pending.
    const deliveries = await t.deps.sql<{ state: string; last_error: string | null; count: number }[]>`
      select state, last_error, count(*)::int as count from webhook_deliveries where endpoint_id = ${endpointId} group by 1, 2 order by 1`;
    expect(deliveries.find((row) => row.state === 'failed')).toMatchObject({ last_error: EVENT_EXPIRED });
    const [pending] = await t.deps.sql<
      { oldest: Date | null }[]
    >`select min(created_at) as oldest from webhook_deliveries where endpoint_id = ${endpointId} and state = 'pending'`;
    expect(pending!.oldest!.getTime()).toBeGreaterThanOrEqual(clock.now().getTime() - (policy.outbox + 1) * DAY);

    const bytes = await t.deps.sql<{ table: string; bytes: string }[]>`
      select t as table, (select coalesce(sum(pg_total_relation_size(relid)), 0) from pg_partition_tree(t::regclass))::text as bytes
      from unnest(${[...TABLES]}::text[]) as t`;
    process.stdout.write(
      `[retention] after ${DAYS} simulated days (${RUNS_PER_DAY} runs a day, ${ITEMS} items): ` +
        TABLES.map(
          (table) => `${table} ${daily.at(-1)![table]} rows / ${(Number(bytes.find((row) => row.table === table)!.bytes) / 1024).toFixed(0)} KiB`,
        ).join(', ') +
        '\n',
    );
  }, 240_000);

  test('a row that arrives before its partition is kept in the default one and moves in when the partition is made', async () => {
    const at = new Date(clock.now().getTime() + 40 * DAY);
    const runId = crypto.randomUUID();
    await t.deps.sql`
      insert into price_observations (catalog_id, source, version, price, source_time, ingested_at, run_id)
      values (${catalogIds[0]!}, 'early', 'default', 1, ${at}, ${at}, ${runId})`;
    const where = async () =>
      (await t.deps.sql<{ partition: string }[]>`select tableoid::regclass::text as partition from price_observations where run_id = ${runId}`)[0]!.partition;
    expect(await where()).toBe('price_observations_default');
    await applyRetention(t.deps.sql, policy, at, log);
    expect(await where()).toBe(`price_observations_p${at.toISOString().slice(0, 10).replaceAll('-', '')}`);
  });
});
