import { Counter } from 'prom-client';
import { insertOutboxEvent } from '../events/outbox.ts';
import type { Enqueue } from '../jobs/queues.ts';
import type { Logger } from '../platform/logger.ts';
import type { WorkerResources } from '../platform/resources.ts';
import type { RequestBudget } from '../sources/budget.ts';
import { newId } from '../util/ids.ts';
import { SecretKeyring } from '../webhooks/secrets.ts';
import type { StoredAsset } from './inventory/asset-record.ts';
import { insertInventorySnapshot, prepareInventorySnapshot } from './inventory/snapshots.ts';
import { type FetchPagesOptions, fetchInventoryPages, type InventoryRead, publicRead } from './inventory/steam-community.ts';
import { ownerInventoryRead, SteamTokenRefusedError } from './inventory/steam-econ.ts';
import {
  advanceWatch,
  type ClaimedWatch,
  claimDueWatch,
  deleteWatchSnapshots,
  extendWatchClaim,
  findWatchedAsset,
  lockClaimedWatch,
  recordProtectionEndedSent,
  recordTradableSent,
  recordWatchFailure,
  releaseWatchClaim,
  snapshotAssetIds,
  syncWatches,
} from './inventory-watch-repository.ts';
import { acquireSteamBudget, BudgetDeferred, type SteamBudgetSettings, steamBudgetMetrics, steamBudgetSettings, steamRequestBudget } from './steam-budget.ts';
import { SteamNotFoundError, SteamPrivateError, SteamUnavailableError } from './steam-client.ts';
import { dropToken, liveTokenFor } from './steam-token.ts';

/**
 * docs/design.md §15 inventory watch. While a workspace has a live endpoint subscribed to inventory.changed
 * or item.tradable, each of its connected accounts has a watch (inventory_watches). Runs of the
 * `inventory_watch.read` job (maintenance pool) claim due watches, oldest snapshot first, and read
 * each inventory from Steam, one unit of ONE global budget per page request (Redis sliding window,
 * shared/sources/budget.ts, so every process together stays within STEAM_INVENTORY_REQUESTS_PER_MINUTE).
 * A good read is stored as a snapshot and diffed with the watch's baseline by asset id, and
 * inventory.changed goes to the outbox in that same transaction; the first read is the baseline and
 * sends nothing. Each asset with a future trade hold gets one delayed `inventory_watch.tradable` job
 * (job id from account and asset) that sends item.tradable if the asset is still there. A failed read
 * (Steam 5xx, 429, timeout, private, gone) changes nothing but the watch's next due time.
 */

export const inventoryWatchReads = new Counter({
  name: 'cs2_inventory_watch_reads_total',
  help: 'Watched inventory reads by outcome: baseline, changed, unchanged, failed (Steam), gone (disconnected or unwatched meanwhile), deferred (run ended waiting for budget)',
  labelNames: ['outcome'] as const,
  registers: [],
});
export const inventoryWatchSteamRequests = new Counter({
  name: 'cs2_inventory_watch_steam_requests_total',
  help: 'Steam inventory page requests the watch made (each spent one unit of the global budget)',
  registers: [],
});
export const inventoryWatchEvents = new Counter({
  name: 'cs2_inventory_watch_events_total',
  help: 'Events the inventory watch wrote to the outbox, by type',
  labelNames: ['type'] as const,
  registers: [],
});
for (const outcome of ['baseline', 'changed', 'unchanged', 'failed', 'gone', 'deferred']) inventoryWatchReads.inc({ outcome }, 0);
for (const type of ['inventory.changed', 'item.tradable', 'item.protection_ended']) inventoryWatchEvents.inc({ type }, 0);

export const inventoryWatchMetrics = [inventoryWatchReads, inventoryWatchSteamRequests, inventoryWatchEvents, ...steamBudgetMetrics];

/** A read's claim lease, extended before each page: a dead reader's watch is due again after it. */
const CLAIM_LEASE_MS = 5 * 60_000;
/** A read gives up (deferred, not failed) if the budget keeps it waiting this long for one page. */
const MAX_PAGE_WAIT_MS = 3 * 60_000;
/** One read's wall-clock limit (waits for the budget included); page timeouts stay inventory/steam-community.ts's. */
const READ_BUDGET_MS = 4 * 60_000;

/** The shared Steam budget's settings (steam-budget.ts). */
export type WatchBudgetSettings = SteamBudgetSettings;

export type InventoryWatchDeps = Pick<WorkerResources, 'config' | 'sql' | 'redis' | 'log' | 'now'> & {
  enqueue: Enqueue;
  /** Default: STEAM_INVENTORY_REQUESTS_PER_MINUTE per minute. */
  budget?: WatchBudgetSettings;
  /** One Steam page request's timeout (default inventory/steam-community.ts's 10 s). */
  pageTimeoutMs?: number;
  /** Opens owner tokens (default: from WEBHOOK_SECRET_KEY in the configuration). */
  keyring?: SecretKeyring;
};

export function watchBudgetSettings(deps: Pick<InventoryWatchDeps, 'config' | 'budget'>): Required<WatchBudgetSettings> {
  return steamBudgetSettings(deps.config, deps.budget);
}

/** The job id of an asset's item.tradable job (docs/conventions.md: from business keys, no `:`). */
export function tradableJobId(accountId: number | string, assetId: string): string {
  return `inventory-tradable-${accountId}-${assetId}`;
}

export type WatchRunReport = { started: number; ended: number; reads: Record<string, number> };

/**
 * One run: starts and ends watches, then reads due watches one after another, oldest snapshot
 * first, until none is due or `runForMs` has passed (a read already begun is finished). Runs in
 * several processes at once claim different watches.
 */
export async function runInventoryWatch(deps: InventoryWatchDeps, options: { runForMs: number }): Promise<WatchRunReport> {
  const runEnds = Date.now() + options.runForMs;
  const synced = await syncWatches(deps.sql, deps.now());
  await deleteWatchSnapshots(
    deps.sql,
    synced.ended.flatMap((watch) => (watch.previous_snapshot_id ? [watch.previous_snapshot_id] : [])),
  );
  if (synced.started > 0 || synced.ended.length > 0)
    deps.log.info({ started: synced.started, ended: synced.ended.length }, 'inventory watches started or ended');
  const budget = steamRequestBudget(deps, deps.budget);
  const reads: Record<string, number> = {};
  while (Date.now() < runEnds) {
    const token = newId();
    const claimedAt = deps.now();
    const watch = await claimDueWatch(deps.sql, claimedAt, new Date(claimedAt.getTime() + CLAIM_LEASE_MS), token);
    if (!watch) break;
    const outcome = await readWatch(deps, budget, watch, token, claimedAt, runEnds);
    reads[outcome] = (reads[outcome] ?? 0) + 1;
    inventoryWatchReads.inc({ outcome });
    if (outcome === 'deferred') break;
  }
  return { started: synced.started, ended: synced.ended.length, reads };
}

type ReadOutcome = 'baseline' | 'changed' | 'unchanged' | 'failed' | 'gone' | 'deferred';

async function readWatch(
  deps: InventoryWatchDeps,
  budget: RequestBudget,
  watch: ClaimedWatch,
  token: string,
  claimedAt: Date,
  runEnds: number,
): Promise<ReadOutcome> {
  const log = deps.log.child({ account_id: Number(watch.account_id), steam_id: watch.steam_id });
  const nextReadAt = new Date(claimedAt.getTime() + deps.config.INVENTORY_WATCH_INTERVAL_SECONDS * 1000);
  let firstPage = true;
  const fetchOptions: FetchPagesOptions = {
    // Steam failing is retried at the next interval, not within the read (each retry costs budget).
    retriesPerPage: 0,
    ...(deps.pageTimeoutMs === undefined ? {} : { pageTimeoutMs: deps.pageTimeoutMs }),
    beforeRequest: async () => {
      // The first page waits only while the run lasts (then the watch stays due, untouched); a
      // later page finishes the read it belongs to.
      const giveUpAt = firstPage ? runEnds : Date.now() + MAX_PAGE_WAIT_MS;
      firstPage = false;
      if (!(await extendWatchClaim(deps.sql, watch.account_id, token, new Date(deps.now().getTime() + CLAIM_LEASE_MS)))) throw new BudgetDeferred();
      await acquireSteamBudget(budget, giveUpAt, 'inventory_watch');
      inventoryWatchSteamRequests.inc();
    },
  };
  let read: InventoryRead;
  try {
    // docs/design.md §17: with the account's live owner token, both contexts (protected items included); a
    // token Steam refuses is dropped (audited) and this read falls back to the public one.
    const owner = await liveTokenFor(deps.sql, keyringOf(deps), watch.account_id, deps.now());
    read =
      owner === null
        ? publicRead(await fetchInventoryPages(deps, watch.steam_id, READ_BUDGET_MS, fetchOptions))
        : await ownerReadOrPublic(deps, watch, owner, fetchOptions, log);
  } catch (error) {
    if (error instanceof BudgetDeferred) {
      await releaseWatchClaim(deps.sql, watch.account_id, token);
      return 'deferred';
    }
    if (error instanceof SteamUnavailableError || error instanceof SteamPrivateError || error instanceof SteamNotFoundError) {
      // A 429 holds every process off for its Retry-After (the budget's block key).
      if (error instanceof SteamUnavailableError && error.throttled) await budget.blockUntil(new Date(deps.now().getTime() + error.retryAfterMs));
      const reason = error instanceof SteamUnavailableError ? error.reason : error.message;
      log.warn({ reason }, 'watched inventory read failed; the last good snapshot stays the baseline');
      await recordWatchFailure(deps.sql, watch.account_id, token, nextReadAt, reason);
      return 'failed';
    }
    await releaseWatchClaim(deps.sql, watch.account_id, token);
    throw error;
  }

  const fetchedAt = deps.now();
  const prepared = await prepareInventorySnapshot(deps.sql, watch.steam_id, read, fetchedAt, deps.config);
  // docs/design.md §17: text no form reads is not an error; the read says how many assets kept a null hold.
  if (prepared.unreadableHolds > 0) log.warn({ unreadable_holds: prepared.unreadableHolds }, 'watched inventory hold text without a readable instant');
  const stored = await deps.sql.begin(async (tx) => {
    const locked = await lockClaimedWatch(tx, watch.account_id, token);
    // Disconnected or unwatched while Steam was read: nothing is stored or sent.
    if (!locked) return null;
    await insertInventorySnapshot(tx, prepared);
    let changed: { added: number; removed: number } | null = null;
    if (locked.snapshot_id) {
      const before = await snapshotAssetIds(tx, locked.snapshot_id);
      const beforeSet = new Set(before);
      const nowIds = new Set(prepared.records.map((record) => record.asset_id));
      const added = prepared.records.filter((record) => !beforeSet.has(record.asset_id));
      const removed = before.filter((assetId) => !nowIds.has(assetId));
      if (added.length > 0 || removed.length > 0) {
        changed = { added: added.length, removed: removed.length };
        if (locked.subscribed.includes('inventory.changed')) {
          await insertOutboxEvent(tx, {
            type: 'inventory.changed',
            workspaceId: watch.workspace_id,
            at: fetchedAt,
            payload: {
              account_id: Number(watch.account_id),
              steam_id: watch.steam_id,
              snapshot_id: prepared.snapshot.id,
              previous_snapshot_id: locked.snapshot_id,
              // The inventory endpoint's record (docs/design.md §11/§14); value needs a marketplace, so null.
              added: added.map((record) => ({ ...record, value: null })),
              removed,
            },
          });
          inventoryWatchEvents.inc({ type: 'inventory.changed' });
        }
      }
    }
    // A watch keeps two snapshots: this one (the next baseline) and the one it replaces.
    if (locked.previous_snapshot_id) await deleteWatchSnapshots(tx, [locked.previous_snapshot_id]);
    await advanceWatch(tx, {
      accountId: watch.account_id,
      snapshotId: prepared.snapshot.id,
      previousSnapshotId: locked.snapshot_id,
      readAt: fetchedAt,
      nextReadAt,
    });
    return {
      baseline: locked.snapshot_id === null,
      changed,
      tradable: locked.subscribed.includes('item.tradable'),
      protectionEnded: locked.subscribed.includes('item.protection_ended'),
    };
  });
  if (!stored) return 'gone';
  if (stored.tradable) await scheduleTradableJobs(deps, Number(watch.account_id), prepared.records, fetchedAt);
  if (stored.protectionEnded) await scheduleProtectionEndedJobs(deps, Number(watch.account_id), prepared.records, fetchedAt);
  if (stored.changed) log.info(stored.changed, 'watched inventory changed');
  return stored.baseline ? 'baseline' : stored.changed ? 'changed' : 'unchanged';
}

/** The owner read of both contexts; a refused token is dropped and the public read serves this read. */
async function ownerReadOrPublic(
  deps: InventoryWatchDeps,
  watch: ClaimedWatch,
  token: string,
  fetchOptions: FetchPagesOptions,
  log: Logger,
): Promise<InventoryRead> {
  try {
    return await ownerInventoryRead(deps, watch.steam_id, { workspaceId: watch.workspace_id, token }, READ_BUDGET_MS, fetchOptions);
  } catch (error) {
    if (!(error instanceof SteamTokenRefusedError)) throw error;
    await dropToken(deps.sql, watch.account_id, 'refused', { now: deps.now() });
    log.warn({ status: error.status }, 'steam refused the owner token; dropped, the watch reads the public inventory');
    return publicRead(await fetchInventoryPages(deps, watch.steam_id, READ_BUDGET_MS, fetchOptions));
  }
}

const keyringOf = (deps: InventoryWatchDeps): SecretKeyring => deps.keyring ?? SecretKeyring.ofConfig(deps.config);

/** The job id of an asset's item.protection_ended job (docs/conventions.md: from business keys, no `:`). */
export function protectionEndedJobId(accountId: number | string, assetId: string): string {
  return `inventory-protection-ended-${accountId}-${assetId}`;
}

/**
 * One delayed job per protected asset whose protection ends in the future, at that instant (docs/design.md
 * §17: item.protection_ended, like item.tradable). After the commit; a lost job is added again by the
 * next read, same id.
 */
async function scheduleProtectionEndedJobs(deps: InventoryWatchDeps, accountId: number, records: readonly StoredAsset[], now: Date): Promise<void> {
  for (const record of records) {
    const until = record.protection?.protected ? record.protection.until : null;
    if (until === null || Date.parse(until) <= now.getTime()) continue;
    await deps.enqueue(
      'inventory_watch.protection_ended',
      { account_id: accountId, asset_id: record.asset_id, protected_until: until },
      { jobId: protectionEndedJobId(accountId, record.asset_id), delay: Date.parse(until) - now.getTime() },
    );
  }
}

export type ProtectionEndedOutcome = 'sent' | 'already_sent' | 'unwatched' | 'gone' | 'not_subscribed' | 'still_protected';

/**
 * An `inventory_watch.protection_ended` job: item.protection_ended `{account_id, steam_id, asset_id,
 * market_hash_name, at}` if the account is still connected and watched and the asset is in the
 * watch's latest snapshot whose protection (if any) has ended by now; once per account and asset
 * (inventory_protection_events).
 */
export async function sendProtectionEnded(
  deps: Pick<InventoryWatchDeps, 'sql' | 'now' | 'log'>,
  job: { account_id: number; asset_id: string; protected_until: string },
): Promise<ProtectionEndedOutcome> {
  const now = deps.now();
  const outcome = await deps.sql.begin(async (tx): Promise<ProtectionEndedOutcome> => {
    const found = await findWatchedAsset(tx, job.account_id, job.asset_id);
    if (found.kind !== 'found') return found.kind;
    if (!found.subscribed.includes('item.protection_ended')) return 'not_subscribed';
    // The latest snapshot shows a later protection than the job was made for: that read scheduled it anew.
    const protection = found.record.protection;
    const until = protection?.protected ? protection.until : null;
    if (until !== null && Date.parse(until) > Math.max(Date.parse(job.protected_until), now.getTime())) return 'still_protected';
    if (!(await recordProtectionEndedSent(tx, { accountId: job.account_id, assetId: job.asset_id, protectedUntil: new Date(job.protected_until), at: now })))
      return 'already_sent';
    await insertOutboxEvent(tx, {
      type: 'item.protection_ended',
      workspaceId: found.workspace_id,
      at: now,
      payload: {
        account_id: job.account_id,
        steam_id: found.steam_id,
        asset_id: job.asset_id,
        market_hash_name: found.record.market_hash_name,
        at: job.protected_until,
      },
    });
    return 'sent';
  });
  if (outcome === 'sent') inventoryWatchEvents.inc({ type: 'item.protection_ended' });
  deps.log.info({ account_id: job.account_id, asset_id: job.asset_id, outcome }, 'item.protection_ended job done');
  return outcome;
}

/**
 * One delayed job per asset whose hold ends in the future, at that instant. After the commit (BullMQ
 * is not transactional): a job lost to a crash here is added again by the next read, same id.
 */
async function scheduleTradableJobs(deps: InventoryWatchDeps, accountId: number, records: readonly StoredAsset[], now: Date): Promise<void> {
  const held = records.filter((record) => record.trade_hold_until !== null && Date.parse(record.trade_hold_until) > now.getTime());
  for (const record of held) {
    await deps.enqueue(
      'inventory_watch.tradable',
      { account_id: accountId, asset_id: record.asset_id, tradable_at: record.trade_hold_until! },
      { jobId: tradableJobId(accountId, record.asset_id), delay: Date.parse(record.trade_hold_until!) - now.getTime() },
    );
  }
}

export type TradableOutcome = 'sent' | 'already_sent' | 'unwatched' | 'gone' | 'not_subscribed' | 'still_held';

/**
 * An `inventory_watch.tradable` job: item.tradable `{account_id, steam_id, asset_id,
 * market_hash_name, tradable_at}` if the account is still connected and watched and the asset is
 * in the watch's latest snapshot; once per account and asset (inventory_tradable_events).
 */
export async function sendItemTradable(
  deps: Pick<InventoryWatchDeps, 'sql' | 'now' | 'log'>,
  job: { account_id: number; asset_id: string; tradable_at: string },
): Promise<TradableOutcome> {
  const now = deps.now();
  const outcome = await deps.sql.begin(async (tx): Promise<TradableOutcome> => {
    const found = await findWatchedAsset(tx, job.account_id, job.asset_id);
    if (found.kind !== 'found') return found.kind;
    if (!found.subscribed.includes('item.tradable')) return 'not_subscribed';
    // The latest snapshot shows a later hold than the job was made for: that read scheduled it anew.
    const hold = found.record.trade_hold_until;
    if (hold !== null && Date.parse(hold) > Math.max(Date.parse(job.tradable_at), now.getTime())) return 'still_held';
    if (!(await recordTradableSent(tx, { accountId: job.account_id, assetId: job.asset_id, tradableAt: new Date(job.tradable_at), at: now })))
      return 'already_sent';
    await insertOutboxEvent(tx, {
      type: 'item.tradable',
      workspaceId: found.workspace_id,
      at: now,
      payload: {
        account_id: job.account_id,
        steam_id: found.steam_id,
        asset_id: job.asset_id,
        market_hash_name: found.record.market_hash_name,
        tradable_at: job.tradable_at,
      },
    });
    return 'sent';
  });
  if (outcome === 'sent') inventoryWatchEvents.inc({ type: 'item.tradable' });
  deps.log.info({ account_id: job.account_id, asset_id: job.asset_id, outcome }, 'item.tradable job done');
  return outcome;
}
