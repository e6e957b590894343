import { Gauge, type Registry } from 'prom-client';
import type { Queryable } from '../db.ts';
import { sourceRowsByName } from '../health/sources.ts';
import type { Logger } from '../logger.ts';
import { bounded } from './bounded.ts';

/**
 * `cs2_ingest_lag_seconds{source}`: seconds since each enabled source's last successful ingest run,
 * read from Postgres when scraped. A source that has never succeeded reports +Inf, so an alert on
 * the lag fires for it too. The database unreachable: no series for that scrape, one warning line.
 */
export function registerIngestLag(registry: Registry, input: { sql: Queryable; sources: readonly string[]; now: () => Date; log: Logger }): void {
  new Gauge({
    name: 'cs2_ingest_lag_seconds',
    help: 'Seconds since the last successful ingest run of each enabled price source (+Inf: never succeeded), read from Postgres at scrape time',
    labelNames: ['source'] as const,
    registers: [registry],
    async collect() {
      this.reset();
      if (input.sources.length === 0) return;
      let rows;
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
}
