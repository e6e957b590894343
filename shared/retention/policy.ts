import type { Config } from '../platform/config.ts';
import type { Granularity } from '../prices/repository.ts';

/**
 * How long each kind of time-partitioned data is kept (issue 13, docs/design.md §12), in days, from config.
 * docs/operations.md "Retention" lists the defaults and what they cost at the simulator's pace.
 */
export type RetentionPolicy = {
  /** price_observations: the raw archive of every stored observation (nothing reads it back). */
  observations: number;
  /** event_outbox, price_event_pages and price_stream: an event and its pages, delivered or not (webhook retries end within ~28 h), and the price stream's log. */
  outbox: number;
  /** ingest_runs: one row per source and schedule slot. */
  ingestRuns: number;
  /** market_index_prices: the price vectors that reproduce a calculation (its constituents). */
  indexVectors: number;
  /** price_rollups per granularity: the history horizons. */
  rollups: Record<Granularity, number>;
};

export function retentionPolicy(config: Config): RetentionPolicy {
  return {
    observations: config.RETENTION_OBSERVATIONS_DAYS,
    outbox: config.RETENTION_OUTBOX_DAYS,
    ingestRuns: config.RETENTION_INGEST_RUNS_DAYS,
    indexVectors: config.RETENTION_INDEX_VECTORS_DAYS,
    rollups: { '10m': config.RETENTION_ROLLUPS_10M_DAYS, hourly: config.RETENTION_ROLLUPS_HOURLY_DAYS, daily: config.RETENTION_ROLLUPS_DAILY_DAYS },
  };
}
