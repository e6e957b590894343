/**
 * bench:compat-build (issue 33): what building the drop-in formats' documents costs per keyless
 * snapshot, against the keyless list's own build, on the real catalog with the prices and sales
 * windows bench:prices seeds. Measures the first build, then snapshots after an ingest run changed
 * 20 % of skinport's prices (a whole-market run), then after steam runs that changed 100 prices (a
 * page of the market search, the smallest kind of run), then one after the hourly sales read
 * changed every window.
 */
import { CompatPriceGatherer, gatheredCompatDataset } from '../shared/compat/dataset.ts';
import { COMPAT_BUILDERS } from '../shared/compat/registry.ts';
import { ensureCompatDocuments } from '../shared/compat/store.ts';
import { createWorkerRedis } from '../shared/platform/redis.ts';
import type { PriceListItemObserver } from '../shared/prices/public-document.ts';
import { buildPriceSnapshot } from '../shared/prices/snapshot.ts';
import { onCleanup, removeQueueKeysAtCleanup, runBench, say } from './lib.ts';
import { catalogDatabase, ms, seedLatestPrices, seedSalesAndRates } from './price-fixtures.ts';

async function main(): Promise<void> {
  let now = new Date();
  const { sql } = await catalogDatabase('bench-compat-build');
  const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
  const prefix = `benchcompat${process.pid}`;
  removeQueueKeysAtCleanup(redisUrl, prefix);
  const redis = createWorkerRedis(redisUrl, 'bench-compat-build');
  onCleanup(() => redis.quit());
  const store = { sql, redis, prefix };
  await seedLatestPrices(sql, now);
  await seedSalesAndRates(sql, now);
  await sql`vacuum analyze`;

  // As the index pool builds them: the prices gathered in the snapshot's own pass (timed apart, and
  // counted as the formats' cost, not the list's), then the documents.
  const round = async (label: string) => {
    const gatherer = new CompatPriceGatherer(sql);
    let gatherMs = 0;
    const onItem: PriceListItemObserver = (entry, rows, freshness) => {
      const started = performance.now();
      gatherer.onItem(entry, rows, freshness);
      gatherMs += performance.now() - started;
    };
    const build = await buildPriceSnapshot(sql, now, { onItem });
    const listMs = build.duration_ms - gatherMs;
    const [row] = await sql<{ created_at: Date }[]>`select created_at from price_snapshots where id = ${build.id}`;
    const compat = await ensureCompatDocuments(store, { id: build.id, created_at: row!.created_at }, COMPAT_BUILDERS, undefined, () =>
      gatheredCompatDataset(sql, gatherer, row!.created_at),
    );
    const total = gatherMs + compat.ms;
    say(
      `${label}: list ${ms(listMs)} ${JSON.stringify(build.phases_ms)}; formats ${ms(total)} = ${((total / listMs) * 100).toFixed(0)} % of the list ` +
        `(gathering ${ms(gatherMs)}, ${JSON.stringify(compat.phases_ms)}); bytes ${JSON.stringify(compat.bytes)}`,
    );
    return { listMs, total };
  };
  await round('first build');
  // More runs (COMPAT_BUILD_RUNS) make a CPU profile (bun --cpu-prof) mostly the steady state's.
  const runs = Number(process.env.COMPAT_BUILD_RUNS ?? 3);
  for (let i = 1; i <= runs; i += 1) {
    now = new Date(now.getTime() + 60_000);
    await sql`update latest_prices set price = price + 0.01, source_time = ${now}, ingested_at = ${now} where source = 'skinport' and abs(hashtext(catalog_id || ${String(i)})) % 100 < 20`;
    await sql`update price_sources set last_success_at = ${now}`;
    await round(`after a run changing 20 % of skinport's prices (${i})`);
  }
  // A steam run: a page of the market search, ~100 names' prices (the smallest kind of run).
  for (let i = 1; i <= 2; i += 1) {
    now = new Date(now.getTime() + 60_000);
    await sql`
      update latest_prices set price = price + 0.01, source_time = ${now}, ingested_at = ${now}
      where source = 'steam' and catalog_id in (select catalog_id from latest_prices where source = 'steam' order by md5(catalog_id || ${String(i)}) limit 100)`;
    await sql`update price_sources set last_success_at = ${now}`;
    await round(`after a steam run changing 100 prices (${i})`);
  }
  now = new Date(now.getTime() + 60_000);
  await sql`update source_sales set volume = volume + 1, source_time = ${now}, ingested_at = ${now} where source = 'skinport'`;
  await sql`update item_sales set volume = volume + 1, updated_at = ${now}`;
  await sql`update latest_prices set price = price + 0.01, source_time = ${now}, ingested_at = ${now} where source = 'skinport' and abs(hashtext(catalog_id || 'x')) % 100 < 20`;
  await sql`update price_sources set last_success_at = ${now}`;
  await round('after the hourly sales read and a run');
}

await runBench(main);
