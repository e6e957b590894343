/**
 * The market simulator as a process (`npm run simulator`; `npm start` runs it when SOURCES is unset):
 * the real catalog, on SIMULATOR_PORT (default 4010). Optional SIMULATOR_SEED (default 1).
 * Point the sources at it with SOURCE_SKINPORT_URL=<url>/skinport, SOURCE_STEAM_URL=<url>/steam,
 * SOURCE_CSFLOAT_URL=<url>/csfloat; switch modes with POST <url>/_control/<source|all>/<mode>.
 */
import { generateCatalog } from '../../shared/catalog/generate.ts';
import { createLogger } from '../../shared/logger.ts';
import { startMarketSimulator } from './market-simulator.ts';

const log = createLogger({ level: process.env.LOG_LEVEL || 'info', name: 'simulator' });

function integerEnv(name: string, fallback: number, max: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 0 || value > max) {
    process.stderr.write(`${name}: must be an integer from 0 to ${max}\n`);
    process.exit(1);
  }
  return value;
}

const port = integerEnv('SIMULATOR_PORT', 4010, 65535);
const seed = integerEnv('SIMULATOR_SEED', 1, 0xffffffff);
const started = performance.now();
const catalog = generateCatalog();
const simulator = startMarketSimulator({
  port,
  seed,
  // Catalog items carry every field the simulator reads.
  items: catalog,
});
log.info(
  {
    url: simulator.url,
    items: catalog.length,
    ms: Math.round(performance.now() - started),
    skinport: `${simulator.url}/skinport`,
    steam: `${simulator.url}/steam`,
    csfloat: `${simulator.url}/csfloat`,
    control: `POST ${simulator.url}/_control/<skinport|steam|csfloat|all>/<ok|fail|stall|rate_limit|malformed|partial>`,
  },
  `market simulator listening on ${simulator.url}`,
);

let stopping = false;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    if (stopping) return;
    stopping = true;
    void simulator.stop().then(() => process.exit(0));
  });
}
