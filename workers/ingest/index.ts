import { Counter } from 'prom-client';
import { FxUnavailableError } from '../../shared/fx/ecb.ts';
import { fxRetryDelayMs, refreshFxRates } from '../../shared/fx/refresh.ts';
import { refreshSteamImpliedRates } from '../../shared/fx/steam-implied.ts';
import { snapshotJob } from '../../shared/prices/snapshot.ts';
import { PriceStreamRelay, priceStreamKey } from '../../shared/prices/stream.ts';
import { ADAPTERS } from '../../shared/sources/index.ts';
import { enabledSources, isKnownSource, snapshotIntervalSeconds, sourceSettings } from '../../shared/sources/settings.ts';
import { nudgeOnNotify } from '../nudge.ts';
import { handle, type PoolDefinition } from '../pool.ts';
import { runSourceIngest } from './run.ts';
import { runSkinportSales, skinportSalesIntervalSeconds } from './sales.ts';

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
 * on the ingest queue (docs/design.md §9), and so is the fx source (docs/design.md §14), which is always on and also runs once at start-up (its scheduler, surviving a
 * restart, would otherwise leave a new deployment without rates for up to 6 h).
 */
export const ingestPool: PoolDefinition = {
  pool: 'ingest',
  concurrency: 3,
  startupJobs: [
    { id: 'ingest-fx-startup', job: 'fx.refresh' },
    // docs/design.md §19: Steam-implied rates at start-up too (with steam disabled: every such currency marked not offered).
    { id: 'ingest-fx-steam-startup', job: 'fx.steam_implied' },
  ],
  metrics: [streamRelayFailures],
  schedules: (config) => [
    // docs/design.md §14/§19: the ECB publishes once a working day; four reads a day (the default) see each file within hours.
    { id: 'ingest-fx', job: 'fx.refresh' as const, everyMs: config.SOURCE_FX_INTERVAL_SECONDS * 1000 },
    { id: 'ingest-stream-relay', job: 'prices.stream_relay' as const, everyMs: STREAM_RELAY_INTERVAL_MS },
    // docs/design.md §19: Steam-implied rates on the fx interval, through the steam source (so only while it is enabled).
    ...(enabledSources(config).includes('steam')
      ? [{ id: 'ingest-fx-steam', job: 'fx.steam_implied' as const, everyMs: config.SOURCE_FX_INTERVAL_SECONDS * 1000 }]
      : []),
    // docs/design.md §19: skinport's sales history, hourly (its own schedule, skinport's request budget).
    ...(enabledSources(config).includes('skinport')
      ? [{ id: 'ingest-skinport-sales', job: 'sales.skinport' as const, everyMs: skinportSalesIntervalSeconds(config) * 1000 }]
      : []),
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
    const relay = new PriceStreamRelay(sql, redis, priceStreamKey(config.QUEUE_PREFIX), config.PRICE_STREAM_RETAIN, log, {
      onFailure: () => streamRelayFailures.inc(),
    });
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
      handle('sales.skinport', async (_payload, { scheduledAt }) => {
        if (!enabledSources(config).includes('skinport')) return { status: 'disabled' };
        return runSkinportSales({ sql, redis, config, log, now, requestSnapshot }, scheduledAt);
      }),
      handle('prices.stream_relay', async () => {
        listen();
        // Failing the job is no retry (the next nudge or tick is): the relay's failure is counted and logged.
        return { appended: await relay.relaySafely() };
      }),
      handle('fx.steam_implied', async () => {
        const outcome = await refreshSteamImpliedRates({ sql, redis, config, log, now });
        if (outcome.status === 'failed') {
          // The currencies read are stored; the rest keep their last outcome. Retried after the
          // Retry-After of a 429, else as the ECB fetch is: 60 s doubling up to the interval.
          const delay = Math.max(outcome.retryAfterMs ?? 0, fxRetryDelayMs(outcome.consecutiveFailures, config.SOURCE_FX_INTERVAL_SECONDS * 1000));
          await enqueue('fx.steam_implied', {}, { jobId: `fx-steam-retry-${outcome.consecutiveFailures}`, delay });
          throw new Error(`Steam-implied rates: ${outcome.error} (retry in ${Math.round(delay / 1000)} s)`);
        }
        return outcome;
      }),
      handle('fx.refresh', async () => {
        const outcome = await refreshFxRates({ sql, config, log, now });
        if (outcome.status === 'failed') {
          // Recorded already (the last good rates stay in use). docs/design.md §19: retried after 60 s, the wait
          // doubling with each failure in a row up to the interval, until a fetch succeeds; one retry job
          // per failure count, so a retry and the schedule failing together add one, not two.
          const delay = fxRetryDelayMs(outcome.consecutiveFailures, config.SOURCE_FX_INTERVAL_SECONDS * 1000);
          await enqueue('fx.refresh', {}, { jobId: `fx-retry-${outcome.consecutiveFailures}`, delay });
          log.info({ source: 'fx', retry_in_ms: delay, consecutive_failures: outcome.consecutiveFailures }, 'fx refresh retry scheduled');
          throw new FxUnavailableError(outcome.error.replace(/^fx: /, ''));
        }
        return outcome;
      }),
    ];
  },
};
