import type { InventoryAsset } from '../../shared/gameplatform/inventory/asset-record.ts';
import { setSteamToken } from '../../shared/gameplatform/steam-token.ts';
import { SecretKeyring } from '../../shared/webhooks/secrets.ts';
import type { TestApp } from '../helpers.ts';

/** One page of GET /v2/inventories/{id} as the inventory suites read it. */
export type InventoryPageBody = {
  steam_id: string;
  snapshot_id: string;
  contexts: number[];
  total_assets: number;
  data: InventoryAsset[];
  next_cursor: string | null;
};

/** GET /v2/inventories/{id} with `key`; anything but a 200 fails the test with its body. */
export async function inventoryPage(t: TestApp, key: string, id: string, query: Record<string, string> = {}): Promise<InventoryPageBody> {
  const search = new URLSearchParams(query).toString();
  const response = await t.request(`/v2/inventories/${id}${search ? `?${search}` : ''}`, { headers: { 'x-api-key': key } });
  if (response.status !== 200) throw new Error(`inventory failed: ${response.status} ${await response.text()}`);
  return (await response.json()) as InventoryPageBody;
}

/**
 * Stores `token` as the owner token of a connected account (docs/design.md §17) through the domain function
 * PUT …/steam-token calls, for suites whose keys lack `accounts:write`. The app's configuration
 * needs WEBHOOK_SECRET_KEY.
 */
export async function setOwnerToken(t: TestApp, workspaceId: string, accountId: number | string, token: string): Promise<void> {
  await setSteamToken(t.deps.sql, SecretKeyring.fromConfig(t.deps.config), String(accountId), token, {
    workspaceId,
    actor: { type: 'system', id: null },
    requestId: 'test',
    now: t.deps.now(),
  });
}
