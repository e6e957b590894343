import { Queue } from 'bullmq';
import { InventoryReader } from '../shared/gameplatform/inventory-cache.ts';
import { ApiKeyCache } from '../shared/identity/key-cache.ts';
import { subscribeToKeyInvalidations } from '../shared/identity/key-invalidation.ts';
import { POOLS, type Pool, queueName } from '../shared/jobs/queues.ts';
import { MarketSummaryReader } from '../shared/market/summary.ts';
import { registerCatalogMetrics } from '../shared/metrics/catalog.ts';
import { type HttpRequestMetrics, httpRequestMetrics } from '../shared/metrics/http.ts';
import { registerIngestMetrics } from '../shared/metrics/ingest.ts';
import { registerPriceStreamMetrics } from '../shared/metrics/price-stream.ts';
import { registerQueueDepth } from '../shared/metrics/queues.ts';
import { Registry } from '../shared/metrics/registry.ts';
import type { Config } from '../shared/platform/config.ts';
import { createSql, type Sql } from '../shared/platform/db.ts';
import { createLogger, type Logger } from '../shared/platform/logger.ts';
import { createRequestRedis, type Redis } from '../shared/platform/redis.ts';
import { CounterRedis } from '../shared/platform/redis-counters.ts';
import { ItemPriceReader } from '../shared/prices/current.ts';
import { HistoryPageReader } from '../shared/prices/history.ts';
import { PriceRunWatch } from '../shared/prices/run-watch.ts';
import { PriceSnapshotCache } from '../shared/prices/snapshot-cache.ts';
import { subscribeToPriceSnapshots } from '../shared/prices/snapshot-subscription.ts';
import { priceStreamKey } from '../shared/prices/stream.ts';
import { PriceStreamHub, type PriceStreamHubOptions } from '../shared/prices/stream-hub.ts';
import { PriceDemand } from '../shared/sources/demand.ts';
import { enabledSources } from '../shared/sources/settings.ts';
import { UsageMeter } from '../shared/usage/metering.ts';

/** A bulk value's GET or SET (10-20 MB) on a loaded machine can take seconds. */
const BULK_REDIS_TIMEOUT_MS = 30_000;

/** Process plumbing most routes use. */
type CoreDeps = {
  config: Config;
  sql: Sql;
  redis: Redis;
  /** For values of megabytes (the drop-in formats' documents): no 1 s command limit; connects at its first command. */
  bulkRedis: Redis;
  log: Logger;
  now: () => Date;
  startedAt: Date;
};

/**
 * Price data held in memory, dropped or reloaded on each new snapshot (shared/prices/snapshot-subscription.ts).
 * Each cached read is a reader built here: it loads through to Postgres on a miss, and with
 * PRICE_CACHE_MS 0 it keeps nothing, so routes call it the same way either way.
 */
type PriceDeps = {
  /** The keyless price list of this process, held in memory (shared/prices/snapshot-cache.ts). */
  priceSnapshots: PriceSnapshotCache;
  /** Which ingest runs this process has seen (PRICE_CACHE_MS bounds how late); null when PRICE_CACHE_MS is 0. */
  priceRuns: PriceRunWatch | null;
  /** GET /v2/prices/{id}: items' stored prices, kept until the next ingest run. */
  itemPrices: ItemPriceReader;
  /** GET /v2/prices/{id}/history pages, kept until the next ingest run (at most a minute). */
  historyPages: HistoryPageReader;
  /** GET /v2/market/summary bodies per query, kept PRICE_CACHE_MS (dropped on each new price snapshot). */
  marketSummaries: MarketSummaryReader;
  /** GET /v2/inventories: latest snapshots, pinned snapshots and rendered pages, kept PRICE_CACHE_MS (valued pages dropped on each new price snapshot). */
  inventories: InventoryReader;
  /** The price stream's reader and fan-out of this process (docs/design.md §15), started at its first connection. */
  priceStream: PriceStreamHub;
  /** Which items people ask about (keyed price reads, inventories): steam's priceoverview reads them first (docs/design.md §19). */
  priceDemand: PriceDemand;
};

/** Key lookups cached per process, cleared on revocation (shared/identity/key-invalidation.ts). */
type IdentityDeps = { keys: ApiKeyCache };

type UsageDeps = {
  meter: UsageMeter;
  /** One-command-per-request counters (usage metering, the keyless per-address limit), on Bun's own Redis client. */
  counters: CounterRedis;
};

type QueueDeps = { queues: Record<Pool, Queue> };

/**
 * What GET /metrics serves (docs/design.md §12): HTTP latency by route, and, read at scrape time, every
 * pool's queue depth and every enabled source's ingest lag: gauges of shared state, reported by the
 * API too so they stay visible when a pool has no live worker. api/main.ts adds the process metrics.
 */
type MetricsDeps = { metrics: { registry: Registry; http: HttpRequestMetrics } };

/**
 * Everything a route needs, built once per process (or per test) and passed in: no globals.
 * Flat, so each route group and plugin declares the part it uses as `Pick<AppDeps, ...>`.
 */
export type AppDeps = CoreDeps &
  PriceDeps &
  IdentityDeps &
  UsageDeps &
  QueueDeps &
  MetricsDeps & {
    /** Resolves once Redis is connected, or after `timeoutMs` (metered calls answer 503 until then). */
    ready: (timeoutMs?: number) => Promise<boolean>;
    close: () => Promise<void>;
  };

/** Test knobs of the price stream: a heartbeat shorter than 15 s, a smaller slow-client limit. */
export type PriceStreamOverrides = Partial<Pick<PriceStreamHubOptions, 'heartbeatMs' | 'maxBufferedBytes' | 'blockMs'>>;

export function createDeps(config: Config, overrides: { now?: () => Date; log?: Logger; priceStream?: PriceStreamOverrides } = {}): AppDeps {
  const log = overrides.log ?? createLogger({ level: config.LOG_LEVEL, name: 'api', format: config.LOG_FORMAT });
  const now = overrides.now ?? (() => new Date());
  const sql = createSql(config.DATABASE_URL, { max: 10, application: 'api' });
  const redis = createRequestRedis(config.REDIS_URL, 'api');
  redis.on('error', (error) => log.warn({ err: error.message }, 'redis connection error'));
  const counters = new CounterRedis(config.REDIS_URL);
  const keys = new ApiKeyCache(sql);
  const priceSnapshots = new PriceSnapshotCache(sql, log);
  const priceRuns = config.PRICE_CACHE_MS > 0 ? new PriceRunWatch(sql, log, config.PRICE_CACHE_MS) : null;
  const itemPrices = new ItemPriceReader(sql, priceRuns, config);
  const historyPages = new HistoryPageReader(sql, priceRuns);
  const marketSummaries = new MarketSummaryReader(sql, config.PRICE_CACHE_MS, now);
  const priceDemand = new PriceDemand(redis, config.QUEUE_PREFIX, log);
  const inventories = new InventoryReader({ config, sql, log, now, demand: priceDemand }, config.PRICE_CACHE_MS);

  const bulkRedis = redis.duplicate({ commandTimeout: BULK_REDIS_TIMEOUT_MS, lazyConnect: true, enableOfflineQueue: true });
  bulkRedis.on('error', (error) => log.warn({ err: error.message }, 'redis (bulk) connection error'));
  // One subscriber connection; each feature subscribes its own channel and owns what it invalidates.
  const subscriber = redis.duplicate({ enableOfflineQueue: true, commandTimeout: undefined });
  subscriber.on('error', (error) => log.warn({ err: error.message }, 'redis subscriber error'));
  subscribeToKeyInvalidations(subscriber, log, keys);
  subscribeToPriceSnapshots(subscriber, log, priceSnapshots, [marketSummaries, inventories, { clear: () => priceRuns?.changed() }]);

  const queues = Object.fromEntries(
    POOLS.map((pool) => {
      const queue = new Queue(queueName(pool), { connection: redis, prefix: config.QUEUE_PREFIX });
      queue.on('error', (error) => log.warn({ err: error.message, queue: pool }, 'queue error'));
      return [pool, queue];
    }),
  ) as Record<Pool, Queue>;

  const registry = new Registry();
  const metrics = { registry, http: httpRequestMetrics(registry) };
  // Read at scrape time, by then the hub exists.
  const streamMetrics = registerPriceStreamMetrics(registry, () => priceStream.size);
  const priceStream = new PriceStreamHub({
    redisUrl: config.REDIS_URL,
    commands: redis,
    key: priceStreamKey(config.QUEUE_PREFIX),
    maxTotalBufferedBytes: config.PRICE_STREAM_MAX_BUFFERED_BYTES,
    log,
    onCutOff: streamMetrics.cutOff,
    onFannedOut: streamMetrics.fannedOut,
    ...overrides.priceStream,
  });
  registerQueueDepth(
    registry,
    POOLS.map((pool) => ({ pool, queue: queues[pool] })),
    log,
  );
  registerIngestMetrics(registry, { sql, sources: enabledSources(config), now, log });
  registerCatalogMetrics(registry, { sql, log });

  return {
    config,
    sql,
    redis,
    bulkRedis,
    log,
    meter: new UsageMeter(counters),
    counters,
    keys,
    priceSnapshots,
    priceRuns,
    itemPrices,
    historyPages,
    marketSummaries,
    inventories,
    priceStream,
    priceDemand,
    queues,
    metrics,
    now,
    startedAt: new Date(),
    async ready(timeoutMs = 5_000) {
      const ioredisReady =
        redis.status === 'ready' ||
        (await Promise.race([
          new Promise<boolean>((resolve) => redis.once('ready', () => resolve(true))),
          Bun.sleep(timeoutMs).then(() => redis.status === 'ready'),
        ]));
      const countersReady = await Promise.race([counters.ready(), Bun.sleep(timeoutMs).then(() => counters.connected)]);
      return ioredisReady && countersReady;
    },
    async close() {
      await priceStream.close();
      await priceSnapshots.close();
      await priceDemand.flush();
      await Promise.allSettled(Object.values(queues).map((queue) => queue.close()));
      subscriber.disconnect();
      bulkRedis.disconnect();
      redis.disconnect();
      counters.close();
      await sql.end({ timeout: 5 });
    },
  };
}
