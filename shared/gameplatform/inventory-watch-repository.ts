import type { EventType } from '../events/outbox.ts';
import type { Queryable, TransactionSql } from '../platform/db.ts';
import type { StoredAsset } from './inventory/asset-record.ts';

/**
 * Repository of the inventory watch (docs/design.md §15; tables inventory_watches and
 * inventory_tradable_events, sql/0017_inventory_watch.sql). Snapshots themselves live in
 * inventory_snapshots / inventory_assets like every other inventory read (shared/gameplatform/inventory/snapshots.ts).
 */

/** The webhook event types that make a workspace's accounts watched. */
export const WATCH_EVENT_TYPES = ['inventory.changed', 'item.tradable', 'item.protection_ended'] as const satisfies readonly EventType[];
export type WatchEventType = (typeof WATCH_EVENT_TYPES)[number];

export type ClaimedWatch = {
  account_id: string;
  workspace_id: string;
  steam_id: string;
  snapshot_id: string | null;
  read_at: Date | null;
};

/**
 * Starts a watch (due now, no baseline) for every live account of a workspace with a live endpoint
 * subscribed to a watch event type, and ends the watches whose account was disconnected or whose
 * workspace no longer subscribes. Returns the snapshots the ended watches no longer need (their
 * previous one; the latest stays, as every inventory's latest does).
 */
export async function syncWatches(
  db: Queryable,
  now: Date,
): Promise<{ started: number; ended: { account_id: string; previous_snapshot_id: string | null }[] }> {
  const started = await db`
    insert into inventory_watches (account_id, workspace_id, steam_id, created_at, next_read_at)
    select a.account_id, a.workspace_id, a.steam_id, ${now}, ${now}
    from gameplatform_accounts a
    where a.disconnected_at is null
      and exists (
        select 1 from webhook_endpoints w
        where w.workspace_id = a.workspace_id and w.deleted_at is null and w.disabled_at is null
          and w.event_types && ${WATCH_EVENT_TYPES as unknown as string[]}::text[])
    on conflict (account_id) do nothing`;
  const ended = await db<{ account_id: string; previous_snapshot_id: string | null }[]>`
    delete from inventory_watches iw
    where not exists (select 1 from gameplatform_accounts a where a.account_id = iw.account_id and a.disconnected_at is null)
       or not exists (
        select 1 from webhook_endpoints w
        where w.workspace_id = iw.workspace_id and w.deleted_at is null and w.disabled_at is null
          and w.event_types && ${WATCH_EVENT_TYPES as unknown as string[]}::text[])
    returning iw.account_id::text as account_id, iw.previous_snapshot_id`;
  return { started: started.count, ended };
}

/**
 * Claims the due watch with the oldest snapshot (never read first), skipping those another process
 * holds; the claim is a lease until `claimedUntil`. Null when nothing is due.
 */
export async function claimDueWatch(db: Queryable, now: Date, claimedUntil: Date, token: string): Promise<ClaimedWatch | null> {
  const [row] = await db<ClaimedWatch[]>`
    update inventory_watches iw set claim_token = ${token}, claimed_until = ${claimedUntil}, last_attempt_at = ${now}
    where iw.account_id = (
      select account_id from inventory_watches
      where next_read_at <= ${now} and (claimed_until is null or claimed_until <= ${now})
      order by read_at asc nulls first, account_id
      limit 1
      for update skip locked)
    returning iw.account_id::text as account_id, iw.workspace_id, iw.steam_id, iw.snapshot_id, iw.read_at`;
  return row ?? null;
}

/** Extends a held claim (before each page's budget wait); false when the claim is no longer ours. */
export async function extendWatchClaim(db: Queryable, accountId: string, token: string, claimedUntil: Date): Promise<boolean> {
  const rows = await db`update inventory_watches set claimed_until = ${claimedUntil} where account_id = ${accountId}::bigint and claim_token = ${token}`;
  return rows.count === 1;
}

/** Gives a claim back without reading (the run ran out of time): the watch stays due and oldest. */
export async function releaseWatchClaim(db: Queryable, accountId: string, token: string): Promise<void> {
  await db`update inventory_watches set claim_token = null, claimed_until = null where account_id = ${accountId}::bigint and claim_token = ${token}`;
}

/** A failed read: the baseline stays, the watch is due again one interval after the read began. */
export async function recordWatchFailure(db: Queryable, accountId: string, token: string, nextReadAt: Date, reason: string): Promise<void> {
  await db`
    update inventory_watches
    set claim_token = null, claimed_until = null, next_read_at = ${nextReadAt}, failures = failures + 1, last_error = ${reason.slice(0, 500)}
    where account_id = ${accountId}::bigint and claim_token = ${token}`;
}

export type LockedWatch = { snapshot_id: string | null; previous_snapshot_id: string | null; subscribed: WatchEventType[] };

/**
 * The claimed watch locked for storing its read, with the watch event types its workspace's live
 * endpoints subscribe to; null when the claim is gone or the account was disconnected meanwhile. The
 * account row is share-locked so a disconnect waits for this transaction (and is then final).
 */
export async function lockClaimedWatch(tx: TransactionSql, accountId: string, token: string): Promise<LockedWatch | null> {
  const [row] = await tx<{ snapshot_id: string | null; previous_snapshot_id: string | null; workspace_id: string }[]>`
    select iw.snapshot_id, iw.previous_snapshot_id, iw.workspace_id
    from inventory_watches iw join gameplatform_accounts a on a.account_id = iw.account_id
    where iw.account_id = ${accountId}::bigint and iw.claim_token = ${token} and a.disconnected_at is null
    for update of iw for share of a`;
  if (!row) return null;
  return { snapshot_id: row.snapshot_id, previous_snapshot_id: row.previous_snapshot_id, subscribed: await subscribedWatchTypes(tx, row.workspace_id) };
}

/** The watch event types the workspace's live endpoints subscribe to. */
export async function subscribedWatchTypes(db: Queryable, workspaceId: string): Promise<WatchEventType[]> {
  const rows = await db<{ event_type: WatchEventType }[]>`
    select distinct subscribed.event_type
    from webhook_endpoints w, unnest(w.event_types) as subscribed (event_type)
    where w.workspace_id = ${workspaceId} and w.deleted_at is null and w.disabled_at is null
      and subscribed.event_type = any(${WATCH_EVENT_TYPES as unknown as string[]}::text[])`;
  return rows.map((row) => row.event_type);
}

/** Asset ids of a stored snapshot, in upstream order. */
export async function snapshotAssetIds(db: Queryable, snapshotId: string): Promise<string[]> {
  const rows = await db<{ asset_id: string }[]>`select asset_id from inventory_assets where snapshot_id = ${snapshotId} order by position`;
  return rows.map((row) => row.asset_id);
}

/** A good read stored: the new snapshot becomes the baseline, the old baseline the previous one. */
export async function advanceWatch(
  tx: TransactionSql,
  watch: { accountId: string; snapshotId: string; previousSnapshotId: string | null; readAt: Date; nextReadAt: Date },
): Promise<void> {
  await tx`
    update inventory_watches
    set snapshot_id = ${watch.snapshotId}, previous_snapshot_id = ${watch.previousSnapshotId}, read_at = ${watch.readAt},
        next_read_at = ${watch.nextReadAt}, claim_token = null, claimed_until = null, failures = 0, last_error = null
    where account_id = ${watch.accountId}::bigint`;
}

/** Deletes snapshots a watch no longer needs (assets cascade), unless one is its inventory's latest. */
export async function deleteWatchSnapshots(db: Queryable, snapshotIds: readonly string[]): Promise<number> {
  if (snapshotIds.length === 0) return 0;
  const rows = await db`
    delete from inventory_snapshots s
    where s.id = any(${snapshotIds as string[]}::uuid[])
      and exists (select 1 from inventory_snapshots newer where newer.steam_id = s.steam_id and (newer.fetched_at, newer.id) > (s.fetched_at, s.id))`;
  return rows.count;
}

export type TradableCheck =
  | { kind: 'unwatched' }
  | { kind: 'gone' }
  | { kind: 'found'; workspace_id: string; steam_id: string; subscribed: WatchEventType[]; record: StoredAsset };

/**
 * For an item.tradable job: the asset in the latest snapshot of the account's live watch. The watch
 * and the account are locked (as lockClaimedWatch does) so a disconnect or a new snapshot waits.
 */
export async function findWatchedAsset(tx: TransactionSql, accountId: number, assetId: string): Promise<TradableCheck> {
  const [watch] = await tx<{ workspace_id: string; steam_id: string; snapshot_id: string | null }[]>`
    select iw.workspace_id, iw.steam_id, iw.snapshot_id
    from inventory_watches iw join gameplatform_accounts a on a.account_id = iw.account_id
    where iw.account_id = ${accountId} and a.disconnected_at is null
    for share of iw, a`;
  if (!watch) return { kind: 'unwatched' };
  if (!watch.snapshot_id) return { kind: 'gone' };
  const [asset] = await tx<{ record: StoredAsset }[]>`
    select record from inventory_assets where snapshot_id = ${watch.snapshot_id} and asset_id = ${assetId} limit 1`;
  if (!asset) return { kind: 'gone' };
  return {
    kind: 'found',
    workspace_id: watch.workspace_id,
    steam_id: watch.steam_id,
    subscribed: await subscribedWatchTypes(tx, watch.workspace_id),
    record: asset.record,
  };
}

/** Records item.tradable as sent for (account, asset); false when it was sent before. */
export async function recordTradableSent(db: Queryable, sent: { accountId: number; assetId: string; tradableAt: Date; at: Date }): Promise<boolean> {
  const rows = await db`
    insert into inventory_tradable_events (account_id, asset_id, tradable_at, sent_at)
    values (${sent.accountId}, ${sent.assetId}, ${sent.tradableAt}, ${sent.at})
    on conflict (account_id, asset_id) do nothing
    returning account_id`;
  return rows.length === 1;
}

/** Records item.protection_ended as sent for (account, asset); false when it was sent before. */
export async function recordProtectionEndedSent(db: Queryable, sent: { accountId: number; assetId: string; protectedUntil: Date; at: Date }): Promise<boolean> {
  const rows = await db`
    insert into inventory_protection_events (account_id, asset_id, protected_until, sent_at)
    values (${sent.accountId}, ${sent.assetId}, ${sent.protectedUntil}, ${sent.at})
    on conflict (account_id, asset_id) do nothing
    returning account_id`;
  return rows.length === 1;
}

/**
 * Drops item.tradable and item.protection_ended records older than `before` (a hold or protection
 * that ended then can no longer be scheduled); how many of each.
 */
export async function deleteOldTradableRecords(db: Queryable, before: Date): Promise<number> {
  const tradable = await db`delete from inventory_tradable_events where sent_at < ${before}`;
  const protection = await db`delete from inventory_protection_events where sent_at < ${before}`;
  return tradable.count + protection.count;
}
