import type { Redis } from 'ioredis';
import type { SourceName } from '../platform/source-names.ts';
import type { SourceCursor } from './types.ts';

/**
 * A paging source's resume position (steam's search/render `start`, docs/design.md §19) in Redis, under the
 * deployment's QUEUE_PREFIX (`<QUEUE_PREFIX>:source-cursor:{<source>}`), so every worker of one
 * deployment continues where the last run stopped and two deployments on one Redis never share it.
 * No expiry: a lost key only means the next run starts again at the beginning of the market.
 */
export function sourceCursorKey(queuePrefix: string, source: SourceName): string {
  return `${queuePrefix}:source-cursor:{${source}}`;
}

export function redisSourceCursor(redis: Redis, queuePrefix: string, source: SourceName): SourceCursor {
  const key = sourceCursorKey(queuePrefix, source);
  return {
    async read() {
      const value = await redis.get(key);
      return value !== null && /^(0|[1-9][0-9]{0,14})$/.test(value) ? Number(value) : null;
    },
    async write(position) {
      await redis.set(key, String(position));
    },
  };
}
