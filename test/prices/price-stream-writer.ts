/**
 * An ingest process in miniature for test/prices/price-stream.test.ts: `bun test/prices/price-stream-writer.ts '<json>'`
 * writes runs of one source with writeIngestRun against DATABASE_URL, as the ingest pool does.
 *  - `{"mode":"die-after-commit", …}`: one run, committed without a relay, then SIGKILL: a process
 *    that died between its commit and its relay.
 *  - `{"mode":"runs", …}`: `runs` runs of one item, each relayed to REDIS_URL under QUEUE_PREFIX right
 *    after its commit, as fast as it can, alongside another such process.
 * Prints `{"streamIds":[…]}` (every entry its runs appended to the log) as one line before it ends.
 */
import { createSql } from '../../shared/platform/db.ts';
import { createLogger } from '../../shared/platform/logger.ts';
import { createWorkerRedis } from '../../shared/platform/redis.ts';
import { claimIngestRun, writeIngestRun } from '../../shared/prices/ingest.ts';
import { PriceStreamRelay, priceStreamKey } from '../../shared/prices/stream.ts';

type Input = { mode: 'die-after-commit' | 'runs'; source: string; catalogIds: string[]; slotBase: number; runs?: number; prices?: string[] };

const input = JSON.parse(process.argv[2]!) as Input;
const sql = createSql(process.env.DATABASE_URL!, { max: 2, application: 'price-stream-writer' });
const log = createLogger({ level: 'silent', name: 'price-stream-writer' });

async function writeRun(slot: number, price: string, relay?: PriceStreamRelay): Promise<string[]> {
  const at = new Date();
  const runId = (await claimIngestRun(sql, input.source, slot, at))!;
  const rows = input.catalogIds.map((catalogId) => ({ catalog_id: catalogId, version: 'default', price, median_price: null, quantity: 1, source_time: at }));
  const result = await writeIngestRun(sql, {
    runId,
    source: input.source,
    rows,
    ingestedAt: at,
    staleAfterSeconds: 600,
    received: rows.length,
    skipped: 0,
    unknownNames: 0,
    relay,
  });
  return result.streamIds;
}

if (input.mode === 'die-after-commit') {
  const streamIds = await writeRun(input.slotBase, input.prices?.[0] ?? '1.00');
  process.stdout.write(`${JSON.stringify({ streamIds })}\n`);
  // Killed before any relay could run: only the log holds the run's entries.
  process.kill(process.pid, 'SIGKILL');
} else {
  const redis = createWorkerRedis(process.env.REDIS_URL!, 'price-stream-writer');
  const relay = new PriceStreamRelay(sql, redis, priceStreamKey(process.env.QUEUE_PREFIX!), 1_000, log);
  const streamIds: string[] = [];
  for (let run = 0; run < (input.runs ?? 1); run += 1) {
    const prices = input.prices ?? ['1.00'];
    streamIds.push(...(await writeRun(input.slotBase + run, prices[run % prices.length]!, relay)));
  }
  process.stdout.write(`${JSON.stringify({ streamIds })}\n`);
  redis.disconnect();
  await sql.end({ timeout: 5 });
}
