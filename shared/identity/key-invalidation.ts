import type { Logger } from '../platform/logger.ts';
import type { Redis } from '../platform/redis.ts';
import { type ApiKeyCache, KEY_INVALIDATION_CHANNEL } from './key-cache.ts';

/**
 * Revocations and workspace changes announced by other processes (API replicas, admin CLI) on
 * KEY_INVALIDATION_CHANNEL clear this process's key cache; its TTL bounds staleness if one is lost.
 * `subscriber` is a connection in subscriber mode, shared with other channels.
 */
export function subscribeToKeyInvalidations(subscriber: Redis, log: Logger, keys: ApiKeyCache): void {
  subscriber.on('message', (channel: string, message: string) => {
    if (channel === KEY_INVALIDATION_CHANNEL) keys.invalidate(message);
  });
  subscriber.subscribe(KEY_INVALIDATION_CHANNEL).catch((error: Error) => log.warn({ err: error.message }, 'could not subscribe to key invalidations'));
}
