import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { Webhook } from 'standardwebhooks';
import { insertOrFindLiveAccount } from '../../shared/gameplatform/accounts.ts';
import { createLogger } from '../../shared/platform/logger.ts';
import { loadPools } from '../../workers/pools.ts';
import { type RunningPools, startPools } from '../../workers/runtime.ts';
import { inventoryOf, type SteamFake, startSteamFake } from '../fakes/steam/server.ts';
import { eventually, scratchTestApp, type TestApp, workspaceWithKey } from '../helpers.ts';
import { createWebhook, type Receiver, removeQueueKeys, startReceiver, uniquePath, WEBHOOK_KEY_A } from '../webhooks/webhooks-fixtures.ts';

/**
 * docs/design.md §15 inventory watch through the real pools: the maintenance pool (its schedule, a 1 s
 * watch interval, the delayed item.tradable job) and the webhooks pool deliver to a receiver over
 * HTTP, signed (standardwebhooks verifies). Two maintenance pools run at once (scale-out): each
 * change is still read once per interval and sent once. Real time throughout (no injected clock).
 */

const queuePrefix = `iwpool${process.pid}`;
const log = createLogger({ level: 'silent', name: 'inventory-watch-pool-test' });
const STEAM_ID = '76561198111222333';
let fake: SteamFake;
let t: TestApp;
let receiver: Receiver;
const running: RunningPools[] = [];

beforeAll(async () => {
  fake = await startSteamFake();
  receiver = startReceiver();
  t = await scratchTestApp({
    tag: 'inventory_watch_pool',
    config: {
      STEAM_API_URL: fake.url,
      STEAM_COMMUNITY_URL: fake.url,
      STEAM_WEB_API_KEY: fake.apiKey,
      INVENTORY_WATCH_INTERVAL_SECONDS: '1',
      STEAM_INVENTORY_REQUESTS_PER_MINUTE: '600',
      QUEUE_PREFIX: queuePrefix,
      WEBHOOK_SECRET_KEY: WEBHOOK_KEY_A,
      WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
      WEBHOOK_TIMEOUT_MS: '2000',
    },
  });
}, 60_000);

afterAll(async () => {
  for (const pools of running) await pools.stop(10_000);
  await removeQueueKeys(process.env.REDIS_URL!, queuePrefix);
  await t?.close();
  await receiver?.stop();
  await fake?.stop();
}, 60_000);

type Delivered = { id: string; type: string; data: Record<string, unknown> };

describe('inventory watch through the maintenance and webhooks pools', () => {
  test('baseline silent; an added item with a short trade hold is delivered as inventory.changed, then item.tradable once when the hold ends', async () => {
    const ws = await workspaceWithKey(t, { scopes: ['webhooks:read', 'webhooks:write'] });
    const path = uniquePath('inventory-watch');
    const webhook = await createWebhook(t, ws.key, { url: receiver.url(path), event_types: ['inventory.changed', 'item.tradable'] });
    fake.setInventory(STEAM_ID, inventoryOf(STEAM_ID, [{ item: 'AK-47 | Redline', wear: 0.2, seed: 1 }], 55_000_000_000n));
    const { account } = await insertOrFindLiveAccount(t.deps.sql, {
      workspaceId: ws.workspace.id,
      steamId: STEAM_ID,
      personaName: null,
      connectedAt: new Date(),
    });

    const [maintenance, webhooks] = await loadPools(['maintenance', 'webhooks']);
    running.push(await startPools([maintenance!, webhooks!], t.deps.config, log));
    running.push(await startPools([maintenance!], t.deps.config, log));

    // The baseline: read, stored, nothing sent.
    await eventually(
      async () =>
        (await t.deps.sql`select 1 from inventory_watches where account_id = ${account.account_id} and snapshot_id is not null`).length === 1
          ? true
          : undefined,
      30_000,
      100,
    );
    const reads = () => fake.inventoryRequests.filter((request) => request.steamId === STEAM_ID).length;
    // Read again at least once (every second) while nothing changed: nothing is sent.
    const afterBaseline = reads();
    await eventually(async () => (reads() >= afterBaseline + 2 ? true : undefined), 30_000, 100);
    expect(receiver.received(path)).toEqual([]);

    // Steam's hold text has whole seconds: a hold at least 3 s away.
    const hold = new Date(Math.ceil((Date.now() + 3_000) / 1000) * 1000 + 1000);
    const [assetId] = fake.addItems(STEAM_ID, [{ item: 'AWP | Asiimov', wear: 0.3, seed: 2, tradeHoldUntil: hold }]);
    const verifier = new Webhook(webhook.secret);
    const delivered = () => receiver.received(path).map((request) => verifier.verify(request.body, request.headers) as Delivered);

    const changed = await eventually(async () => delivered().find((event) => event.type === 'inventory.changed'), 30_000, 100);
    expect(changed.data).toMatchObject({ account_id: account.account_id, steam_id: STEAM_ID, removed: [] });
    expect((changed.data.added as { asset_id: string; trade_hold_until: string }[]).map((asset) => [asset.asset_id, asset.trade_hold_until])).toEqual([
      [assetId!, hold.toISOString()],
    ]);

    const tradable = await eventually(async () => delivered().find((event) => event.type === 'item.tradable'), 30_000, 100);
    expect(Date.now()).toBeGreaterThanOrEqual(hold.getTime());
    expect(tradable.data).toEqual({
      account_id: account.account_id,
      steam_id: STEAM_ID,
      asset_id: assetId!,
      market_hash_name: 'AWP | Asiimov (Field-Tested)',
      tradable_at: hold.toISOString(),
    });

    // Reads go on (the snapshots still show the hold); one inventory.changed and one item.tradable in all.
    const settled = reads();
    await eventually(async () => (reads() >= settled + 2 ? true : undefined), 30_000, 100);
    const types = delivered().map((event) => event.type);
    expect(types.filter((type) => type === 'inventory.changed')).toHaveLength(1);
    expect(types.filter((type) => type === 'item.tradable')).toHaveLength(1);
  }, 90_000);
});
