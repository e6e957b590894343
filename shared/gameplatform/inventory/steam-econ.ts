import type { Config } from '../../platform/config.ts';
import { joinUrl } from '../../util/url.ts';
import {
  DEFAULT_RETRY_AFTER_MS,
  isObject,
  parseSteamJson,
  SteamNotFoundError,
  type SteamRequestOptions,
  SteamUnavailableError,
  steamFailure,
  steamGet,
} from '../steam-client.ts';
import {
  type ContextPages,
  type FetchPagesOptions,
  fetchInventoryPages,
  INVENTORY_CONTEXTS,
  INVENTORY_FETCH_BUDGET_MS,
  INVENTORY_PAGE_SIZE,
  type InventoryContext,
  type InventoryFetchDeps,
  type InventoryPage,
  type InventoryRead,
  type PageFetcher,
} from './steam-community.ts';

/**
 * The owner's inventory read (docs/design.md §17): `IEconService/GetInventoryItemsWithDescriptions/v1` with
 * the account's owner access token, one context (2, or 16: trade-protected items and Community
 * Market listings) at a time. Its records are the community inventory's, wrapped in `response`:
 *   {"response":{"assets":[{"appid":730,"contextid":"16","assetid":"…",…}],"descriptions":[…],
 *    "asset_properties":[…],"total_inventory_count":3,"more_items":1,"last_assetid":"…"}}
 * An empty context answers `{"response":{}}` or `{"response":{"total_inventory_count":0}}`. The
 * method has no `preserve_bbcode` parameter (its request message is CEcon_GetInventoryItemsWithDescriptions_Request:
 * steamid, appid, contextid, get_descriptions, language, filters, start_assetid, count,
 * get_asset_properties), so holds may come as rendered dates: holds.ts reads every form.
 *
 * The token goes in the query string (Steam's only way); the URL is never logged, and errors name
 * the status, never the request.
 */

/** Steam refused the token (401, or 403: revoked, expired early, another account's): the caller drops it. */
export class SteamTokenRefusedError extends Error {
  constructor(readonly status: number) {
    super(`steam refused the owner access token (HTTP ${status})`);
    this.name = 'SteamTokenRefusedError';
  }
}

/** One page of one context read with the owner's token, after `startAssetId` when given. */
export async function fetchOwnerInventoryPage(
  config: Config,
  token: string,
  steamId64: string,
  context: InventoryContext,
  startAssetId: string | null,
  options: SteamRequestOptions,
): Promise<InventoryPage> {
  const query = new URLSearchParams({
    access_token: token,
    steamid: steamId64,
    appid: '730',
    contextid: String(context),
    get_descriptions: 'true',
    get_asset_properties: 'true',
    language: 'english',
    count: String(INVENTORY_PAGE_SIZE),
  });
  if (startAssetId !== null) query.set('start_assetid', startAssetId);
  const raw = await steamGet(joinUrl(config.STEAM_API_URL, `IEconService/GetInventoryItemsWithDescriptions/v1/?${query}`), options);
  if (raw.status === 401 || raw.status === 403) throw new SteamTokenRefusedError(raw.status);
  if (raw.status === 404) throw new SteamNotFoundError('inventory');
  if (raw.status < 200 || raw.status > 299) throw steamFailure(raw, options);
  const body = parseSteamJson(raw);
  const response = isObject(body) ? body.response : undefined;
  if (!isObject(response)) throw new SteamUnavailableError('unexpected body (no response object)', DEFAULT_RETRY_AFTER_MS);
  for (const field of ['assets', 'descriptions', 'asset_properties'] as const) {
    if (response[field] !== undefined && !Array.isArray(response[field]))
      throw new SteamUnavailableError(`unexpected body (response.${field} is not an array)`, DEFAULT_RETRY_AFTER_MS);
  }
  return response as InventoryPage;
}

/**
 * Both contexts of the owner's inventory with the token (2, then 16), every page of each, within
 * one wall-clock budget for the whole read. A context Steam reports missing (404) is empty for 16
 * (an account that never received a protected item), an error for 2. SteamTokenRefusedError
 * propagates: the caller drops the token and falls back to the public read.
 */
export async function ownerInventoryRead(
  deps: InventoryFetchDeps,
  steamId64: string,
  owner: { workspaceId: string; token: string },
  budgetMs = INVENTORY_FETCH_BUDGET_MS,
  options: Omit<FetchPagesOptions, 'fetchPage'> = {},
): Promise<InventoryRead> {
  const deadline = Date.now() + budgetMs;
  const contexts: ContextPages[] = [];
  for (const context of INVENTORY_CONTEXTS) {
    const fetchPage: PageFetcher = (start, request) => fetchOwnerInventoryPage(deps.config, owner.token, steamId64, context, start, request);
    try {
      contexts.push({ context, pages: await fetchInventoryPages(deps, steamId64, Math.max(0, deadline - Date.now()), { ...options, fetchPage }) });
    } catch (error) {
      if (context === 16 && error instanceof SteamNotFoundError) {
        contexts.push({ context, pages: [] });
        continue;
      }
      throw error;
    }
  }
  return { workspaceId: owner.workspaceId, contexts };
}
