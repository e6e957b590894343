/**
 * Delivery benchmark: `npm run bench:delivery`. Runs, one after the other in this process:
 *  - bench/delivery-exports.ts: an audit export of 1 000 000 generated events by a real exports
 *    worker process (targets: under 30 s, worker peak RSS under 200 MB);
 *  - bench/delivery-webhooks.ts: webhook delivery throughput to a local receiver (target ≥ 2 000
 *    deliveries/s) and price.updated latency from ingest commit to receipt (p99 under 2 s);
 *  - bench/delivery-fanout.ts: deliveries and rows written per ingest run (full snapshot and steady)
 *    for 20 endpoints on price.updated against 20 on prices.updated.
 * Each part also runs alone (`bun scripts/dev.ts exec bun bench/delivery-<part>.ts`).
 */
import { benchExports } from './delivery-exports.ts';
import { benchFanout } from './delivery-fanout.ts';
import { benchWebhooks } from './delivery-webhooks.ts';
import { printChecks, runBench } from './lib.ts';

await runBench(async () => {
  const checks = [...(await benchExports()), ...(await benchWebhooks()), ...(await benchFanout())];
  process.stdout.write('\n');
  printChecks(checks);
});
