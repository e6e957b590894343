/**
 * Part 1 of bench:gameplatform, in its own process so its memory is measured alone: fetches the
 * fake's 5 000-asset inventory (3 upstream pages; not timed), then times normalise + store
 * (catalog lookup, certificate decoding, snapshot rows by COPY) per round, and reports VmRSS before
 * the first round and VmHWM (peak) after it. Prints one JSON line. Started by bench/gameplatform.ts.
 */
import { parseConfig } from '../shared/config.ts';
import { createSql } from '../shared/db.ts';
import { fetchInventoryPages, storeInventorySnapshot } from '../shared/gameplatform/inventories.ts';
import { rssOf } from './lib.ts';

const ROUNDS = 5;
const config = parseConfig(process.env);
const steamId = process.env.BENCH_STEAM_ID!;
const sql = createSql(config.DATABASE_URL, { max: 2, application: 'bench-normalise' });
try {
  const rounds: { fetchMs: number; storeMs: number; assets: number }[] = [];
  let rssBefore = 0;
  let peakAfterFirst = 0;
  for (let round = 0; round < ROUNDS; round += 1) {
    let started = performance.now();
    const pages = await fetchInventoryPages({ config, now: () => new Date() }, steamId);
    const fetchMs = performance.now() - started;
    if (round === 0) rssBefore = (await rssOf(process.pid)).rss;
    started = performance.now();
    const snapshot = await storeInventorySnapshot(sql, steamId, pages, new Date());
    const storeMs = performance.now() - started;
    if (round === 0) peakAfterFirst = (await rssOf(process.pid)).peak;
    rounds.push({ fetchMs, storeMs, assets: snapshot.total_assets });
    if (pages.length !== 3) throw new Error(`expected 3 upstream pages, got ${pages.length}`);
  }
  process.stdout.write(`${JSON.stringify({ rounds, rssBefore, peakAfterFirst })}\n`);
} finally {
  await sql.end({ timeout: 5 });
}
