import { Redis } from 'ioredis';

export { Redis };

/**
 * Redis for request-path use (metering, caches, queue producers): no offline queue, short timeouts,
 * so an outage becomes a fast 503 instead of a hung request (BullMQ "failing fast when Redis is down").
 */
export function createRequestRedis(url: string, name: string): Redis {
  const redis = new Redis(url, {
    connectionName: name,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    commandTimeout: 1000,
    connectTimeout: 2000,
    retryStrategy: (attempt) => Math.min(attempt * 200, 2000),
    lazyConnect: false,
    // Commands issued in the same tick share one write: one metering call per request adds up.
    enableAutoPipelining: true,
  });
  return redis;
}

/** Redis for BullMQ workers: blocking commands must never time out (BullMQ going-to-production). */
export function createWorkerRedis(url: string, name: string): Redis {
  return new Redis(url, {
    connectionName: name,
    maxRetriesPerRequest: null,
    retryStrategy: (attempt) => Math.min(attempt * 500, 5000),
  });
}
