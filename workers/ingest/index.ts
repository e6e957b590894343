import { Counter } from 'prom-client';
import { FxUnavailableError } from '../../shared/fx/ecb.ts';
import { refreshFxRates } from '../../shared/fx/refresh.ts';
import { snapshotJob } from '../../shared/prices/snapshot.ts';
import { priceStreamKey, PriceStreamPublisher } from '../../shared/prices/stream.ts';
import { ADAPTERS } from '../../shared/sources/index.ts';
import { enabledSources, isKnownSource, snapshotIntervalSeconds, sourceSettings } from '../../shared/sources/settings.ts';
import { handle, type PoolDefinition } from '../pool.ts';
import { runSourceIngest } from './run.ts';

/** DESIGN 14: the ECB publishes once a working day; four reads a day see each file within hours. */
const FX_INTERVAL_MS = 6 * 60 * 60_000;

/** Runs whose changes could not be appended to the price stream (the runs themselves stayed committed). */
const streamPublishFailures = new Counter({
  name: 'cs2_price_stream_publish_failures_total',
  help: 'Committed ingest runs whose changes could not be appended to the price stream (Redis unavailable)',
  registers: [],
});

/**
 * Each enabled source (SOURCES less any missing its required key: enabledSources) is a job scheduler
 * on the ingest queue (DESIGN 9), and so is the fx source (DESIGN 14), which is always on and also runs once at start-up (its scheduler, surviving a
 * restart, would otherwise leave a new deployment without rates for up to 6 h).
 */
export const ingestPool: PoolDefinition = {
  pool: 'ingest',
  concurrency: 3,
  startupJobs: [{ id: 'ingest-fx-startup', job: 'fx.refresh' }],
  metrics: [streamPublishFailures],
  schedules: (config) => [
    { id: 'ingest-fx', job: 'fx.refresh' as const, everyMs: FX_INTERVAL_MS },
    ...enabledSources(config).map((name) => {
      if (!isKnownSource(name)) throw new Error(`SOURCES names ${name}, which has no adapter (known: ${Object.keys(ADAPTERS).join(', ')})`);
      return {
        id: `ingest-${name}`,
        job: 'ingest.source' as const,
        everyMs: sourceSettings(config, ADAPTERS[name]).intervalSeconds * 1000,
        data: { source: name },
      };
    }),
  ],
  handlers: ({ config, sql, redis, log, now, enqueue }) => {
    const snapshotIntervalMs = snapshotIntervalSeconds(config) * 1000;
    // Every run that changed a price asks for the keyless snapshot; runs ending in one interval share
    // one build at its end, so the list is rebuilt at most once per interval whatever the sources do.
    const requestSnapshot = (runId: string) => enqueue('prices.snapshot', { after_run: runId }, snapshotJob(now(), snapshotIntervalMs));
    const stream = new PriceStreamPublisher(redis, priceStreamKey(config.QUEUE_PREFIX), config.PRICE_STREAM_RETAIN, log, () => streamPublishFailures.inc());
    return [
      handle('ingest.source', async ({ source }, { scheduledAt }) => {
        if (!enabledSources(config).includes(source)) {
          log.warn({ source }, 'source is not enabled; skipping');
          return { status: 'disabled' };
        }
        const requestIndex = (runId: string) => enqueue('market_index.calculate', { marketplace: source, after_run: runId }, { jobId: `index-${runId}` });
        return runSourceIngest({ sql, redis, config, log, now, requestSnapshot, requestIndex, stream }, ADAPTERS[source], scheduledAt);
      }),
      handle('fx.refresh', async () => {
        const outcome = await refreshFxRates({ sql, config, log, now });
        // Recorded already; failing the job lets BullMQ retry it within minutes (shared/jobs/queues.ts).
        if (outcome.status === 'failed') throw new FxUnavailableError(outcome.error.replace(/^fx: /, ''));
        return outcome;
      }),
    ];
  },
};
