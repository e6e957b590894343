import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { Queue } from 'bullmq';
import { disconnectLiveAccount, insertOrFindLiveAccount } from '../../shared/gameplatform/accounts.ts';
import { inventoryAssetSchema } from '../../shared/gameplatform/inventory/asset-record.ts';
import {
  type InventoryWatchDeps,
  protectionEndedJobId,
  runInventoryWatch,
  sendItemTradable,
  sendProtectionEnded,
  tradableJobId,
  type WatchBudgetSettings,
} from '../../shared/gameplatform/inventory-watch.ts';
import { type Enqueue, enqueue as enqueueOn, queueName } from '../../shared/jobs/queues.ts';
import { createLogger } from '../../shared/platform/logger.ts';
import { createWorkerRedis } from '../../shared/platform/redis.ts';
import { type ItemSpec, inventoryOf, maxInSlidingWindow, type SteamFake, startSteamFake } from '../fakes/steam/server.ts';
import { scratchTestApp, type TestApp, testClock, workspaceWithKey } from '../helpers.ts';
import { removeQueueKeys, subscribedEndpoint } from '../webhooks/webhooks-fixtures.ts';
import { setOwnerToken } from './inventory-fixtures.ts';

/**
 * docs/design.md §15 inventory watch over real Postgres (a scratch database: the watch looks at every
 * workspace) and Redis, Steam played by the fake over HTTP. The watch runs are called directly with
 * an injectable clock (so "one interval later" is a clock step, not a wait); the pool's own schedule
 * and delayed jobs run for real in test/gameplatform/inventory-watch-pool.test.ts.
 */

const INTERVAL_MS = 600_000;
const clock = testClock();
const log = createLogger({ level: 'silent', name: 'inventory-watch-test' });
let fake: SteamFake;
let t: TestApp;
let queue: Queue;
let connection: ReturnType<typeof createWorkerRedis>;
const queuePrefix = `iw-${process.pid}-${Date.now().toString(36)}`;
const enqueue: Enqueue = (name, payload, options) => enqueueOn(queue, name, payload, options);

let steamCounter = 0;
/** A fresh SteamID64 (individual, public universe) per account, so inventories never overlap. */
function nextSteamId(): string {
  steamCounter += 1;
  return String(76561198100000000n + BigInt(process.pid % 1000) * 10_000n + BigInt(steamCounter));
}

const SPECS: ItemSpec[] = [
  { item: 'AK-47 | Redline', wear: 0.2, seed: 1 },
  { item: 'AWP | Asiimov', wear: 0.3, seed: 2 },
  { item: 'Container | Revolution Case' },
];

function deps(budget: Partial<WatchBudgetSettings> = {}): InventoryWatchDeps {
  return {
    config: t.deps.config,
    sql: t.deps.sql,
    redis: t.deps.redis,
    log,
    now: clock.now,
    enqueue,
    budget: { requests: 1_000, windowMs: 60_000, marginMs: 0, keyPrefix: `${queuePrefix}-budget`, ...budget },
  };
}

/** One run with the clock one interval on, so every watch is due. */
async function runOnce(budget: Partial<WatchBudgetSettings> = {}) {
  clock.advance(INTERVAL_MS);
  return runInventoryWatch(deps(budget), { runForMs: 30_000 });
}

type Watched = { workspaceId: string; accountId: number; steamId: string; assetIds: string[] };

/** A workspace (subscribed unless told otherwise) with one connected account whose inventory holds `specs`. */
async function watchedAccount(options: { specs?: ItemSpec[]; eventTypes?: string[] | null; workspaceId?: string; steamId?: string } = {}): Promise<Watched> {
  const workspaceId = options.workspaceId ?? (await workspaceWithKey(t)).workspace.id;
  const eventTypes = options.eventTypes === undefined ? ['inventory.changed', 'item.tradable'] : options.eventTypes;
  if (eventTypes && !options.workspaceId) await subscribedEndpoint(t.deps.sql, workspaceId, eventTypes);
  const steamId = options.steamId ?? nextSteamId();
  if (!options.steamId) fake.setInventory(steamId, inventoryOf(steamId, options.specs ?? SPECS, 50_000_000_000n + BigInt(steamCounter) * 1_000n));
  const { account } = await insertOrFindLiveAccount(t.deps.sql, { workspaceId, steamId, personaName: null, connectedAt: clock.now() });
  return { workspaceId, accountId: account.account_id, steamId, assetIds: fake.assetIds(steamId) };
}

type ChangedEvent = {
  account_id: number;
  steam_id: string;
  snapshot_id: string;
  previous_snapshot_id: string;
  added: Record<string, unknown>[];
  removed: string[];
};

async function events<T = ChangedEvent>(workspaceId: string, type: 'inventory.changed' | 'item.tradable'): Promise<T[]> {
  const rows = await t.deps.sql<{ payload: T }[]>`
    select payload from event_outbox where workspace_id = ${workspaceId} and event_type = ${type} order by created_at, id`;
  return rows.map((row) => row.payload);
}

async function watchRow(accountId: number) {
  const [row] = await t.deps.sql<{ snapshot_id: string | null; previous_snapshot_id: string | null; failures: number; last_error: string | null }[]>`
    select snapshot_id, previous_snapshot_id, failures, last_error from inventory_watches where account_id = ${accountId}`;
  return row ?? null;
}

/** Puts every other watch of the file far out of due, so runs read only these accounts. */
async function onlyWatch(accountIds: number[]): Promise<void> {
  await t.deps
    .sql`update inventory_watches set next_read_at = ${new Date(clock.now().getTime() + 1_000 * INTERVAL_MS)} where not (account_id = any(${accountIds}::bigint[]))`;
}

const readsOf = (steamId: string) => fake.inventoryRequests.filter((request) => request.steamId === steamId);

beforeAll(async () => {
  fake = await startSteamFake();
  t = await scratchTestApp({
    tag: 'inventory_watch',
    now: clock.now,
    config: {
      STEAM_API_URL: fake.url,
      STEAM_COMMUNITY_URL: fake.url,
      STEAM_WEB_API_KEY: fake.apiKey,
      INVENTORY_WATCH_INTERVAL_SECONDS: String(INTERVAL_MS / 1000),
      QUEUE_PREFIX: queuePrefix,
      WEBHOOK_SECRET_KEY: Buffer.alloc(32, 9).toString('base64'),
    },
  });
  connection = createWorkerRedis(t.deps.config.REDIS_URL, 'inventory-watch-test');
  queue = new Queue(queueName('maintenance'), { connection, prefix: queuePrefix });
}, 60_000);

afterAll(async () => {
  await queue?.close();
  connection?.disconnect();
  await removeQueueKeys(process.env.REDIS_URL!, queuePrefix);
  await t?.close();
  await fake?.stop();
});

describe('inventory.changed', () => {
  test('the first read is the baseline and sends nothing; an unchanged inventory sends nothing', async () => {
    const account = await watchedAccount();
    const first = await runOnce();
    expect(first.started).toBeGreaterThanOrEqual(1);
    expect(readsOf(account.steamId)).toHaveLength(1);
    expect((await watchRow(account.accountId))?.snapshot_id).toBeString();
    await runOnce();
    expect(readsOf(account.steamId)).toHaveLength(2);
    expect(await events(account.workspaceId, 'inventory.changed')).toEqual([]);
  });

  test('items added, removed, and traded (same items under new asset ids) each send one event with the diff by asset id', async () => {
    const account = await watchedAccount();
    await runOnce();
    const baseline = (await watchRow(account.accountId))!.snapshot_id!;

    const [added] = fake.addItems(account.steamId, [{ item: 'Glock-18 | Fade', wear: 0.03, seed: 77 }]);
    await runOnce();
    let sent = await events(account.workspaceId, 'inventory.changed');
    expect(sent).toHaveLength(1);
    expect(sent[0]!.account_id).toBe(account.accountId);
    expect(sent[0]!.steam_id).toBe(account.steamId);
    expect(sent[0]!.previous_snapshot_id).toBe(baseline);
    expect(sent[0]!.snapshot_id).toBe((await watchRow(account.accountId))!.snapshot_id!);
    expect(sent[0]!.removed).toEqual([]);
    expect(sent[0]!.added.map((asset) => asset.asset_id)).toEqual([added!]);
    // The inventory endpoint's record shape (docs/design.md §11/§14), value null (no marketplace asked for).
    const record = inventoryAssetSchema.strict().parse(sent[0]!.added[0]);
    expect(record).toMatchObject({ market_hash_name: 'Glock-18 | Fade (Factory New)', value: null, tradable: true });

    fake.removeItems(account.steamId, [account.assetIds[0]!]);
    await runOnce();
    sent = await events(account.workspaceId, 'inventory.changed');
    expect(sent).toHaveLength(2);
    expect(sent[1]!.added).toEqual([]);
    expect(sent[1]!.removed).toEqual([account.assetIds[0]!]);
    expect(sent[1]!.previous_snapshot_id).toBe(sent[0]!.snapshot_id);

    const traded = fake.tradeItems(account.steamId, [account.assetIds[1]!, added!]);
    await runOnce();
    sent = await events(account.workspaceId, 'inventory.changed');
    expect(sent).toHaveLength(3);
    expect(sent[2]!.added.map((asset) => asset.asset_id).sort()).toEqual([...traded].sort());
    expect(sent[2]!.removed.sort()).toEqual([account.assetIds[1]!, added!].sort());
    // The same item: only its asset id (and certificate) changed.
    const again = sent[2]!.added.find((asset) => asset.asset_id === traded[1]) as { market_hash_name: string; state: { paint_seed?: number } };
    expect(again.market_hash_name).toBe('Glock-18 | Fade (Factory New)');
    expect(again.state.paint_seed).toBe(77);
  });

  test('changes of other fields alone (a trade hold ending: tradable, new instance id) send nothing', async () => {
    const hold = new Date(clock.now().getTime() + 7 * 86_400_000);
    const account = await watchedAccount({ specs: [{ item: 'AWP | Asiimov', wear: 0.3, seed: 5, tradeHoldUntil: hold }, ...SPECS] });
    await runOnce();
    fake.endTradeHolds(account.steamId, [account.assetIds[0]!]);
    await runOnce();
    expect(await events(account.workspaceId, 'inventory.changed')).toEqual([]);
    const [stored] = await t.deps.sql<{ tradable: boolean }[]>`
      select a.tradable from inventory_watches w join inventory_assets a on a.snapshot_id = w.snapshot_id
      where w.account_id = ${account.accountId} and a.asset_id = ${account.assetIds[0]!}`;
    expect(stored?.tradable).toBe(true);
  });

  test('a watch keeps at most two snapshots (the baseline and the one before it)', async () => {
    const account = await watchedAccount();
    for (let read = 0; read < 4; read += 1) await runOnce();
    const rows = await t.deps.sql<{ count: number }[]>`select count(*)::int as count from inventory_snapshots where steam_id = ${account.steamId}`;
    expect(rows[0]?.count).toBe(2);
  });
});

describe('workspace isolation', () => {
  test('one Steam account connected in two workspaces: each watch has its own baseline, and each workspace gets only its own event', async () => {
    const first = await watchedAccount();
    await runOnce();
    // Connected later in another workspace: its first read is its own baseline.
    const second = await watchedAccount({ steamId: first.steamId });
    const [added] = fake.addItems(first.steamId, [{ item: 'Container | Revolution Case' }]);
    await runOnce();
    expect((await events(first.workspaceId, 'inventory.changed')).map((event) => [event.account_id, event.added.map((asset) => asset.asset_id)])).toEqual([
      [first.accountId, [added!]],
    ]);
    expect(await events(second.workspaceId, 'inventory.changed')).toEqual([]);
    fake.removeItems(first.steamId, [added!]);
    await runOnce();
    const [toSecond] = await events(second.workspaceId, 'inventory.changed');
    expect(toSecond).toMatchObject({ account_id: second.accountId, removed: [added!], added: [] });
    expect(await events(first.workspaceId, 'inventory.changed')).toHaveLength(2);
  });
});

describe('Steam failing', () => {
  test('5xx, 429, a timeout and a private inventory send nothing and lose nothing; the next good read diffs against the last good snapshot', async () => {
    const account = await watchedAccount();
    await runOnce();
    await onlyWatch([account.accountId]);
    const baseline = (await watchRow(account.accountId))!.snapshot_id!;
    // Changes while Steam fails: they must arrive with the first good read.
    const [added] = fake.addItems(account.steamId, [{ item: 'Sticker | Crown (Foil)' }]);
    fake.removeItems(account.steamId, [account.assetIds[2]!]);

    fake.failNext('inventory', { status: 502, steamId: account.steamId });
    await runOnce();
    expect(await watchRow(account.accountId)).toMatchObject({ snapshot_id: baseline, failures: 1, last_error: 'HTTP 502' });

    fake.failNext('inventory', { status: 429, retryAfter: 1, steamId: account.steamId });
    await runOnce();
    // A 429 holds every process's budget off for its Retry-After (the next read waits it out).
    expect(await t.deps.redis.pttl(`${queuePrefix}-budget:{steam}:blocked`)).toBeGreaterThan(0);
    expect(await watchRow(account.accountId)).toMatchObject({ snapshot_id: baseline, failures: 2 });

    // A Steam that does not answer within the page timeout.
    fake.failNext('inventory', { status: 200, stallMs: 2_000, steamId: account.steamId });
    clock.advance(INTERVAL_MS);
    await runInventoryWatch({ ...deps(), pageTimeoutMs: 300 }, { runForMs: 30_000 });
    expect(await watchRow(account.accountId)).toMatchObject({ snapshot_id: baseline, failures: 3, last_error: 'timed out after 300 ms' });

    fake.setInventoryVisibility(account.steamId, 'private');
    await runOnce();
    expect(await watchRow(account.accountId)).toMatchObject({ snapshot_id: baseline, failures: 4, last_error: 'steam inventory is private' });
    expect(await events(account.workspaceId, 'inventory.changed')).toEqual([]);

    // Public again (the same items): one event with everything since the last good snapshot.
    fake.setInventoryVisibility(account.steamId, 'public');
    const steamReads = readsOf(account.steamId).length;
    await runOnce();
    expect(readsOf(account.steamId).length).toBe(steamReads + 1);
    const sent = await events(account.workspaceId, 'inventory.changed');
    expect(sent).toHaveLength(1);
    expect(sent[0]!.previous_snapshot_id).toBe(baseline);
    expect(sent[0]!.added.map((asset) => asset.asset_id)).toEqual([added!]);
    expect(sent[0]!.removed).toEqual([account.assetIds[2]!]);
    expect(await watchRow(account.accountId)).toMatchObject({ failures: 0, last_error: null });
  });
});

describe('who is watched', () => {
  test('a workspace without a subscribed endpoint is not read; one subscribed to other types neither', async () => {
    const none = await watchedAccount({ eventTypes: null });
    const other = await watchedAccount({ eventTypes: ['price.updated'] });
    await runOnce();
    await runOnce();
    expect(readsOf(none.steamId)).toEqual([]);
    expect(readsOf(other.steamId)).toEqual([]);
    expect(await watchRow(none.accountId)).toBeNull();
  });

  test('subscribing to item.tradable alone watches (and sends no inventory.changed); a subscription that ends stops the watch', async () => {
    const account = await watchedAccount({ eventTypes: ['item.tradable'] });
    await runOnce();
    fake.addItems(account.steamId, [{ item: 'Container | Revolution Case' }]);
    await runOnce();
    expect(readsOf(account.steamId)).toHaveLength(2);
    expect(await events(account.workspaceId, 'inventory.changed')).toEqual([]);
    await t.deps.sql`update webhook_endpoints set deleted_at = now() where workspace_id = ${account.workspaceId}`;
    await runOnce();
    expect(readsOf(account.steamId)).toHaveLength(2);
    expect(await watchRow(account.accountId)).toBeNull();
  });

  test('a disconnected account is read no more and sends nothing, its pending item.tradable included; other accounts of the workspace go on', async () => {
    const hold = new Date(Math.ceil((clock.now().getTime() + 3 * 86_400_000) / 1000) * 1000);
    const account = await watchedAccount({ specs: [{ item: 'AWP | Asiimov', wear: 0.3, seed: 9, tradeHoldUntil: hold }] });
    const sibling = await watchedAccount({ workspaceId: account.workspaceId });
    await runOnce();
    expect(await queue.getJob(tradableJobId(account.accountId, account.assetIds[0]!))).toBeDefined();
    await disconnectLiveAccount(t.deps.sql, account.workspaceId, String(account.accountId), clock.now());
    fake.addItems(account.steamId, [{ item: 'Container | Revolution Case' }]);
    fake.addItems(sibling.steamId, [{ item: 'Container | Revolution Case' }]);
    await runOnce();
    expect(readsOf(account.steamId)).toHaveLength(1);
    expect(readsOf(sibling.steamId)).toHaveLength(2);
    expect(await watchRow(account.accountId)).toBeNull();
    const changed = await events(account.workspaceId, 'inventory.changed');
    expect(changed.map((event) => event.account_id)).toEqual([sibling.accountId]);
    // The hold ends: the job finds no watch and sends nothing.
    expect(
      await sendItemTradable(
        { sql: t.deps.sql, now: () => new Date(hold.getTime() + 1), log },
        { account_id: account.accountId, asset_id: account.assetIds[0]!, tradable_at: hold.toISOString() },
      ),
    ).toBe('unwatched');
    expect(await events(account.workspaceId, 'item.tradable')).toEqual([]);
  });
});

describe('item.tradable', () => {
  test('a future hold gets one delayed job at its end (same job across snapshots), which sends one event while the asset is there', async () => {
    const hold = new Date(Math.ceil((clock.now().getTime() + 3 * 86_400_000) / 1000) * 1000);
    const account = await watchedAccount({
      specs: [
        { item: 'AWP | Asiimov', wear: 0.3, seed: 11, tradeHoldUntil: hold },
        { item: 'Glock-18 | Fade', wear: 0.03, seed: 12, tradeHoldUntil: hold },
        ...SPECS,
      ],
    });
    const [kept, left] = account.assetIds as [string, string];
    await runOnce();
    const job = await queue.getJob(tradableJobId(account.accountId, kept));
    expect(job?.data).toEqual({ account_id: account.accountId, asset_id: kept, tradable_at: hold.toISOString() });
    // Delayed until the hold ends (the delay is from the watch's clock).
    expect(job!.opts.delay).toBe(hold.getTime() - clock.now().getTime());
    await runOnce();
    const [jobs] = [await queue.getDelayed()];
    expect(jobs.filter((delayed) => delayed.id === tradableJobId(account.accountId, kept))).toHaveLength(1);

    // The other asset leaves before its hold ends.
    fake.removeItems(account.steamId, [left]);
    await runOnce();
    const atHoldEnd = { sql: t.deps.sql, now: () => new Date(hold.getTime() + 5), log };
    expect(await sendItemTradable(atHoldEnd, { account_id: account.accountId, asset_id: left, tradable_at: hold.toISOString() })).toBe('gone');
    expect(await sendItemTradable(atHoldEnd, { account_id: account.accountId, asset_id: kept, tradable_at: hold.toISOString() })).toBe('sent');
    // A second run of the job (a retry, a re-added job) sends nothing more.
    expect(await sendItemTradable(atHoldEnd, { account_id: account.accountId, asset_id: kept, tradable_at: hold.toISOString() })).toBe('already_sent');
    expect(await events<Record<string, unknown>>(account.workspaceId, 'item.tradable')).toEqual([
      {
        account_id: account.accountId,
        steam_id: account.steamId,
        asset_id: kept,
        market_hash_name: 'AWP | Asiimov (Field-Tested)',
        tradable_at: hold.toISOString(),
      },
    ]);
  });
});

describe('the global Steam budget', () => {
  test('two concurrent runs over many accounts stay within the budget, read each account once, oldest snapshot first', async () => {
    const workspaceId = (await workspaceWithKey(t)).workspace.id;
    await subscribedEndpoint(t.deps.sql, workspaceId, ['inventory.changed']);
    const accounts: Watched[] = [];
    for (let i = 0; i < 12; i += 1) accounts.push(await watchedAccount({ workspaceId, specs: [SPECS[i % SPECS.length]!] }));
    // Every other watch of the file is read first (a baseline for all), then the order is set: read_at
    // descending by position, so the last account holds the oldest snapshot.
    await runOnce();
    const ids = accounts.map((account) => account.accountId);
    await t.deps.sql`
      update inventory_watches set read_at = ${clock.now()}::timestamptz - (account_id - ${Math.min(...ids)}) * interval '1 minute'
      where account_id = any(${ids}::bigint[])`;
    await t.deps
      .sql`update inventory_watches set next_read_at = ${new Date(clock.now().getTime() + 10 * INTERVAL_MS)} where not (account_id = any(${ids}::bigint[]))`;
    const mine = new Set(accounts.map((account) => account.steamId));
    const before = fake.inventoryRequests.length;
    clock.advance(INTERVAL_MS);
    const budget = { requests: 4, windowMs: 1_500, marginMs: 150, keyPrefix: `${queuePrefix}-many-${crypto.randomUUID()}` };
    const started = Date.now();
    const runs = await Promise.all([runInventoryWatch(deps(budget), { runForMs: 30_000 }), runInventoryWatch(deps(budget), { runForMs: 30_000 })]);
    const elapsed = Date.now() - started;
    const reads = fake.inventoryRequests.slice(before).filter((request) => mine.has(request.steamId));
    // Each account once, across both runs.
    expect(reads.map((request) => request.steamId).sort()).toEqual([...mine].sort());
    expect(runs.reduce((sum, run) => sum + (run.reads.unchanged ?? 0), 0)).toBe(12);
    // Never more than 4 in any 1.5 s at Steam: 12 reads take at least two windows.
    expect(
      maxInSlidingWindow(
        reads.map((request) => request.at),
        budget.windowMs,
      ),
    ).toBeLessThanOrEqual(4);
    expect(elapsed).toBeGreaterThanOrEqual(2 * budget.windowMs);
    // Oldest snapshot first: the first four admitted are the four oldest (highest account ids).
    const oldestFour = [...accounts]
      .sort((a, b) => b.accountId - a.accountId)
      .slice(0, 4)
      .map((account) => account.steamId);
    expect(
      reads
        .slice(0, 4)
        .map((request) => request.steamId)
        .sort(),
    ).toEqual(oldestFour.sort());
  }, 60_000);

  test('an inventory of several pages costs one unit per page', async () => {
    const workspaceId = (await workspaceWithKey(t)).workspace.id;
    await subscribedEndpoint(t.deps.sql, workspaceId, ['inventory.changed']);
    const specs: ItemSpec[] = Array.from({ length: 4_100 }, () => ({ item: 'Container | Revolution Case' }));
    const big = await watchedAccount({ workspaceId, specs });
    await t.deps.sql`update inventory_watches set next_read_at = ${new Date(clock.now().getTime() + 10 * INTERVAL_MS)} where account_id <> ${big.accountId}`;
    const keyPrefix = `${queuePrefix}-pages-${crypto.randomUUID()}`;
    clock.advance(INTERVAL_MS);
    const run = await runInventoryWatch(deps({ requests: 10, windowMs: 60_000, keyPrefix }), { runForMs: 10_000 });
    expect(run.reads).toEqual({ baseline: 1 });
    // 4 100 assets: pages of 2 000, 2 000 and 100, each one request and one unit of the budget.
    expect(readsOf(big.steamId)).toHaveLength(3);
    expect(await t.deps.redis.zcard(`${keyPrefix}:{steam}:window`)).toBe(3);
  }, 60_000);
});

describe('owner tokens (docs/design.md §17)', () => {
  /** A live owner token for the account, valid 30 days past the test clock. */
  async function withToken(account: Watched): Promise<string> {
    const token = fake.issueAccessToken(account.steamId, new Date(clock.now().getTime() + 30 * 86_400_000));
    await setOwnerToken(t, account.workspaceId, account.accountId, token);
    return token;
  }
  const econReads = (steamId: string) =>
    fake.requests.filter((r) => r.path === '/IEconService/GetInventoryItemsWithDescriptions/v1/' && r.query.steamid === steamId);
  const protectionEvents = (workspaceId: string) => events<Record<string, unknown>>(workspaceId, 'item.protection_ended' as 'item.tradable');

  test('the watch reads both contexts with the token, each page spending the budget; item.protection_ended is scheduled at the instant and sent once', async () => {
    const account = await watchedAccount({ eventTypes: ['inventory.changed', 'item.protection_ended'] });
    const until = new Date(Math.floor(clock.now().getTime() / 60_000) * 60_000 + 2 * 86_400_000);
    fake.protectItems(account.steamId, [account.assetIds[0]!], until);
    await withToken(account);
    await onlyWatch([account.accountId]);
    const budgetBefore = readsOf(account.steamId).length;
    await runOnce();
    expect(econReads(account.steamId).map((r) => r.query.contextid)).toEqual(['2', '16']);
    expect(readsOf(account.steamId).length - budgetBefore).toBe(2);
    const snapshotId = (await watchRow(account.accountId))!.snapshot_id!;
    const [snapshot] = await t.deps.sql<
      { workspace_id: string; contexts: number[] }[]
    >`select workspace_id, contexts from inventory_snapshots where id = ${snapshotId}`;
    expect(snapshot).toEqual({ workspace_id: account.workspaceId, contexts: [2, 16] });

    const job = await queue.getJob(protectionEndedJobId(account.accountId, account.assetIds[0]!));
    expect(job?.data).toEqual({ account_id: account.accountId, asset_id: account.assetIds[0]!, protected_until: until.toISOString() });
    expect(job!.opts.delay).toBe(until.getTime() - clock.now().getTime());

    const payload = job!.data as { account_id: number; asset_id: string; protected_until: string };
    const at = { sql: t.deps.sql, log, now: () => new Date(until.getTime() + 1_000) };
    expect(await sendProtectionEnded(at, payload)).toBe('sent');
    // A retried or duplicated job (BullMQ delivers at least once) sends nothing more.
    expect(await sendProtectionEnded(at, payload)).toBe('already_sent');
    expect(await protectionEvents(account.workspaceId)).toEqual([
      {
        account_id: account.accountId,
        steam_id: account.steamId,
        asset_id: account.assetIds[0]!,
        market_hash_name: expect.any(String),
        at: until.toISOString(),
      },
    ]);
  });

  test('protection extended in a later read: the earlier job finds it still protected; an asset gone or a workspace not subscribed sends nothing', async () => {
    const account = await watchedAccount({ eventTypes: ['item.protection_ended'] });
    const first = new Date(Math.floor(clock.now().getTime() / 60_000) * 60_000 + 86_400_000);
    fake.protectItems(account.steamId, [account.assetIds[0]!], first);
    await withToken(account);
    await onlyWatch([account.accountId]);
    await runOnce();
    const later = new Date(first.getTime() + 3 * 86_400_000);
    fake.protectItems(account.steamId, [account.assetIds[0]!], later);
    await runOnce();
    const at = { sql: t.deps.sql, log, now: () => new Date(first.getTime() + 1_000) };
    expect(await sendProtectionEnded(at, { account_id: account.accountId, asset_id: account.assetIds[0]!, protected_until: first.toISOString() })).toBe(
      'still_protected',
    );
    expect(await sendProtectionEnded(at, { account_id: account.accountId, asset_id: '999999', protected_until: first.toISOString() })).toBe('gone');

    const unsubscribed = await watchedAccount({ eventTypes: ['inventory.changed'] });
    fake.protectItems(unsubscribed.steamId, [unsubscribed.assetIds[0]!], first);
    await withToken(unsubscribed);
    await onlyWatch([unsubscribed.accountId]);
    await runOnce();
    expect(await queue.getJob(protectionEndedJobId(unsubscribed.accountId, unsubscribed.assetIds[0]!))).toBeUndefined();
    expect(
      await sendProtectionEnded(at, { account_id: unsubscribed.accountId, asset_id: unsubscribed.assetIds[0]!, protected_until: first.toISOString() }),
    ).toBe('not_subscribed');
    expect(await protectionEvents(unsubscribed.workspaceId)).toEqual([]);
  });

  test('a token Steam refuses during a watch read is dropped and audited, and that read falls back to the public one', async () => {
    const account = await watchedAccount({ eventTypes: ['inventory.changed'] });
    fake.protectItems(account.steamId, [account.assetIds[0]!], new Date(clock.now().getTime() + 86_400_000));
    const token = await withToken(account);
    fake.revokeAccessToken(token);
    await onlyWatch([account.accountId]);
    const report = await runOnce();
    expect(report.reads.baseline).toBe(1);
    const snapshotId = (await watchRow(account.accountId))!.snapshot_id!;
    const [snapshot] = await t.deps.sql<{ workspace_id: string | null; contexts: number[]; total_assets: number }[]>`
      select workspace_id, contexts, total_assets from inventory_snapshots where id = ${snapshotId}`;
    expect(snapshot).toEqual({ workspace_id: null, contexts: [2], total_assets: 2 });
    expect(await t.deps.sql`select 1 from gameplatform_steam_tokens where account_id = ${account.accountId}`).toHaveLength(0);
    const audit = await t.deps.sql<{ metadata: { reason: string } }[]>`
      select metadata from audit_events where workspace_id = ${account.workspaceId} and event_type = 'steam_token.dropped'`;
    expect(audit.map((row) => row.metadata.reason)).toEqual(['refused']);
  });
});

describe("the Steam fake's inventory controls over HTTP (what `npm start` users drive)", () => {
  test('add, trade, end a hold, remove, fail and go private through POST /_control/inventories/<steamid>', async () => {
    const steamId = nextSteamId();
    fake.setInventory(steamId, inventoryOf(steamId, SPECS, 51_000_000_000n));
    const control = async (body: unknown) => {
      const response = await fetch(`${fake.url}/_control/inventories/${steamId}`, { method: 'POST', body: JSON.stringify(body) });
      expect(response.status).toBe(200);
      return (await response.json()) as { asset_ids: string[]; added: string[]; traded: string[] };
    };
    const page = async () =>
      (await fetch(`${fake.url}/inventory/${steamId}/730/2?l=english&count=2000`)).json() as Promise<{
        assets: { assetid: string }[];
        descriptions: { tradable: number }[];
      }>;
    const before = fake.assetIds(steamId);
    const hold = new Date(Date.now() + 86_400_000).toISOString();
    const { added } = await control({ add: [{ item: 'AWP | Asiimov', wear: 0.3, seed: 3, tradeHoldUntil: hold }] });
    expect((await page()).assets.map((asset) => asset.assetid)).toEqual([...added, ...before]);
    const { traded } = await control({ trade: [before[0]] });
    expect(traded[0]! > added[0]!).toBe(true);
    await control({ end_holds: added, remove: [before[1]] });
    const after = await page();
    expect(after.assets.map((asset) => asset.assetid).sort()).toEqual([...traded, ...added, before[2]!].sort());
    expect(after.descriptions.every((description) => description.tradable === 1)).toBe(true);
    await control({ fail: { status: 503, times: 1 } });
    expect((await fetch(`${fake.url}/inventory/${steamId}/730/2?l=english&count=2000`)).status).toBe(503);
    await control({ visibility: 'private' });
    expect((await fetch(`${fake.url}/inventory/${steamId}/730/2?l=english&count=2000`)).status).toBe(403);
    await control({ visibility: 'public' });
    expect((await page()).assets).toHaveLength(3);
  });
});
