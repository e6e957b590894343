import type { Config } from '../../platform/config.ts';
import { joinUrl } from '../../util/url.ts';
import {
  DEFAULT_RETRY_AFTER_MS,
  isObject,
  parseSteamJson,
  SteamNotFoundError,
  SteamPrivateError,
  type SteamRequestOptions,
  SteamUnavailableError,
  steamFailure,
  steamGet,
} from '../steam-client.ts';

/**
 * The Steam community inventory (docs/design.md §11): the page format as Steam sends it, one page's raw read,
 * and the read of every page of an inventory within a time budget. Nothing here knows our records:
 * normalise.ts turns pages into them.
 */

/**
 * One page of `/inventory/{steamid}/730/2?l=english&count=2000&preserve_bbcode=1`, fields as upstream
 * names them (unchecked beyond the top level), e.g.
 *   {"assets":[{"appid":730,"contextid":"2","assetid":"41234567890","classid":"310776560","instanceid":"302028390","amount":"1"}],
 *    "descriptions":[{"classid":"310776560","instanceid":"302028390","market_hash_name":"AK-47 | Redline (Field-Tested)","tradable":0,
 *      "owner_descriptions":[{"type":"bbcode","value":"⇆ This item is trade-protected and cannot be consumed, modified, or transferred until [date]1786384800[/date]"}],"sealed":1, …}],
 *    "asset_properties":[…],"total_inventory_count":1,"success":1,"rwgrsn":-2}
 */
export type InventoryPage = {
  assets?: unknown[];
  descriptions?: unknown[];
  asset_properties?: unknown[];
  total_inventory_count?: number;
  more_items?: number | boolean;
  last_assetid?: string;
};

export const INVENTORY_PAGE_SIZE = 2000;

/** The inventory contexts an asset is read from: 2 (the public one) and 16 (protected items, read with an owner token). */
export const INVENTORY_CONTEXTS = [2, 16] as const;
export type InventoryContext = (typeof INVENTORY_CONTEXTS)[number];

/** The pages of one inventory context (docs/design.md §17: 2 the tradable inventory, 16 protected items and market listings). */
export type ContextPages = { context: InventoryContext; pages: InventoryPage[] };

/**
 * One whole inventory read, ready to normalise: the public read (`workspaceId` null, context 2
 * only) or an owner-token read for that workspace (contexts 2 and 16: steam-econ.ts).
 */
export type InventoryRead = { workspaceId: string | null; contexts: ContextPages[] };

/** Pages of the public community read as an InventoryRead. */
export const publicRead = (pages: InventoryPage[]): InventoryRead => ({ workspaceId: null, contexts: [{ context: 2, pages }] });

/**
 * One page of a CS2 inventory (app 730, context 2), starting after `startAssetId` when given.
 * 403 → SteamPrivateError, 404 → SteamNotFoundError, 429/5xx/garbage → SteamUnavailableError.
 */
export async function fetchInventoryPage(config: Config, steamId64: string, startAssetId: string | null, options: SteamRequestOptions): Promise<InventoryPage> {
  // preserve_bbcode=1 (docs/design.md §17): hold and protection text keeps Steam's `[date]<unix>[/date]` token,
  // the exact instant, instead of a date rendered in a format Steam changes (it did on 2026-06-24).
  const query = new URLSearchParams({ l: 'english', count: String(INVENTORY_PAGE_SIZE), preserve_bbcode: '1' });
  if (startAssetId !== null) query.set('start_assetid', startAssetId);
  const raw = await steamGet(joinUrl(config.STEAM_COMMUNITY_URL, `inventory/${steamId64}/730/2?${query}`), options);
  if (raw.status === 403) throw new SteamPrivateError();
  if (raw.status === 404) throw new SteamNotFoundError('inventory');
  if (raw.status < 200 || raw.status > 299) throw steamFailure(raw, options);
  const body = parseSteamJson(raw);
  if (!isObject(body)) throw new SteamUnavailableError('unexpected body (not an object)', DEFAULT_RETRY_AFTER_MS);
  // Steam answers `{success: false}` (or 1/0) on internal trouble with a 200 or 500.
  if (body.success !== undefined && body.success !== 1 && body.success !== true) {
    throw new SteamUnavailableError('upstream reported success: false', DEFAULT_RETRY_AFTER_MS);
  }
  for (const field of ['assets', 'descriptions', 'asset_properties'] as const) {
    if (body[field] !== undefined && !Array.isArray(body[field]))
      throw new SteamUnavailableError(`unexpected body (${field} is not an array)`, DEFAULT_RETRY_AFTER_MS);
  }
  return body as InventoryPage;
}

/** Numbers Steam sends as strings or as numbers (asset ids, class ids, counts), as a string. */
export const stringOf = (value: unknown): string | null =>
  typeof value === 'string' ? value : typeof value === 'number' && Number.isFinite(value) ? String(value) : null;
/** Steam's booleans: 1, true or "1". */
export const flag = (value: unknown): boolean => value === 1 || value === true || value === '1';
export const ASSET_ID = /^[0-9]{1,20}$/;

/** Wall-clock budget of one whole-inventory fetch (every page, waits included). */
export const INVENTORY_FETCH_BUDGET_MS = 20_000;
/** One page request's timeout (cut to what is left of the budget). */
const PAGE_TIMEOUT_MS = 10_000;
/** A 429's Retry-After is waited out only when at most this long (and within the budget). */
const MAX_RETRY_WAIT_MS = 3_000;
const MAX_RETRIES_PER_PAGE = 2;

/** One page after `start` (null: the first), under the request options' timeout. */
export type PageFetcher = (start: string | null, options: SteamRequestOptions) => Promise<InventoryPage>;

/** What fetchInventoryPages needs: configuration and a clock. */
export type InventoryFetchDeps = { config: Config; now: () => Date };

export type FetchPagesOptions = {
  /** Awaited before every request (the inventory watch spends one unit of its Steam budget per page). */
  beforeRequest?: () => Promise<void>;
  /** Retries of a throttled page within the budget (default 2; the watch retries at its next interval instead). */
  retriesPerPage?: number;
  /** One page request's timeout (default 10 s). */
  pageTimeoutMs?: number;
  /** The page read (default: the community inventory of context 2; steam-econ.ts reads with a token). */
  fetchPage?: PageFetcher;
};

/**
 * Every page of the inventory (or, with `fetchPage`, of any paged read of the same format),
 * following `start_assetid` while `more_items`, at most INVENTORY_MAX_PAGES pages and
 * INVENTORY_FETCH_BUDGET_MS in all. A 429 is retried after its Retry-After only when that wait is
 * short and fits the budget; otherwise the error propagates.
 */
export async function fetchInventoryPages(
  deps: InventoryFetchDeps,
  steamId64: string,
  budgetMs = INVENTORY_FETCH_BUDGET_MS,
  options: FetchPagesOptions = {},
): Promise<InventoryPage[]> {
  const fetchPage: PageFetcher = options.fetchPage ?? ((start, request) => fetchInventoryPage(deps.config, steamId64, start, request));
  const deadline = Date.now() + budgetMs;
  const retriesPerPage = options.retriesPerPage ?? MAX_RETRIES_PER_PAGE;
  const pages: InventoryPage[] = [];
  let start: string | null = null;
  for (;;) {
    if (pages.length >= deps.config.INVENTORY_MAX_PAGES) {
      throw new SteamUnavailableError(`inventory has more than ${deps.config.INVENTORY_MAX_PAGES} pages`, 60_000);
    }
    let page: InventoryPage | undefined;
    for (let attempt = 0; page === undefined; attempt += 1) {
      await options.beforeRequest?.();
      const left = deadline - Date.now();
      if (left <= 0) throw new SteamUnavailableError(`fetch budget of ${budgetMs} ms spent`, 30_000);
      try {
        page = await fetchPage(start, { timeoutMs: Math.min(options.pageTimeoutMs ?? PAGE_TIMEOUT_MS, left), now: deps.now });
      } catch (error) {
        const waitMs = error instanceof SteamUnavailableError && error.throttled ? error.retryAfterMs : Infinity;
        if (attempt >= retriesPerPage || waitMs > MAX_RETRY_WAIT_MS || Date.now() + waitMs >= deadline) throw error;
        await Bun.sleep(waitMs);
      }
    }
    pages.push(page);
    if (!flag(page.more_items)) return pages;
    const next = stringOf(page.last_assetid);
    if (!next || !ASSET_ID.test(next) || next === start) throw new SteamUnavailableError('more_items without a usable last_assetid', 30_000);
    start = next;
  }
}
