/**
 * Part 1 of bench:gameplatform, in its own process so its memory is measured alone. Each round
 * fetches a 5 000-asset inventory from the fake (3 upstream pages; not timed), then times what the
 * service does with a fresh read: normalise + store (prepareInventorySnapshot: the catalog lookup,
 * certificate decoding, holds and protection, insights; insertInventorySnapshot: the snapshot rows
 * by COPY, in one transaction), the two timed apart, and then the valuation of every asset at
 * skinport (docs/design.md §14's rule: item, stickers and charms, one query; every catalog item is given a
 * skinport price first).
 *
 * Round 0 is a warm-up on another inventory (BENCH_WARMUP_STEAM_ID: other asset ids, certificates
 * and hold texts), the first normalisation in the process: it pays the JIT and the lookup tables
 * built on first use, and it is where the extra memory is measured (VmRSS before it, VmHWM after
 * it, the pages already fetched: the worst case). Its time is reported, not judged. Rounds 1…ROUNDS read BENCH_STEAM_ID, each a
 * fresh fetch stored as a new snapshot; the judged figure is their median. Prints one JSON line.
 * Started by bench/gameplatform.ts.
 */

import { insertInventorySnapshot, prepareInventorySnapshot } from '../shared/gameplatform/inventory/snapshots.ts';
import { fetchInventoryPages } from '../shared/gameplatform/inventory/steam-community.ts';
import { valuationInputOf, valueAssets } from '../shared/gameplatform/valuation.ts';
import { parseConfig } from '../shared/platform/config.ts';
import { createSql } from '../shared/platform/db.ts';
import { rssOf } from './lib.ts';

/** Judged rounds after the warm-up. */
const ROUNDS = 7;
const config = parseConfig(process.env);
const steamId = process.env.BENCH_STEAM_ID!;
const warmupSteamId = process.env.BENCH_WARMUP_STEAM_ID!;
if (!steamId || !warmupSteamId || steamId === warmupSteamId) throw new Error('BENCH_STEAM_ID and BENCH_WARMUP_STEAM_ID must name two inventories');

export type NormaliseRound = {
  steamId: string;
  fetchMs: number;
  /** prepareInventorySnapshot: catalog lookup + normalisation (holds, protection, certificates, insights). */
  prepareMs: number;
  /** insertInventorySnapshot in its transaction: the records as JSON, COPY, commit. */
  insertMs: number;
  /** prepareMs + insertMs: normalise + store, the judged figure. */
  storeMs: number;
  valueMs: number;
  assets: number;
  priced: number;
  held: number;
  protected: number;
  unreadable: number;
};

const sql = createSql(config.DATABASE_URL, { max: 2, application: 'bench-normalise' });

/** One round; `fetched` runs after the fetch, before anything is timed. */
async function round(owner: string, fetched?: () => Promise<void>): Promise<NormaliseRound> {
  let started = performance.now();
  const pages = await fetchInventoryPages({ config, now: () => new Date() }, owner);
  const fetchMs = performance.now() - started;
  if (pages.length !== 3) throw new Error(`expected 3 upstream pages, got ${pages.length}`);
  await fetched?.();
  started = performance.now();
  const prepared = await prepareInventorySnapshot(sql, owner, pages, new Date(), config);
  const prepareMs = performance.now() - started;
  started = performance.now();
  await sql.begin((tx) => insertInventorySnapshot(tx, prepared));
  const insertMs = performance.now() - started;
  const held = prepared.records.filter((record) => record.trade_hold_until !== null).length;
  const protectedCount = prepared.records.filter((record) => record.protection.protected).length;
  started = performance.now();
  const rows = await sql<{ catalog_id: string | null; record: unknown }[]>`
    select catalog_id, record from inventory_assets where snapshot_id = ${prepared.snapshot.id} order by position`;
  const values = await valueAssets(
    sql,
    'skinport',
    rows.map((row) => valuationInputOf(row.catalog_id, row.record)),
  );
  const valueMs = performance.now() - started;
  return {
    steamId: owner,
    fetchMs,
    prepareMs,
    insertMs,
    storeMs: prepareMs + insertMs,
    valueMs,
    assets: prepared.snapshot.total_assets,
    priced: values.filter((value) => value.price !== null).length,
    held,
    protected: protectedCount,
    unreadable: prepared.unreadableHolds,
  };
}

try {
  // A price for every catalog item at skinport, so the valuation finds what a real one would.
  await sql`
    insert into latest_prices (catalog_id, source, version, price, source_time, ingested_at, run_id)
    select catalog_id, 'skinport', 'default', round((1 + abs(hashtext(catalog_id)) % 100000 / 100.0)::numeric, 2), now(), now(), gen_random_uuid()
    from catalog_items
    on conflict do nothing`;
  let rssBefore = 0;
  // As before the warm-up existed: VmRSS with the fetched pages in memory, before normalising.
  const warmup = await round(warmupSteamId, async () => {
    rssBefore = (await rssOf(process.pid)).rss;
  });
  const peakAfterFirst = (await rssOf(process.pid)).peak;
  const rounds: NormaliseRound[] = [];
  for (let index = 0; index < ROUNDS; index += 1) rounds.push(await round(steamId));
  process.stdout.write(`${JSON.stringify({ warmup, rounds, rssBefore, peakAfterFirst })}\n`);
} finally {
  await sql.end({ timeout: 5 });
}
