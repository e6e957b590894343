import { Gauge, type Registry } from 'prom-client';
import { sourceRowsByName } from '../health/sources.ts';
import type { Queryable } from '../platform/db.ts';
import type { Logger } from '../platform/logger.ts';
import { bounded } from './bounded.ts';

/**
 * `cs2_ingest_lag_seconds{source}`: seconds since each enabled source's last successful ingest run,
 * read from Postgres when scraped. A source that has never succeeded reports +Inf, so an alert on
 * the lag fires for it too. The database unreachable: no series for that scrape, one warning line.
 */
export function registerIngestMetrics(registry: Registry, input: { sql: Queryable; sources: readonly string[]; now: () => Date; log: Logger }): void {
  new Gauge({
    name: 'cs2_ingest_lag_seconds',
    help: 'Seconds since the last successful ingest run of each enabled price source (+Inf: never succeeded), read from Postgres at scrape time',
    labelNames: ['source'] as const,
    registers: [registry],
    async collect() {
      this.reset();
      if (input.sources.length === 0) return;
      let rows: Awaited<ReturnType<typeof sourceRowsByName>>;
      try {
        rows = await bounded(sourceRowsByName(input.sql, input.sources));
      } catch (error) {
        input.log.warn({ err: (error as Error).message }, 'metrics: ingest lag unavailable (database unreachable?)');
        return;
      }
      const now = input.now().getTime();
      for (const source of input.sources) {
        const last = rows.get(source)?.last_success_at;
        this.set({ source }, last ? Math.max(0, (now - last.getTime()) / 1000) : Number.POSITIVE_INFINITY);
      }
    },
  });
  // docs/design.md §13: names an upstream sent that the catalog does not know, and rows it sent that could not
  // be read (bad price, wrong types), in each source's last successful run. Never fatal; watched here.
  const lastRun = (name: string, help: string, column: 'last_unknown_names' | 'last_rows_skipped') =>
    new Gauge({
      name,
      help,
      labelNames: ['source'] as const,
      registers: [registry],
      async collect() {
        this.reset();
        if (input.sources.length === 0) return;
        let rows: Awaited<ReturnType<typeof lastRunCounts>>;
        try {
          rows = await bounded(lastRunCounts(input.sql, input.sources));
        } catch (error) {
          input.log.warn({ err: (error as Error).message }, `metrics: ${name} unavailable (database unreachable?)`);
          return;
        }
        for (const row of rows) if (row[column] !== null) this.set({ source: row.name }, row[column]);
      },
    });
  lastRun('cs2_ingest_unknown_names', 'Upstream names the catalog does not know, in the last successful run of each enabled source', 'last_unknown_names');
  lastRun(
    'cs2_ingest_rows_skipped',
    'Upstream rows skipped as malformed (bad price, wrong types, unknown version), in the last successful run of each enabled source',
    'last_rows_skipped',
  );
}

async function lastRunCounts(db: Queryable, sources: readonly string[]) {
  return db<{ name: string; last_unknown_names: number | null; last_rows_skipped: number | null }[]>`
    select name, last_unknown_names, last_rows_skipped from price_sources where name in ${db(sources as string[])}`;
}
