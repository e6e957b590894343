/**
 * Part 3 of `npm run bench:ingest` (issue 32, docs/design.md §19): sales windows for the full catalog.
 *
 *  (1) Steam's 24 h windows for every catalog name (what priceoverview would give, made here from the
 *      simulator's skinport windows with other volumes, so the combination has two sources), then
 *      skinport's sales history from the simulator (fetchSkinportSales over real HTTP, every listed
 *      variant, four windows each), mapped and written with writeSalesWindows into empty tables: its
 *      write phase is BEGIN to COMMIT. (2) A raw COPY of the same rows (the rows that write left in
 *      source_sales, sales_observations and item_sales) into the same tables, truncated, in one
 *      transaction, three times, median. Target: COPY time / write phase ≥ 50 %. (3) Steady state: the
 *      simulator's clock one hour on (every window moves), written again, three times.
 *  (4) GET /v2/prices/{id} with sales windows: an API process over the same database (its latest
 *      prices from part 2), 50 connections over 200 items that have windows, p99 < 10 ms.
 */

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Sql } from '../shared/platform/db.ts';
import { createLogger } from '../shared/platform/logger.ts';
import { type CatalogNameMap, claimIngestRun } from '../shared/prices/ingest.ts';
import { mapSalesToCatalog, type StagedSales, writeSalesWindows } from '../shared/prices/sales.ts';
import { fetchSkinportSales } from '../shared/sources/skinport-sales.ts';
import { copyIn, copyOut, freePort, harFile, load, onCleanup, type Result, say, spawnApi, stopChild, waitReady } from './lib.ts';
import { keyAndPricedItems } from './price-fixtures.ts';

export const SALES_TARGETS = { copyShare: 0.5, readP99Ms: 10 };
const TABLES = ['source_sales', 'sales_observations', 'item_sales'] as const;
const COPY_RUNS = 3;
const STEADY_RUNS = 3;

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const ms = (value: number) => `${value.toFixed(0)} ms`;

export type SalesFigures = {
  windows: number;
  rows: Record<(typeof TABLES)[number], number>;
  writeMs: number;
  timings: Record<string, number>;
  copyMs: number[];
  steadyMs: number[];
  steadyChanged: number[];
  read: Result | null;
};

async function write(sql: Sql, source: string, rows: StagedSales[], slot: number) {
  const runId = (await claimIngestRun(sql, `bench-sales-${source}`, slot, new Date()))!;
  const started = performance.now();
  const result = await writeSalesWindows(sql, { source, runId, rows, ingestedAt: new Date(), skipped: 0, unknownNames: 0 });
  return { ...result, runId, ms: performance.now() - started };
}

export async function measureSales(input: {
  sql: Sql;
  dbUrl: string;
  simulatorUrl: string;
  clock: { now: Date };
  names: CatalogNameMap;
  read: boolean;
}): Promise<SalesFigures> {
  const { sql } = input;
  const log = createLogger({ level: 'silent', name: 'bench' });
  await sql.unsafe(`truncate ${TABLES.join(', ')}`);
  await sql`delete from sales_readers`;
  const read = () =>
    fetchSkinportSales({ baseUrl: `${input.simulatorUrl}/skinport`, log, timeoutMs: 60_000, acquire: async () => undefined, now: () => input.clock.now });
  const fetched = await read();
  const skinport = mapSalesToCatalog(fetched.sales, input.names).staged;
  // Steam's 24 h for every name skinport has: its median and a volume of its own.
  const steam = skinport
    .filter((row) => row.window === '24h' && row.version === 'default')
    .map((row, index) => ({ ...row, mean: null, min: null, max: null, volume: row.volume === 0 ? 0 : row.volume * 3 + (index % 7) }));
  const steamWrite = await write(sql, 'steam', steam, 1);
  say(`sales: steam 24 h windows ${steam.length} written in ${ms(steamWrite.ms)}`);
  const first = await write(sql, 'skinport', skinport, 2);
  const rows = Object.fromEntries(
    await Promise.all(
      TABLES.map(async (table) => [
        table,
        (await sql.unsafe(`select count(*)::int as n from ${table} where ${table === 'item_sales' ? 'true' : `run_id = '${first.runId}'`}`))[0]!.n as number,
      ]),
    ),
  ) as SalesFigures['rows'];
  say(
    `sales: skinport ${skinport.length} windows (${fetched.rows} rows upstream), write ${ms(first.ms)} ${JSON.stringify(first.timings)}; rows ${JSON.stringify(rows)}`,
  );
  // The same rows as a raw COPY: what the write left of its own run, and every combined window.
  const data = new Map<string, Buffer>([
    ['source_sales', await copyOut(sql, `select * from source_sales where run_id = '${first.runId}'`)],
    ['sales_observations', await copyOut(sql, `select * from sales_observations where run_id = '${first.runId}'`)],
    ['item_sales', await copyOut(sql, 'select * from item_sales')],
  ]);
  const copyMs: number[] = [];
  for (let attempt = 0; attempt < COPY_RUNS; attempt += 1) copyMs.push(await copyIn(sql, TABLES, data));
  say(`sales: raw COPY of the same rows ${copyMs.map(ms).join(', ')}`);
  // Back to the state the write left (the COPYs dropped steam's windows), then the steady state.
  await sql.unsafe(`truncate ${TABLES.join(', ')}`);
  await write(sql, 'steam', steam, 3);
  await write(sql, 'skinport', skinport, 4);
  const steadyMs: number[] = [];
  const steadyChanged: number[] = [];
  for (let run = 0; run < STEADY_RUNS; run += 1) {
    input.clock.now = new Date(input.clock.now.getTime() + 3_600_000);
    const next = mapSalesToCatalog((await read()).sales, input.names).staged;
    const done = await write(sql, 'skinport', next, 10 + run);
    steadyMs.push(done.ms);
    steadyChanged.push(done.changed);
  }
  say(`sales: hourly rereads ${steadyMs.map(ms).join(', ')} (${steadyChanged.join(', ')} windows changed)`);

  let result: Result | null = null;
  if (input.read) result = await measureRead(sql, input.dbUrl);
  return { windows: skinport.length, rows, writeMs: first.ms, timings: first.timings, copyMs, steadyMs, steadyChanged, read: result };
}

/** GET /v2/prices/{id} over items with sales windows: 50 connections, p99. */
async function measureRead(sql: Sql, dbUrl: string): Promise<Result> {
  const { key } = await keyAndPricedItems(sql, 'bench-sales', new Date(), 1);
  const ids = await sql<{ catalog_id: string }[]>`
    select distinct s.catalog_id from item_sales s where exists (select 1 from latest_prices l where l.catalog_id = s.catalog_id)
    order by s.catalog_id limit 200`;
  if (ids.length === 0) throw new Error('no item has both prices and sales windows (run part 2 first)');
  const port = await freePort();
  const queuePrefix = `benchsales${process.pid}`;
  const api = spawnApi(port, { DATABASE_URL: dbUrl, QUEUE_PREFIX: queuePrefix });
  onCleanup(() => stopChild(api.proc));
  const base = `http://127.0.0.1:${port}`;
  await waitReady('API', api, `${base}/v2/health`);
  const urls = ids.map((row) => `${base}/v2/prices/${row.catalog_id}`);
  const headers = { 'x-api-key': key };
  const probe = await fetch(urls[0]!, { headers });
  const body = (await probe.json()) as { versions?: { sales?: Record<string, unknown> }[] };
  if (probe.status !== 200 || !body.versions?.[0]?.sales) throw new Error(`GET ${urls[0]} answered ${probe.status} without sales`);
  const scratch = await mkdtemp(join(tmpdir(), 'bench-sales-'));
  onCleanup(() => rm(scratch, { recursive: true, force: true }));
  const har = await harFile(join(scratch, 'items.har'), urls, headers);
  const result = await load(`GET /v2/prices/{id} with sales windows (${urls.length} ids)`, api.proc.pid, urls[0]!, headers, { har });
  await stopChild(api.proc);
  return result;
}

export function salesChecks(figures: SalesFigures): [string, boolean, string][] {
  const copy = median(figures.copyMs);
  const checks: [string, boolean, string][] = [
    [
      `sales windows, full catalog: raw COPY of the same rows / write phase >= ${SALES_TARGETS.copyShare * 100} %`,
      copy / figures.writeMs >= SALES_TARGETS.copyShare,
      `${((copy / figures.writeMs) * 100).toFixed(1)} %: COPY ${ms(copy)} against the write's ${ms(figures.writeMs)} (${figures.windows} windows)`,
    ],
  ];
  if (figures.read) {
    checks.push([
      `GET /v2/prices/{id} with sales windows, 50 connections: p99 < ${SALES_TARGETS.readP99Ms} ms`,
      figures.read.p99 < SALES_TARGETS.readP99Ms,
      `p99 ${figures.read.p99} ms, p50 ${figures.read.p50} ms, ${figures.read.rps.toFixed(0)} req/s, non-2xx ${figures.read.non2xx}`,
    ]);
  }
  return checks;
}
