// Procfile `release:` step: apply pending migrations and exit.
import { join } from 'node:path';
import { loadConfigOrExit } from '../shared/platform/config.ts';
import { createSql } from '../shared/platform/db.ts';
import { createLogger } from '../shared/platform/logger.ts';
import { migrate } from '../shared/platform/migrate.ts';

const config = loadConfigOrExit();
const log = createLogger({ level: config.LOG_LEVEL, name: 'migrate', format: config.LOG_FORMAT });
const sql = createSql(config.DATABASE_URL, { max: 1, application: 'migrate' });
try {
  const applied = await migrate(sql, join(import.meta.dir, '..', 'sql'), (message) => log.info(message));
  log.info({ applied: applied.length }, applied.length ? 'migrations applied' : 'database is up to date');
} catch (error) {
  log.error({ err: error }, 'migration failed');
  process.exitCode = 1;
} finally {
  await sql.end({ timeout: 5 });
}
