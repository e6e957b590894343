import { collectProcessMetrics } from '../shared/metrics/registry.ts';
import { loadConfigOrExit } from '../shared/platform/config.ts';
import { createLogger } from '../shared/platform/logger.ts';
import { createApp } from './app.ts';
import { createDeps } from './deps.ts';

const config = loadConfigOrExit();
const log = createLogger({ level: config.LOG_LEVEL, name: 'api', format: config.LOG_FORMAT });
const deps = createDeps(config, { log });
collectProcessMetrics(deps.metrics.registry);
if (config.NODE_ENV === 'production' && !config.METRICS_TOKEN)
  log.info('GET /metrics is open to anyone who reaches this port: set METRICS_TOKEN to require a bearer token');
// Serve once Redis is connected, so the first metered calls are not 503s; public routes work either way.
if (!(await deps.ready(5_000))) log.warn('Redis is not reachable yet: metered endpoints answer 503 until it is');
const app = createApp(deps).listen({ port: config.PORT, hostname: '0.0.0.0' });
const base = config.PUBLIC_BASE_URL ?? `http://localhost:${app.server?.port}`;
log.info({ port: app.server?.port }, `API listening: ${base}  docs: ${base}/docs`);

let stopping = false;
async function shutdown(signal: string) {
  if (stopping) return;
  stopping = true;
  log.info({ signal }, 'shutting down');
  const force = setTimeout(() => process.exit(1), 10_000);
  // Price streams never end by themselves, and a graceful stop waits for open responses: end them
  // first (their clients reconnect, to another process, and resume from their last event id).
  await deps.priceStream.close();
  await app.stop();
  await deps.close();
  clearTimeout(force);
  process.exit(0);
}
process.on('SIGTERM', () => void shutdown('SIGTERM'));
process.on('SIGINT', () => void shutdown('SIGINT'));
