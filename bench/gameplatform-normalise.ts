/**
 * Part 1 of bench:gameplatform, in its own process so its memory is measured alone: fetches the
 * fake.s 5 000-asset inventory (3 upstream pages; not timed), then times normalise + store
 * (catalog lookup, certificate decoding, insights, snapshot rows by COPY) and then the valuation of
 * every asset at skinport (DESIGN 14's rule: item, stickers and charms, one query; every catalog item
 * is given a skinport price first) per round, and reports VmRSS before the first round and VmHWM
 * (peak) after it. Prints one JSON line. Started by bench/gameplatform.ts.
 */
import { parseConfig } from '../shared/platform/config.ts';
import { createSql } from '../shared/platform/db.ts';
import { insertInventorySnapshot, prepareInventorySnapshot } from '../shared/gameplatform/inventory/snapshots.ts';
import { fetchInventoryPages } from '../shared/gameplatform/inventory/steam-community.ts';
import { valuationInputOf, valueAssets } from '../shared/gameplatform/valuation.ts';
import { rssOf } from './lib.ts';

const ROUNDS = 5;
const config = parseConfig(process.env);
const steamId = process.env.BENCH_STEAM_ID!;
const sql = createSql(config.DATABASE_URL, { max: 2, application: 'bench-normalise' });
try {
  // A price for every catalog item at skinport, so the valuation finds what a real one would.
  await sql`
    insert into latest_prices (catalog_id, source, version, price, source_time, ingested_at, run_id)
    select catalog_id, 'skinport', 'default', round((1 + abs(hashtext(catalog_id)) % 100000 / 100.0)::numeric, 2), now(), now(), gen_random_uuid()
    from catalog_items
    on conflict do nothing`;
  const rounds: { fetchMs: number; storeMs: number; valueMs: number; assets: number; priced: number; held: number; protected: number; unreadable: number }[] = [];
  let rssBefore = 0;
  let peakAfterFirst = 0;
  for (let round = 0; round < ROUNDS; round += 1) {
    let started = performance.now();
    const pages = await fetchInventoryPages({ config, now: () => new Date() }, steamId);
    const fetchMs = performance.now() - started;
    if (round === 0) rssBefore = (await rssOf(process.pid)).rss;
    started = performance.now();
    const prepared = await prepareInventorySnapshot(sql, steamId, pages, new Date());
    await sql.begin((tx) => insertInventorySnapshot(tx, prepared));
    const snapshot = prepared.snapshot;
    const storeMs = performance.now() - started;
    const held = prepared.records.filter((record) => record.trade_hold_until !== null).length;
    const protectedCount = prepared.records.filter((record) => record.protection.protected).length;
    started = performance.now();
    const rows = await sql<{ catalog_id: string | null; record: unknown }[]>`
      select catalog_id, record from inventory_assets where snapshot_id = ${snapshot.id} order by position`;
    const values = await valueAssets(sql, 'skinport', rows.map((row) => valuationInputOf(row.catalog_id, row.record)));
    const valueMs = performance.now() - started;
    if (round === 0) peakAfterFirst = (await rssOf(process.pid)).peak;
    rounds.push({ fetchMs, storeMs, valueMs, assets: snapshot.total_assets, priced: values.filter((value) => value.price !== null).length, held, protected: protectedCount, unreadable: prepared.unreadableHolds });
    if (pages.length !== 3) throw new Error(`expected 3 upstream pages, got ${pages.length}`);
  }
  process.stdout.write(`${JSON.stringify({ rounds, rssBefore, peakAfterFirst })}\n`);
} finally {
  await sql.end({ timeout: 5 });
}
