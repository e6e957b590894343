// `npm run catalog:sync`: load the catalog generated from @ianlucas/cs2-lib into catalog_items.
// Idempotent: a second run reports every item unchanged and writes nothing.

import { generateCatalog } from '../shared/catalog/generate.ts';
import { syncCatalog } from '../shared/catalog/repository.ts';
import { loadConfigOrExit } from '../shared/platform/config.ts';
import { createSql } from '../shared/platform/db.ts';
import { createLogger } from '../shared/platform/logger.ts';

const config = loadConfigOrExit();
const log = createLogger({ level: config.LOG_LEVEL, name: 'catalog-sync', format: config.LOG_FORMAT });
const sql = createSql(config.DATABASE_URL, { max: 1, application: 'catalog-sync' });
try {
  const started = performance.now();
  const items = generateCatalog();
  const generatedMs = Math.round(performance.now() - started);
  const byType = new Map<string, number>();
  for (const item of items) byType.set(item.type, (byType.get(item.type) ?? 0) + 1);
  // A `type=count` string, not an object: the logger redacts any field named `key`.
  const perType = [...byType].map(([type, count]) => `${type}=${count}`).join(' ');
  const counts = await syncCatalog(sql, items);
  log.info({ ...counts, by_type: perType, generate_ms: generatedMs, total_ms: Math.round(performance.now() - started) }, 'catalog synced');
} catch (error) {
  log.error({ err: error }, 'catalog sync failed');
  process.exitCode = 1;
} finally {
  await sql.end({ timeout: 5 });
}
