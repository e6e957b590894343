// Usage: bun workers/main.ts <pool> [<pool> …]   (Procfile entries run one pool each)

import { POOLS, type Pool } from '../shared/jobs/queues.ts';
import { collectProcessMetrics } from '../shared/metrics/registry.ts';
import { loadConfigOrExit } from '../shared/platform/config.ts';
import { createLogger } from '../shared/platform/logger.ts';
import { type MetricsServer, startMetricsServer, workerMetricsPort } from './metrics-server.ts';
import { loadPools } from './pools.ts';
import { startPools } from './runtime.ts';

const config = loadConfigOrExit();
const names = process.argv.slice(2);
const log = createLogger({ level: config.LOG_LEVEL, name: `workers:${names.join(',') || 'none'}`, format: config.LOG_FORMAT });
const unknown = names.filter((name) => !(POOLS as readonly string[]).includes(name));
if (names.length === 0 || unknown.length > 0) {
  log.fatal({ unknown, known: POOLS }, 'usage: bun workers/main.ts <pool…>');
  process.exit(2);
}

const running = await startPools(await loadPools(names as Pool[]), config, log);
collectProcessMetrics(running.metrics);
let metricsServer: MetricsServer;
try {
  metricsServer = startMetricsServer({
    registry: running.metrics,
    port: workerMetricsPort(config, names as Pool[]),
    hostname: config.WORKER_METRICS_HOST,
    token: config.METRICS_TOKEN,
    log,
  });
} catch (error) {
  // Not a busy port (that falls back to a free one): a port this process may not use, say.
  log.fatal({ err: error }, 'cannot serve metrics; check WORKER_METRICS_PORT');
  await running.stop(10_000);
  process.exit(1);
}
let stopping = false;
async function shutdown(signal: string) {
  if (stopping) return;
  stopping = true;
  log.info({ signal }, 'stopping pools');
  await metricsServer.stop();
  await running.stop(10_000);
  log.info('stopped');
  process.exit(0);
}
process.on('SIGTERM', () => void shutdown('SIGTERM'));
process.on('SIGINT', () => void shutdown('SIGINT'));
