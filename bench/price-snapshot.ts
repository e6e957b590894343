/**
 * Keyless price snapshot benchmark: `npm run bench:snapshot`.
 *
 * Creates a throwaway database (dropped afterwards), seeds BENCH_ITEMS catalog items (default
 * 40 000) with latest prices from three sources (skinport for every item, steam for 70 %, csfloat
 * for 50 %; 2 % of the items also carry four phase versions), then times buildPriceSnapshot end to
 * end and step by step (the set-based query, assembling, JSON, each compression), brotli qualities
 * side by side, and what an API process spends loading a snapshot and deriving a per-source list.
 */
import { join } from 'node:path';
import { promisify } from 'node:util';
import { brotliCompress, gzip, constants as zlibConstants } from 'node:zlib';
import { databaseName, dropDatabase, recreateDatabase } from '../scripts/services.ts';
import { createSql } from '../shared/platform/db.ts';
import { migrate } from '../shared/platform/migrate.ts';
import { DerivedListPool } from '../shared/prices/derived-list-pool.ts';
import { assemblePriceList } from '../shared/prices/public-document.ts';
import { findNewestPriceSnapshot, findSourceClocks, readSnapshotInputs } from '../shared/prices/repository.ts';
import { buildPriceSnapshot, SNAPSHOT_BROTLI_QUALITY } from '../shared/prices/snapshot.ts';
import { LoadedPriceSnapshot } from '../shared/prices/snapshot-cache.ts';

const ITEMS = Number(process.env.BENCH_ITEMS ?? 40_000);
const RUNS = 3;
const say = (line: string) => process.stdout.write(`[bench] ${line}\n`);
const kib = (bytes: number) => `${(bytes / 1024).toFixed(0)} KiB`;
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
async function timed<T>(work: () => Promise<T> | T): Promise<[T, number]> {
  const started = performance.now();
  const value = await work();
  return [value, performance.now() - started];
}

const baseUrl = process.env.DATABASE_URL;
if (!baseUrl) throw new Error('DATABASE_URL is not set (run through `npm run bench:snapshot`)');
const benchDb = `${databaseName(baseUrl)}_bench_snapshot_${process.pid}`;
const url = await recreateDatabase(baseUrl, benchDb, say);
const sql = createSql(url, { max: 4, application: 'bench-snapshot' });
try {
  await migrate(sql, join(import.meta.dir, '..', 'sql'));
  const [, seedMs] = await timed(async () => {
    await sql`
      insert into catalog_items (catalog_id, market_hash_name, type, weapon, exterior, phases)
      select 'itm_' || substr(md5(i::text), 1, 26),
             'Weapon ' || (i % 45) || ' | Finish number ' || i || ' (' || (array['Factory New','Minimal Wear','Field-Tested','Well-Worn','Battle-Scarred'])[1 + i % 5] || ')',
             'weapon', 'weapon-' || (i % 45), 'field-tested',
             case when i % 50 = 0 then '{phase-1,phase-2,phase-3,phase-4}'::text[] else '{}' end
      from generate_series(1, ${ITEMS}) i`;
    await sql`
      insert into latest_prices (catalog_id, source, version, price, median_price, quantity, source_time, ingested_at, run_id)
      select c.catalog_id, s.source, v.version, round((random() * 2000)::numeric, 2), null, (random() * 500)::int,
             now() - (random() * 600) * interval '1 second', now(), gen_random_uuid()
      from catalog_items c
      cross join (values ('skinport', 1.0), ('steam', 0.7), ('csfloat', 0.5)) s(source, share)
      cross join lateral (select 'default' as version union all select unnest(c.phases)) v
      -- A hash, not random(): the same items get the same sources on every run.
      where abs(hashtext(c.catalog_id || s.source)) % 100 < s.share * 100`;
  });
  const [priceCount] = await sql<{ count: number }[]>`select count(*)::int as count from latest_prices`;
  const priceRows = priceCount!.count;
  say(`seeded ${ITEMS} items and ${priceRows} latest prices in ${seedMs.toFixed(0)} ms`);
  await sql`vacuum analyze latest_prices`;
  await sql`vacuum analyze catalog_items`;

  // End to end, each run with one price changed so nothing is skipped as unchanged.
  const buildMs: number[] = [];
  let last = null as Awaited<ReturnType<typeof buildPriceSnapshot>> | null;
  for (let run = 0; run < RUNS; run += 1) {
    await sql`update latest_prices set price = price + 0.01 where ctid = (select ctid from latest_prices limit 1)`;
    last = await buildPriceSnapshot(sql, new Date());
    buildMs.push(last.duration_ms);
  }
  say(`buildPriceSnapshot: median ${median(buildMs)} ms over ${RUNS} runs (${buildMs.join(', ')} ms)`);
  say(`  last run's phases: ${JSON.stringify(last!.phases_ms)}`);
  say(`  ${last!.item_count} items; JSON ${kib(last!.bytes!.json)} (stored uncompressed; API processes compress it, below)`);
  const unchanged = await buildPriceSnapshot(sql, new Date());
  say(`  unchanged prices: ${unchanged.duration_ms} ms (query, JSON and hash only; nothing written)`);

  // Step by step.
  const [rows, queryMs] = await timed(() => readSnapshotInputs(sql));
  const sources = await findSourceClocks(sql);
  const [list, assembleMs] = await timed(() => assemblePriceList(rows, { now: new Date(), sources }));
  const [json, stringifyMs] = await timed(() => JSON.stringify(list));
  const raw = Buffer.from(json);
  say(`steps: query ${queryMs.toFixed(0)} ms (${rows.length} rows), assemble ${assembleMs.toFixed(0)} ms, JSON.stringify ${stringifyMs.toFixed(0)} ms`);
  const gzipAsync = promisify(gzip);
  const brotliAsync = promisify(brotliCompress);
  for (const level of [1, 6, 9]) {
    const [out, ms] = await timed(() => gzipAsync(raw, { level }));
    say(`  gzip -${level}: ${kib(out.length)} in ${ms.toFixed(0)} ms`);
  }
  for (const quality of [5, 7, 9, 11]) {
    const [out, ms] = await timed(() =>
      brotliAsync(raw, {
        params: {
          [zlibConstants.BROTLI_PARAM_MODE]: zlibConstants.BROTLI_MODE_TEXT,
          [zlibConstants.BROTLI_PARAM_QUALITY]: quality,
          [zlibConstants.BROTLI_PARAM_SIZE_HINT]: raw.length,
        },
      }),
    );
    say(`  brotli q${quality}: ${kib(out.length)} in ${ms.toFixed(0)} ms`);
  }

  // What an API process spends per new snapshot.
  const [record, fetchMs] = await timed(() => findNewestPriceSnapshot(sql));
  const lists = new DerivedListPool();
  const [loaded, loadMs] = await timed(() => LoadedPriceSnapshot.load(record!, lists));
  const [full, compressMs] = await timed(() => loaded.body);
  say(
    `API: compress the full list ${compressMs.toFixed(0)} ms wall on the thread pool (gzip -6 ${kib(full.gzip.length)}, brotli q${SNAPSHOT_BROTLI_QUALITY} ${kib(full.br.length)})`,
  );
  const [skinport, deriveMs] = await timed(() => loaded.derivedBody('skinport', null));
  const [, itemMs] = await timed(() => loaded.itemBody(list.items[123]!.market_hash_name));
  say(
    `API: fetch snapshot ${fetchMs.toFixed(0)} ms, index in a thread ${loadMs.toFixed(0)} ms wall, derive ?source=skinport ${deriveMs.toFixed(0)} ms (JSON ${kib(skinport.json.length)}, br ${kib(skinport.br.length)}), one item body ${itemMs.toFixed(2)} ms`,
  );
  say(`API heap after load: ${(process.memoryUsage().heapUsed / 1024 / 1024).toFixed(0)} MiB`);
  await lists.close();

  // Issue 32 (docs/design.md §19): the list with `sales_7d` against the same list without, as served (brotli at
  // the served quality). Every version priced by skinport gets a 7-day window, as skinport's sales
  // history gives every item it lists one (about one in six sold nothing: a null median, volume 0).
  const served = async () => {
    const build = await buildPriceSnapshot(sql, new Date());
    const newest = await findNewestPriceSnapshot(sql);
    const snapshot = await LoadedPriceSnapshot.load(newest!, lists2);
    const body = await snapshot.body;
    return { build, br: body.br.length, json: body.json.length };
  };
  const lists2 = new DerivedListPool();
  await sql`update latest_prices set price = price + 0.01 where ctid = (select ctid from latest_prices limit 1)`;
  const without = await served();
  const [, salesSeedMs] = await timed(
    () => sql`
      insert into item_sales (catalog_id, version, sales_window, median, volume, sources, updated_at)
      select l.catalog_id, l.version, '7d',
             case when abs(hashtext(l.catalog_id || l.version)) % 6 = 0 then null else round((l.price * (0.9 + random() * 0.15))::numeric, 2) end,
             case when abs(hashtext(l.catalog_id || l.version)) % 6 = 0 then 0 else 1 + (random() * random() * 400)::int end,
             '{skinport}', now()
      from latest_prices l where l.source = 'skinport'`,
  );
  await sql`update latest_prices set price = price + 0.01 where ctid = (select ctid from latest_prices limit 1)`;
  const withSales = await served();
  const [salesRows] = await sql<{ count: number }[]>`select count(*)::int as count from item_sales`;
  const ratio = withSales.br / without.br;
  say(
    `sales_7d (${salesRows!.count} windows seeded in ${salesSeedMs.toFixed(0)} ms): JSON ${kib(without.json)} → ${kib(withSales.json)}, ` +
      `brotli q${SNAPSHOT_BROTLI_QUALITY} ${kib(without.br)} → ${kib(withSales.br)}; build ${without.build.duration_ms} → ${withSales.build.duration_ms} ms`,
  );
  say(`  ${ratio < 1.15 ? 'PASS' : 'FAIL'}  keyless list with sales_7d < 1.15 × without (brotli, as served): ${ratio.toFixed(3)} ×`);
  await lists2.close();
} finally {
  await sql.end({ timeout: 5 });
  await dropDatabase(baseUrl, benchDb, say);
}
