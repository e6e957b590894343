/**
 * bench:compat-build (issue 33): what building the drop-in formats' documents costs per keyless
 * snapshot, against the keyless list's own build, on the real catalog with the prices and sales
 * windows bench:prices seeds, and a whole-market marketplace (lisskins) beside them.
 *
 * The snapshots are those of production's minutes (one snapshot a minute at most: the steam source's
 * interval; nine marketplaces at five minutes, seven of them whole-market listings):
 *   - a typical minute: a whole-market listing (its run confirms every listed price at once, so the
 *     time of every listed row moves: current_prices, sql/0013) that repriced 20 % of its rows, and a
 *     steam run (a search page: 100 names observed again, half of them repriced);
 *   - a minute of skinport (20 % of its rows repriced, each with its own time) and steam;
 *   - a steam-only minute;
 *   - the hour's sales read (every window changed) and a typical minute's runs;
 *   - the first build (a process's first snapshot).
 * Then the hour: 59 typical minutes and one sales read, against 60 list builds.
 */
import { CompatPriceGatherer, gatheredCompatDataset } from '../shared/compat/dataset.ts';
import { COMPAT_BUILDERS } from '../shared/compat/registry.ts';
import { ensureCompatDocuments } from '../shared/compat/store.ts';
import { COMPAT_DOCUMENTS } from '../shared/compat/types.ts';
import type { Sql } from '../shared/platform/db.ts';
import { createWorkerRedis } from '../shared/platform/redis.ts';
import type { PriceListItemObserver } from '../shared/prices/public-document.ts';
import { buildPriceSnapshot } from '../shared/prices/snapshot.ts';
import { onCleanup, removeQueueKeysAtCleanup, runBench, say } from './lib.ts';
import { catalogDatabase, ms, seedLatestPrices, seedSalesAndRates } from './price-fixtures.ts';

/** A whole-market marketplace's prices (70 % of the catalog's versions, listed), as a listing leaves them. */
async function seedListingSource(sql: Sql, now: Date): Promise<void> {
  await sql`
    insert into latest_prices (catalog_id, source, version, price, quantity, source_time, ingested_at, run_id, listed)
    select c.catalog_id, 'lisskins', v.version, round(0.03 + (abs(hashtext(c.catalog_id || 'lisskins' || v.version)) % 250000) / 100.0, 2),
           1 + abs(hashtext(v.version || c.catalog_id || 'lisskins')) % 200, ${now}, ${now}, md5(c.catalog_id || 'lisskins' || v.version)::uuid, true
    from catalog_items c cross join lateral (select 'default' as version union all select unnest(c.phases)) v
    where abs(hashtext(c.catalog_id || 'share' || 'lisskins')) % 100 < 70`;
  await sql`insert into price_sources (name, last_success_at, last_attempt_at, stale_after_seconds, listed_at) values ('lisskins', ${now}, ${now}, 900, ${now})`;
  // Each round is a minute later: every source stays fresh as its runs keep it in production (this
  // bench runs only some of them), so no price turns stale between rounds.
  await sql`update price_sources set stale_after_seconds = 86400`;
}

/** A whole-market listing at `now`: 20 % of its rows repriced (`salt` picks them), every listed row confirmed. */
async function listingRun(sql: Sql, now: Date, salt: string): Promise<void> {
  await sql`update latest_prices set price = price + 0.01, source_time = ${now}, ingested_at = ${now} where source = 'lisskins' and abs(hashtext(catalog_id || ${salt})) % 100 < 20`;
  await sql`update price_sources set listed_at = ${now} where name = 'lisskins'`;
}

/** A steam run at `now`: a search page's 100 names observed again (their times move), half of them repriced. */
async function steamRun(sql: Sql, now: Date, salt: string): Promise<void> {
  await sql`
    update latest_prices set price = case when abs(hashtext(catalog_id || ${salt})) % 2 = 0 then price + 0.01 else price end, source_time = ${now}, ingested_at = ${now}
    where source = 'steam' and catalog_id in (select catalog_id from latest_prices where source = 'steam' order by md5(catalog_id || ${salt}) limit 100)`;
}

/** The sum of a report's byte counts, in MB. */
const mb = (sizes: Record<string, number>) => (Object.values(sizes).reduce((sum, size) => sum + size, 0) / 1e6).toFixed(1);

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
  await seedListingSource(sql, now);
  await seedSalesAndRates(sql, now);
  await sql`vacuum analyze`;

  const shares: Record<string, { list: number[]; formats: number[]; file: number[] }> = {};
  // As the index pool builds them: the prices gathered in the snapshot's own pass (timed apart, and
  // counted as the formats' cost, not the list's), then the documents.
  const round = async (kind: string, label: string) => {
    now = new Date(now.getTime() + 60_000);
    await sql`update price_sources set last_success_at = ${now}`;
    // As autovacuum keeps it between production's minutes: the rounds' updates would otherwise slow
    // the list's query round by round (its time rose from ~1.9 s to ~3.4 s over ten rounds).
    await sql`vacuum analyze latest_prices, price_sources`;
    // The index pool idles most of production's minute between snapshots: each round starts from a
    // collected heap, not from the garbage of the round before (whose collection would land in any phase).
    Bun.gc(true);
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
        `(gathering ${ms(gatherMs)}, items made ${gatherer.built.length}, ${JSON.stringify(compat.phases_ms)}); ` +
        `MB written ${mb(compat.stored)} of ${mb(compat.bytes)}; heap ${Math.round(process.memoryUsage().heapUsed / 1e6)} MB`,
    );
    // Each file alone: the costs every file shares (gathering, reading the windows and rates, the store's
    // lookups and the wait for Redis) charged in full to it, plus its own build and compression.
    const phases = compat.phases_ms;
    const own = (name: string) => (phases[name] ?? 0) + (phases[`${name} (compress)`] ?? 0) + (phases[`${name} (kept)`] ?? 0);
    const shared = gatherMs + (phases.dataset ?? 0) + (phases.store ?? 0);
    const file = Math.max(...COMPAT_DOCUMENTS.map((name) => shared + own(name)));
    const entry = (shares[kind] ??= { list: [], formats: [], file: [] });
    entry.list.push(listMs);
    entry.formats.push(total);
    entry.file.push(file);
  };
  await round('first', 'first build');
  // More minutes (COMPAT_BUILD_RUNS) make a CPU profile (bun --cpu-prof) mostly the steady state's.
  const runs = Number(process.env.COMPAT_BUILD_RUNS ?? 7);
  for (let i = 1; i <= runs; i += 1) {
    await listingRun(sql, new Date(now.getTime() + 60_000), `l${i}`);
    await steamRun(sql, new Date(now.getTime() + 60_000), `s${i}`);
    await round('typical', `a typical minute: a whole-market listing and a steam page (${i})`);
  }
  await sql`update latest_prices set price = price + 0.01, source_time = ${new Date(now.getTime() + 60_000)}, ingested_at = ${new Date(now.getTime() + 60_000)} where source = 'skinport' and abs(hashtext(catalog_id || 'k')) % 100 < 20`;
  await steamRun(sql, new Date(now.getTime() + 60_000), 'sk');
  await round('skinport', 'a minute of skinport (20 % repriced) and a steam page');
  for (let i = 1; i <= 2; i += 1) {
    await steamRun(sql, new Date(now.getTime() + 60_000), `so${i}`);
    await round('steam', `a steam-only minute (${i})`);
  }
  const at = new Date(now.getTime() + 60_000);
  await sql`update source_sales set volume = volume + 1, source_time = ${at}, ingested_at = ${at} where source = 'skinport'`;
  await sql`update item_sales set volume = volume + 1, updated_at = ${at}`;
  await listingRun(sql, at, 'x');
  await steamRun(sql, at, 'x');
  await round('sales', 'the hourly sales read and a typical minute');

  const median = (values: number[]) => [...values].sort((a, b) => a - b)[values.length >> 1]!;
  for (const [kind, { list, formats, file }] of Object.entries(shares)) {
    say(
      `median ${kind}: list ${ms(median(list))}, formats ${ms(median(formats))} = ${((median(formats) / median(list)) * 100).toFixed(0)} %; ` +
        `the costliest file alone (shared costs in full) ${ms(median(file))} = ${((median(file) / median(list)) * 100).toFixed(0)} %`,
    );
  }
  const typical = shares.typical!;
  const sales = shares.sales!;
  const hourFormats = 59 * median(typical.formats) + median(sales.formats);
  const hourList = 59 * median(typical.list) + median(sales.list);
  say(
    `the hour (59 typical minutes and the sales read): formats ${ms(hourFormats)} against the list's ${ms(hourList)} = ${((hourFormats / hourList) * 100).toFixed(1)} %`,
  );
}

await runBench(main);
