/**
 * The price data both keyless-list benchmarks (bench/prices.ts, bench/prices-memory.ts) start from,
 * in a scratch database: the real catalog, latest prices written set-based for every item and
 * version (skinport and steam everywhere, csfloat for about half: 2–3 sources per item,
 * deterministic decimal prices), and one keyless snapshot built with buildPriceSnapshot.
 */
import { join } from 'node:path';
import { generateCatalog } from '../shared/catalog/generate.ts';
import { syncCatalog } from '../shared/catalog/repository.ts';
import { recordFxSuccess, saveRateDays } from '../shared/fx/repository.ts';
import { adminCreateKey, adminCreateWorkspace, adminUpdateWorkspace } from '../shared/identity/admin.ts';
import { createSql, type Sql } from '../shared/platform/db.ts';
import { migrate } from '../shared/platform/migrate.ts';
import { buildPriceSnapshot } from '../shared/prices/snapshot.ts';
import { onCleanup, repoRoot, say, scratchDatabase } from './lib.ts';

export const ms = (value: number) => `${value.toFixed(0)} ms`;
export const kib = (bytes: number) => `${(bytes / 1024).toFixed(0)} KiB`;

export async function timed<T>(work: () => Promise<T>): Promise<[T, number]> {
  const started = performance.now();
  const value = await work();
  return [value, performance.now() - started];
}

/** Scratch database with the real catalog and its schema; the SQL client is ended at cleanup. */
export async function catalogDatabase(application: string): Promise<{ url: string; sql: Sql }> {
  const db = await scratchDatabase();
  const sql = createSql(db.url, { max: 4, application });
  onCleanup(() => sql.end({ timeout: 5 }).catch(() => undefined));
  await migrate(sql, join(repoRoot, 'sql'));
  const [synced, syncMs] = await timed(() => syncCatalog(sql, generateCatalog()));
  say(`catalog: ${synced.total} items synced in ${ms(syncMs)}`);
  return { url: db.url, sql };
}

/** Latest prices from a hash of (item, source, version), two decimals, and fresh price_sources rows. */
export async function seedLatestPrices(sql: Sql, now: Date): Promise<void> {
  const [, seedMs] = await timed(async () => {
    await sql`
      insert into latest_prices (catalog_id, source, version, price, median_price, quantity, source_time, ingested_at, run_id)
      select c.catalog_id, s.source, v.version,
             round(0.03 + (abs(hashtext(c.catalog_id || s.source || v.version)) % 250000) / 100.0, 2),
             round(0.03 + (abs(hashtext(c.catalog_id || s.source || v.version)) % 250000) / 100.0 * 1.04, 2),
             1 + abs(hashtext(v.version || c.catalog_id || s.source)) % 500,
             ${now}::timestamptz - (abs(hashtext(s.source || c.catalog_id)) % 300) * interval '1 second',
             ${now}::timestamptz,
             md5(c.catalog_id || s.source || v.version)::uuid
      from catalog_items c
      cross join (values ('skinport', 100), ('steam', 100), ('csfloat', 50)) s (source, share)
      cross join lateral (select 'default' as version union all select unnest(c.phases)) v
      where abs(hashtext(c.catalog_id || 'share' || s.source)) % 100 < s.share`;
    await sql`
      insert into price_sources (name, last_success_at, last_attempt_at, stale_after_seconds)
      values ('skinport', ${now}, ${now}, 900), ('steam', ${now}, ${now}, 900), ('csfloat', ${now}, ${now}, 900)`;
  });
  const [counts] = await sql<{ prices: number; sources: string }[]>`
    select sum(n)::int as prices, string_agg(source || ' ' || n, ', ' order by source) as sources
    from (select source, count(*) as n from latest_prices group by source) s`;
  say(`latest prices: ${counts!.prices} rows (${counts!.sources}) in ${ms(seedMs)}`);
}

export async function buildSnapshot(sql: Sql, now: Date) {
  const build = await buildPriceSnapshot(sql, now);
  say(`snapshot ${build.id}: ${build.item_count} items; JSON ${kib(build.bytes!.json)}; built in ${ms(build.duration_ms)} ${JSON.stringify(build.phases_ms)}`);
  return build;
}

/**
 * A `prices:read` key of an enterprise workspace whose budgets never run out during a load, and a
 * fixed pseudo-random sample of `count` priced catalog ids to rotate over in GET /v2/prices/{id}.
 */
export async function keyAndPricedItems(sql: Sql, label: string, at: Date, count: number): Promise<{ key: string; itemIds: string[] }> {
  const workspace = await adminCreateWorkspace(sql, { name: `${label}-${at.toISOString()}`, tier: 'enterprise' });
  await adminUpdateWorkspace(sql, workspace.id, { budgets: { minute: 1e9, day: 1e9 } });
  const { key } = await adminCreateKey(sql, { workspaceId: workspace.id, label, scopes: ['prices:read'] });
  const rows = await sql<{ catalog_id: string }[]>`
    select catalog_id from catalog_items c where exists (select 1 from latest_prices l where l.catalog_id = c.catalog_id)
    order by md5(catalog_id || 'bench') limit ${count}`;
  return { key, itemIds: rows.map((row) => row.catalog_id) };
}

/**
 * Sales windows as skinport's sales history and steam's priceoverview leave them (issue 32: skinport's
 * four windows per priced version, steam's 24 h for default versions, each combined window), and ECB
 * rates as the fx source stores them (Skinport's items answer in EUR by default).
 */
export async function seedSalesAndRates(sql: Sql, now: Date): Promise<void> {
  await sql`
      insert into source_sales (catalog_id, version, source, sales_window, median, mean, min, max, volume, source_time, ingested_at, run_id)
      select l.catalog_id, l.version, 'skinport', w.sales_window, round(l.price * 0.97, 2), round(l.price * 0.99, 2), round(l.price * 0.9, 2), round(l.price * 1.2, 2),
             w.factor * (1 + abs(hashtext(l.catalog_id)) % 20), ${now}, ${now}, 'bench'
      from latest_prices l cross join (values ('24h', 1), ('7d', 5), ('30d', 18), ('90d', 45)) w (sales_window, factor)
      where l.source = 'skinport'`;
  await sql`
      insert into source_sales (catalog_id, version, source, sales_window, median, volume, source_time, ingested_at, run_id)
      select l.catalog_id, l.version, 'steam', '24h', round(l.price * 1.02, 2), 1 + abs(hashtext(l.catalog_id || 's')) % 50, ${now}, ${now}, 'bench'
      from latest_prices l where l.source = 'steam' and l.version = 'default'`;
  await sql`
      insert into item_sales (catalog_id, version, sales_window, median, mean, min, max, volume, sources, updated_at)
      select catalog_id, version, sales_window, min(median), min(mean), min(min), max(max), sum(volume)::int, array_agg(source order by source), ${now}
      from source_sales group by catalog_id, version, sales_window`;
  await saveRateDays(
    sql,
    [
      {
        date: now.toISOString().slice(0, 10),
        rates: new Map([
          ['USD', '1.0834'],
          ['GBP', '0.84290'],
          ['PLN', '4.2875'],
        ]),
      },
    ],
    now,
  );
  await recordFxSuccess(sql, now, 0);
}
