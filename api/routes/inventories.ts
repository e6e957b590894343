import { Elysia } from 'elysia';
import { z } from 'zod';
import { inventoryPageSchema } from '../../shared/gameplatform/inventory/asset-record.ts';
import { type InventorySnapshot, snapshotVisibleTo } from '../../shared/gameplatform/inventory/snapshots.ts';
import { encodedInventoryPage } from '../../shared/gameplatform/inventory-cache.ts';
import { steamApiError } from '../../shared/gameplatform/steam-client.ts';
import { decodeCursor, encodeCursor } from '../../shared/http/cursor.ts';
import { errors } from '../../shared/http/errors.ts';
import { pageCursor, pageLimit } from '../../shared/http/validation.ts';
import { currencyParam, resolveConversion } from '../../shared/prices/currency.ts';
import { negotiateEncoding } from '../content-negotiation.ts';
import type { AppDeps } from '../deps.ts';
import { routeResponses } from '../openapi.ts';
import { type ApiKeyPluginDeps, apiKeyPlugin } from '../plugins/api-key.ts';
import { marketplaceField } from '../segment-filter.ts';
import { checkGameplatformId, gameplatformIdParams } from './profiles.ts';

export const INVENTORY_LIMIT_MAX = 1000;
export const INVENTORY_LIMIT_DEFAULT = 500;

const inventoryQuery = z
  .object({
    limit: pageLimit({ max: INVENTORY_LIMIT_MAX, default: INVENTORY_LIMIT_DEFAULT }),
    cursor: pageCursor,
    refresh: z
      .enum(['true', 'false'], { error: (issue) => `expected true or false, got ${JSON.stringify(issue.input)}` })
      .default('false')
      .describe('true: fetch a new snapshot from Steam now (ignored with a cursor, which pins its snapshot)'),
    valuation: marketplaceField
      .optional()
      .describe(
        'Value each asset, its stickers and charms at this marketplace’s latest prices (docs/design.md §14: the phase version, no fallback to default)',
      ),
    currency: currencyParam.optional(),
  })
  .strict();

type InventoryPosition = { s: string; p: number };
// Pinned snapshot and the last position served: later pages come from that snapshot only.
const inventoryPosition: z.ZodType<InventoryPosition> = z.object({ s: z.uuid(), p: z.number().int().min(0).max(1_000_000) });

export function inventoryRoutes(deps: Pick<AppDeps, 'config' | 'sql' | 'log' | 'now' | 'inventories'> & ApiKeyPluginDeps) {
  const signingKey = deps.config.SIGNING_KEY!;
  const ttlMs = deps.config.INVENTORY_TTL_SECONDS * 1000;
  return new Elysia({ name: 'inventory-routes' }).use(apiKeyPlugin(deps)).get(
    '/v2/inventories/:gameplatform_id',
    async ({ params, query, set, request, principal }) => {
      const workspaceId = principal.workspace.id;
      const steamId = params.gameplatform_id; // the SteamID64 (checkGameplatformId)
      const conversion = query.valuation ? await resolveConversion(deps.sql, query.currency) : null;
      // docs/interface.md §4: the cursor binds the inventory it pages (limit and valuation may change between pages).
      const filters = { steam_id: steamId };
      let snapshot: InventorySnapshot;
      let stale: boolean;
      let after = -1;
      if (query.cursor) {
        const position = decodeCursor(signingKey, 'inventory', filters, query.cursor, inventoryPosition);
        const pinned = await deps.inventories.pinned(position.s);
        // A snapshot another workspace's owner token read is never served here (docs/design.md §17), cursor or not.
        if (!pinned || pinned.steam_id !== steamId || !snapshotVisibleTo(pinned, workspaceId)) throw errors.invalidCursor();
        snapshot = pinned;
        stale = false;
        after = position.p;
      } else {
        try {
          ({ snapshot, stale } = await deps.inventories.latest(steamId, {
            maxAgeSeconds: deps.config.INVENTORY_TTL_SECONDS,
            refresh: query.refresh === 'true',
            workspaceId,
          }));
        } catch (error) {
          throw steamApiError(error, 'inventory_not_found');
        }
      }
      stale ||= deps.now().getTime() - snapshot.fetched_at.getTime() >= ttlMs;
      const served = snapshot;
      const page = await deps.inventories.page(served, {
        afterPosition: after,
        limit: query.limit,
        valuation: query.valuation,
        conversion,
        nextCursor: (position) => encodeCursor<InventoryPosition>(signingKey, 'inventory', filters, { s: served.id, p: position }),
      });
      set.headers['content-type'] = 'application/json';
      set.headers.vary = 'Accept-Encoding';
      const coding = negotiateEncoding(request.headers.get('accept-encoding'));
      if (coding !== 'identity') set.headers['content-encoding'] = coding;
      return encodedInventoryPage(page, stale, coding);
    },
    {
      operation: 'inventories.get',
      params: gameplatformIdParams,
      query: inventoryQuery,
      transform: checkGameplatformId,
      detail: {
        summary: 'A CS2 inventory, one record per asset',
        description: [
          "The account's CS2 inventory from a snapshot: one record per asset with its exact item state (from its inspect certificate: paint, seed, wear, stickers, charms), tradability and trade hold. A snapshot younger than `INVENTORY_TTL_SECONDS` (default 300) is reused; `refresh=true` fetches a new one from Steam now (at most `INVENTORY_MAX_PAGES` pages of 2 000 assets). When Steam fails, the last snapshot is served with `stale: true`. A cursor pins its snapshot, so every page comes from the same one.",
          "When your workspace has connected this Steam account and set its owner token (`PUT /v2/gameplatform/accounts/{account_id}/steam-token`), the snapshot is read with the token from both inventory contexts, 2 and 16, so trade-protected items and Community Market listings are included (`contexts: [2, 16]`, `protection` on each record); that snapshot is your workspace's alone. Otherwise, and for every other workspace, it is the public read of context 2 (`contexts: [2]`: protected items are absent). A token Steam refuses is dropped (audit event `steam_token.dropped`) and the public read serves.",
          "`valuation` values each asset, its stickers and charms at that marketplace's latest prices (the phase version, no fallback to default); `currency` converts the valuation. Answers are compressed with gzip or brotli when the client accepts it.",
          '`limit` 1 to 1000 (default 500).',
          'Errors: 400 `invalid_gameplatform_id`, 400 `invalid_request`, 400 `invalid_cursor`, 403 `inventory_private`, 404 `inventory_not_found`, 503 `upstream_unavailable` (Steam fails and nothing is stored; `Retry-After`), 503 `fx_unavailable`.',
        ].join('\n\n'),
        tags: ['game platform'],
        responses: routeResponses({ 200: { description: 'One page of the snapshot', body: inventoryPageSchema } }, 404, 503),
      },
    },
  );
}
