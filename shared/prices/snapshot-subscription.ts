import type { Logger } from '../platform/logger.ts';
import type { Redis } from '../platform/redis.ts';
import { PRICE_SNAPSHOT_CHANNEL } from './snapshot.ts';
import type { PriceSnapshotCache } from './snapshot-cache.ts';

/** A per-process cache derived from price snapshots (item prices, market summaries): dropped on each new one. */
type DerivedCache = { clear(): void };

/**
 * New snapshots announced by the index pool on PRICE_SNAPSHOT_CHANNEL are loaded at once and the
 * caches derived from the old one dropped; polling (SNAPSHOT_POLL_INTERVAL_MS) is the fallback if an
 * announcement is lost. `subscriber` is a connection in subscriber mode, shared with other channels.
 */
export function subscribeToPriceSnapshots(subscriber: Redis, log: Logger, snapshots: PriceSnapshotCache, derived: DerivedCache[]): void {
  subscriber.on('message', (channel: string) => {
    if (channel !== PRICE_SNAPSHOT_CHANNEL) return;
    snapshots.notify();
    for (const cache of derived) cache.clear();
  });
  subscriber.subscribe(PRICE_SNAPSHOT_CHANNEL).catch((error: Error) => log.warn({ err: error.message }, 'could not subscribe to price snapshots'));
}
