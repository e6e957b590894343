import { Gauge, type Registry } from 'prom-client';
import { provisionalCounts } from '../catalog/provisional.ts';
import type { Queryable } from '../platform/db.ts';
import type { Logger } from '../platform/logger.ts';
import { bounded } from './bounded.ts';

/**
 * docs/design.md §19: `cs2_catalog_provisional_items` (items added from market names before the library knew
 * them) and `cs2_catalog_unparsed_names` (names seen on two sources, or on Steam, that do not parse
 * into one item and so are not priced), read from Postgres when scraped. The database unreachable:
 * no series for that scrape, one warning line.
 */
export function registerCatalogMetrics(registry: Registry, input: { sql: Queryable; log: Logger }): void {
  const gauge = (name: string, help: string, field: 'provisional' | 'unparsed') =>
    new Gauge({
      name,
      help,
      registers: [registry],
      async collect() {
        this.reset();
        try {
          this.set((await bounded(provisionalCounts(input.sql)))[field]);
        } catch (error) {
          input.log.warn({ err: (error as Error).message }, `metrics: ${name} unavailable (database unreachable?)`);
        }
      },
    });
  gauge(
    'cs2_catalog_provisional_items',
    'Catalog items added from market names before @ianlucas/cs2-lib knew them (provisional), read from Postgres at scrape time',
    'provisional',
  );
  gauge(
    'cs2_catalog_unparsed_names',
    'Market names seen on two sources (or on Steam) that the catalog lacks and that do not parse into one item, so they are not priced; read from Postgres at scrape time',
    'unparsed',
  );
}
