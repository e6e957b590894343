import { ApiError } from '../http/errors.ts';
import { ensureInventorySnapshot, findSnapshotAssets, type InventoryDeps, type SnapshotAsset } from './inventory/snapshots.ts';
import { steamApiError } from './steam-client.ts';

/**
 * What the trade-intent asset check needs from inventories (docs/design.md §11): the assets of an owner's
 * latest snapshot, fetched again when missing or older than `maxAgeSeconds`. A seam, so the check
 * reads as rules while the fetching stays in inventory/snapshots.ts (and a benchmark can count fetches).
 */
export type OwnerAssets =
  | { kind: 'found'; snapshotId: string; assets: Map<string, SnapshotAsset> }
  /** The owner's inventory cannot be read (private, unknown): the assets cannot be verified. */
  | { kind: 'unavailable'; reason: string }
  /** Steam is throttling or down and only a stale snapshot (or none) exists: retry later. */
  | { kind: 'upstream_down'; retryAfterSeconds: number };

export type TradeInventory = {
  /** `workspaceId`: the workspace asking; its owner token for `steamId`, when it holds one, reads the snapshot (docs/design.md §17). */
  ownerAssets(steamId: string, assetIds: readonly string[], maxAgeSeconds: number, workspaceId: string): Promise<OwnerAssets>;
};

const DEFAULT_RETRY_AFTER_SECONDS = 30;

/** Owners' inventories through inventory/snapshots.ts: stored snapshots while fresh, Steam otherwise. */
export function steamTradeInventory(deps: InventoryDeps): TradeInventory {
  return {
    async ownerAssets(steamId, assetIds, maxAgeSeconds, workspaceId) {
      let found: Awaited<ReturnType<typeof ensureInventorySnapshot>>;
      try {
        found = await ensureInventorySnapshot(deps, steamId, { maxAgeSeconds, workspaceId });
      } catch (error) {
        return ownerAssetsFailure(steamApiError(error, 'inventory_not_found'));
      }
      // A stale snapshot cannot show what is tradable now (items leave inventories all the time).
      if (found.stale) return { kind: 'upstream_down', retryAfterSeconds: DEFAULT_RETRY_AFTER_SECONDS };
      return { kind: 'found', snapshotId: found.snapshot.id, assets: await findSnapshotAssets(deps.sql, found.snapshot.id, [...assetIds], deps.config) };
    },
  };
}

/**
 * Maps a fetch failure, as the API would answer it, onto the check's outcomes: an upstream outage
 * (503) is a retry-later; a 4xx (private, unknown) means the assets cannot be verified. Anything
 * else is a fault and propagates.
 */
function ownerAssetsFailure(error: unknown): OwnerAssets {
  if (error instanceof ApiError && error.status === 503) {
    return { kind: 'upstream_down', retryAfterSeconds: Number(error.headers?.['retry-after']) || DEFAULT_RETRY_AFTER_SECONDS };
  }
  if (error instanceof ApiError && error.status >= 400 && error.status < 500) return { kind: 'unavailable', reason: error.message };
  throw error;
}
