import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { Writable } from 'node:stream';
import { insertOrFindLiveAccount } from '../../shared/gameplatform/accounts.ts';
import { createLogger } from '../../shared/platform/logger.ts';
import { bigInventory, type ItemSpec, inventoryOf, type SteamFake, startSteamFake } from '../fakes/steam/server.ts';
import { createTestApp, errorOf, type TestApp, workspaceWithKey } from '../helpers.ts';
import { inventoryPage, setOwnerToken } from './inventory-fixtures.ts';

/**
 * docs/design.md §17 owner-token inventory reads through the API, over real Postgres and Redis with Steam
 * played by the fake: a workspace holding a live token for a connected account reads both contexts
 * (2 and 16) through IEconService/GetInventoryItemsWithDescriptions and merges them into one
 * snapshot of its own; every other workspace gets the public read of context 2 (its own cache entry,
 * never a record only the token could see); a token Steam refuses is dropped, audited, and the
 * public read serves; Steam failing keeps the token. The token never appears in a log line.
 */

let fake: SteamFake;
let t: TestApp;
const logLines: string[] = [];
const sink = new Writable({
  write(chunk, _encoding, done) {
    logLines.push(String(chunk));
    done();
  },
});
const issued: string[] = [];

beforeAll(async () => {
  fake = await startSteamFake();
  t = createTestApp({
    config: {
      STEAM_COMMUNITY_URL: fake.url,
      STEAM_API_URL: fake.url,
      STEAM_WEB_API_KEY: fake.apiKey,
      WEBHOOK_SECRET_KEY: Buffer.alloc(32, 3).toString('base64'),
    },
    log: createLogger({ level: 'trace', name: 'test' }, sink),
  });
  await t.deps.ready();
});
afterAll(async () => {
  // Whatever a test did, no token it handed over may show up in the service's logs.
  const logged = logLines.join('');
  for (const token of issued) expect(logged).not.toContain(token);
  await t.close();
  await fake.stop();
});

let steamCounter = 0;
const nextSteamId = () => String(76561198200000000n + BigInt(process.pid % 1000) * 10_000n + BigInt((steamCounter += 1)));

const SPECS: ItemSpec[] = [
  { item: 'AK-47 | Redline', wear: 0.2, seed: 1 },
  { item: 'AWP | Asiimov', wear: 0.3, seed: 2 },
  { item: 'Container | Revolution Case' },
];

/** The owner read renders the instant in the year-less form (minute precision): whole minutes, 5 days on. */
const protectedUntil = () => new Date(Math.floor(Date.now() / 60_000) * 60_000 + 5 * 86_400_000);

type Owner = { key: string; workspaceId: string; accountId: string; steamId: string; token: string };

/** A workspace with a connected account for a fresh inventory of `specs`, its first asset trade-protected, and a live owner token. */
async function ownerWithToken(specs: ItemSpec[] = SPECS, until = protectedUntil()): Promise<Owner & { protectedId: string; until: Date }> {
  const { key, workspace } = await workspaceWithKey(t);
  const steamId = nextSteamId();
  fake.setInventory(steamId, inventoryOf(steamId, specs, 81_000_000_000n + BigInt(steamCounter) * 1_000n));
  const [protectedId] = fake.assetIds(steamId);
  fake.protectItems(steamId, [protectedId!], until);
  const { account } = await insertOrFindLiveAccount(t.deps.sql, { workspaceId: workspace.id, steamId, personaName: null, connectedAt: new Date() });
  const token = fake.issueAccessToken(steamId);
  issued.push(token);
  await setOwnerToken(t, workspace.id, account.account_id, token);
  return { key, workspaceId: workspace.id, accountId: String(account.account_id), steamId, token, protectedId: protectedId!, until };
}

const econCalls = (steamId: string) =>
  fake.requests.filter((r) => r.path === '/IEconService/GetInventoryItemsWithDescriptions/v1/' && r.query.steamid === steamId);
const communityCalls = (steamId: string) => fake.requests.filter((r) => r.path === `/inventory/${steamId}/730/2`);

async function tokenOf(accountId: string): Promise<{ expires_at: Date } | null> {
  const [row] = await t.deps.sql<{ expires_at: Date }[]>`select expires_at from gameplatform_steam_tokens where account_id = ${accountId}::bigint`;
  return row ?? null;
}

async function droppedEvents(workspaceId: string): Promise<{ metadata: Record<string, unknown>; actor_type: string }[]> {
  return t.deps.sql<{ metadata: Record<string, unknown>; actor_type: string }[]>`
    select metadata, actor_type from audit_events where workspace_id = ${workspaceId} and event_type = 'steam_token.dropped' order by occurred_at`;
}

describe('with a live owner token', () => {
  test('the inventory holds contexts 2 and 16 in one snapshot, read through IEconService only, protected items marked from context 16', async () => {
    const owner = await ownerWithToken();
    const body = await inventoryPage(t, owner.key, owner.steamId);
    expect(body.contexts).toEqual([2, 16]);
    expect(body.total_assets).toBe(3);
    const record = body.data.find((asset) => asset.asset_id === owner.protectedId)!;
    expect(record.protection).toEqual({ protected: true, reason: 'trade_protected', until: owner.until.toISOString(), context: 16 });
    expect(record.trade_hold_until).toBe(owner.until.toISOString());
    expect(record.tradable).toBe(false);
    for (const other of body.data.filter((asset) => asset.asset_id !== owner.protectedId)) expect(other.protection.context).toBe(2);
    expect(econCalls(owner.steamId).map((call) => call.query.contextid)).toEqual(['2', '16']);
    expect(econCalls(owner.steamId).every((call) => call.query.get_asset_properties === 'true' && call.query.get_descriptions === 'true')).toBe(true);
    expect(communityCalls(owner.steamId)).toEqual([]);
  });

  test('another workspace reading the same SteamID gets the public read, its own snapshot, and never the token’s records; cursors do not cross', async () => {
    const owner = await ownerWithToken();
    const mine = await inventoryPage(t, owner.key, owner.steamId, { limit: '1' });
    const other = await workspaceWithKey(t);
    const theirs = await inventoryPage(t, other.key, owner.steamId);
    expect(theirs.contexts).toEqual([2]);
    expect(theirs.snapshot_id).not.toBe(mine.snapshot_id);
    expect(theirs.data.map((asset) => asset.asset_id)).not.toContain(owner.protectedId);
    expect(theirs.total_assets).toBe(2);
    expect(communityCalls(owner.steamId)).toHaveLength(1);
    // The owner workspace's cached snapshot is still its own.
    expect((await inventoryPage(t, owner.key, owner.steamId)).snapshot_id).toBe(mine.snapshot_id);
    // A cursor into the owner's snapshot is refused elsewhere, even though it is validly signed.
    const crossed = await t.request(`/v2/inventories/${owner.steamId}?cursor=${encodeURIComponent(mine.next_cursor!)}`, {
      headers: { 'x-api-key': other.key },
    });
    expect(crossed.status).toBe(400);
    expect((await errorOf(crossed)).code).toBe('invalid_cursor');
    // The owner pages on with it.
    const next = await inventoryPage(t, owner.key, owner.steamId, { limit: '1', cursor: mine.next_cursor! });
    expect(next.snapshot_id).toBe(mine.snapshot_id);
  });

  test('a 5 000-asset inventory is paged in both contexts (start_assetid while more_items) and merged', async () => {
    const { key, workspace } = await workspaceWithKey(t);
    const steamId = nextSteamId();
    fake.setInventory(steamId, bigInventory(steamId, 5_000));
    const protectedIds = fake.assetIds(steamId).slice(0, 3);
    fake.protectItems(steamId, protectedIds, protectedUntil());
    const { account } = await insertOrFindLiveAccount(t.deps.sql, { workspaceId: workspace.id, steamId, personaName: null, connectedAt: new Date() });
    const token = fake.issueAccessToken(steamId);
    issued.push(token);
    await setOwnerToken(t, workspace.id, account.account_id, token);
    const body = await inventoryPage(t, key, steamId, { limit: '1000' });
    expect(body.total_assets).toBe(5_000);
    const calls = econCalls(steamId);
    expect(calls.filter((call) => call.query.contextid === '2').map((call) => call.query.start_assetid ?? null)).toHaveLength(3);
    expect(calls.filter((call) => call.query.contextid === '16')).toHaveLength(1);
    const [row] = await t.deps.sql<{ protected_count: number }[]>`
      select count(*)::int as protected_count from inventory_assets where snapshot_id = ${body.snapshot_id} and record->'protection'->>'context' = '16'`;
    expect(row!.protected_count).toBe(3);
  });
});

describe('when Steam refuses or fails', () => {
  test('a revoked token (401) is dropped and audited, the public read serves, no 5xx, and the account shows no token', async () => {
    const owner = await ownerWithToken();
    fake.revokeAccessToken(owner.token);
    const body = await inventoryPage(t, owner.key, owner.steamId);
    expect(body.contexts).toEqual([2]);
    expect(body.data.map((asset) => asset.asset_id)).not.toContain(owner.protectedId);
    expect(await tokenOf(owner.accountId)).toBeNull();
    const events = await droppedEvents(owner.workspaceId);
    expect(events).toHaveLength(1);
    expect(events[0]!.actor_type).toBe('system');
    expect(events[0]!.metadata).toMatchObject({ steam_id: owner.steamId, reason: 'refused' });
    expect(JSON.stringify(events)).not.toContain(owner.token);
  });

  test('a 403 on the owner read drops the token the same way', async () => {
    const owner = await ownerWithToken();
    fake.failNext('inventory', { status: 403, steamId: owner.steamId });
    const body = await inventoryPage(t, owner.key, owner.steamId);
    expect(body.contexts).toEqual([2]);
    expect(await tokenOf(owner.accountId)).toBeNull();
    expect((await droppedEvents(owner.workspaceId)).map((event) => event.metadata.reason)).toEqual(['refused']);
  });

  test('Steam 5xx or 429 on the owner read keeps the token: the workspace’s last owner snapshot is served stale, or 503 with Retry-After when there is none', async () => {
    const owner = await ownerWithToken();
    fake.failNext('inventory', { status: 503, steamId: owner.steamId });
    const none = await t.request(`/v2/inventories/${owner.steamId}`, { headers: { 'x-api-key': owner.key } });
    expect(none.status).toBe(503);
    expect((await errorOf(none)).code).toBe('upstream_unavailable');
    expect(Number(none.headers.get('retry-after'))).toBeGreaterThan(0);
    const good = await inventoryPage(t, owner.key, owner.steamId);
    expect(good.contexts).toEqual([2, 16]);
    fake.failNext('inventory', { status: 429, retryAfter: 60, steamId: owner.steamId });
    const stale = await t.request(`/v2/inventories/${owner.steamId}?refresh=true`, { headers: { 'x-api-key': owner.key } });
    expect(stale.status).toBe(200);
    const staleBody = (await stale.json()) as { stale: boolean; snapshot_id: string; contexts: number[] };
    expect(staleBody).toMatchObject({ stale: true, snapshot_id: good.snapshot_id, contexts: [2, 16] });
    expect(await tokenOf(owner.accountId)).not.toBeNull();
    expect(await droppedEvents(owner.workspaceId)).toEqual([]);
  });

  test('an expired token is dropped (reason expired) before any Steam call, and the public read serves', async () => {
    const owner = await ownerWithToken();
    await t.deps.sql`update gameplatform_steam_tokens set expires_at = now() - interval '1 second' where account_id = ${owner.accountId}::bigint`;
    const before = econCalls(owner.steamId).length;
    const body = await inventoryPage(t, owner.key, owner.steamId);
    expect(body.contexts).toEqual([2]);
    expect(econCalls(owner.steamId)).toHaveLength(before);
    expect((await droppedEvents(owner.workspaceId)).map((event) => event.metadata.reason)).toEqual(['expired']);
  });
});
