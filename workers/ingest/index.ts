import { Counter } from 'prom-client';
import { FxUnavailableError } from '../../shared/fx/ecb.ts';
import { refreshFxRates } from '../../shared/fx/refresh.ts';
import { snapshotJob } from '../../shared/prices/snapshot.ts';
import { priceStreamKey, PriceStreamRelay } from '../../shared/prices/stream.ts';
import { ADAPTERS } from '../../shared/sources/index.ts';
import { enabledSources, isKnownSource, snapshotIntervalSeconds, sourceSettings } from '../../shared/sources/settings.ts';
import { nudgeOnNotify } from '../nudge.ts';
import { handle, type PoolDefinition } from '../pool.ts';
import { runSourceIngest } from './run.ts';

/** DESIGN 14: the ECB publishes once a working day; four reads a day see each file within hours. */
const FX_INTERVAL_MS = 6 * 60 * 60_000;

/** Relay passes that could not copy the price stream's log to Redis (its entries wait in the log for the next pass). */
const streamRelayFailures = new Counter({
  name: 'cs2_price_stream_relay_failures_total',
  help: "Relay passes that could not copy the price stream's log to Redis (Redis unavailable); nothing is lost, the next pass appends it",
  registers: [],
});
/** The backstop of the relay: a run relays its own entries after commit, NOTIFY wakes the job for the rest. */
const STREAM_RELAY_INTERVAL_MS = 5_000;

/**
 * Each enabled source (SOURCES less any missing its required key: enabledSources) is a job scheduler
 * on the ingest queue (DESIGN 9), and so is the fx source (DESIGN 14), which is always on and also runs once at start-up (its scheduler, surviving a
 * restart, would otherwise leave a new deployment without rates for up to 6 h).
 */
export const ingestPool: PoolDefinition = {
  pool: 'ingest',
  concurrency: 3,
  startupJobs: [{ id: 'ingest-fx-startup', job: 'fx.refresh' }],
  metrics: [streamRelayFailures],
  schedules: (config) => [
    { id: 'ingest-fx', job: 'fx.refresh' as const, everyMs: FX_INTERVAL_MS },
    { id: 'ingest-stream-relay', job: 'prices.stream_relay' as const, everyMs: STREAM_RELAY_INTERVAL_MS },
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
  handlers: (context) => {
    const { config, sql, redis, log, now, enqueue } = context;
    const snapshotIntervalMs = snapshotIntervalSeconds(config) * 1000;
    // Every run that changed a price asks for the keyless snapshot; runs ending in one interval share
    // one build at its end, so the list is rebuilt at most once per interval whatever the sources do.
    const requestSnapshot = (runId: string) => enqueue('prices.snapshot', { after_run: runId }, snapshotJob(now(), snapshotIntervalMs));
    const relay = new PriceStreamRelay(sql, redis, priceStreamKey(config.QUEUE_PREFIX), config.PRICE_STREAM_RETAIN, log, { onFailure: () => streamRelayFailures.inc() });
    // The log's trigger (sql/0019) notifies on every insert: a run whose process died before its own relay is relayed by another.
    const listen = nudgeOnNotify(context, log, { channel: 'price_stream', job: 'prices.stream_relay', jobId: 'stream-relay-nudge' });
    return [
      handle('ingest.source', async ({ source }, { scheduledAt }) => {
        if (!enabledSources(config).includes(source)) {
          log.warn({ source }, 'source is not enabled; skipping');
          return { status: 'disabled' };
        }
        const requestIndex = (runId: string) => enqueue('market_index.calculate', { marketplace: source, after_run: runId }, { jobId: `index-${runId}` });
        listen();
        return runSourceIngest({ sql, redis, config, log, now, requestSnapshot, requestIndex, relay }, ADAPTERS[source], scheduledAt);
      }),
      handle('prices.stream_relay', async () => {
        listen();
        // Failing the job is no retry (the next nudge or tick is): the relay's failure is counted and logged.
        return { appended: await relay.relaySafely() };
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
