import { ApiError } from '../http/errors.ts';
import type { Config } from '../platform/config.ts';
import { parseRetryAfter } from '../sources/upstream.ts';
import { joinUrl } from '../util/url.ts';

/**
 * HTTP to Steam (docs/design.md §11): the request, its typed errors and the Web API (GetPlayerSummaries), at
 * STEAM_API_URL / STEAM_COMMUNITY_URL exactly as configured (the community inventory read is
 * inventory/steam-community.ts). Every call has a timeout, and every
 * upstream behaviour (status, timeout, reset, garbage body) ends in one of the typed errors below,
 * never in an untyped throw, so routes can answer 403/404/503 and never 500.
 */

/** Upstream refused or failed; `retryAfterMs` is what it asked for (429) or our default backoff. */
export class SteamUnavailableError extends Error {
  constructor(
    readonly reason: string,
    readonly retryAfterMs: number,
    readonly throttled = false,
  ) {
    super(`steam upstream unavailable: ${reason}`);
    this.name = 'SteamUnavailableError';
  }
}

/** The inventory is not public (upstream 403 with body `null`). */
export class SteamPrivateError extends Error {
  constructor() {
    super('steam inventory is private');
    this.name = 'SteamPrivateError';
  }
}

/** No such inventory (upstream 404), or no such profile (empty `players`). */
export class SteamNotFoundError extends Error {
  constructor(what: string) {
    super(`steam ${what} not found`);
    this.name = 'SteamNotFoundError';
  }
}

/** Backoff we advertise when Steam fails without saying how long to wait. */
export const DEFAULT_RETRY_AFTER_MS = 30_000;

export type SteamRequestOptions = { timeoutMs: number; now: () => Date };

export type SteamResponse = { status: number; headers: Headers; text: string };

/** One GET to Steam under a timeout (the body read included); network failures are SteamUnavailableError. */
export async function steamGet(url: string, options: SteamRequestOptions): Promise<SteamResponse> {
  try {
    const response = await fetch(url, { headers: { accept: 'application/json' }, signal: AbortSignal.timeout(options.timeoutMs), redirect: 'follow' });
    // The body is read under the same timeout signal, so a trickling body cannot hold a request.
    const text = await response.text();
    return { status: response.status, headers: response.headers, text };
  } catch (error) {
    const timedOut = error instanceof DOMException && error.name === 'TimeoutError';
    throw new SteamUnavailableError(timedOut ? `timed out after ${options.timeoutMs} ms` : 'connection failed', DEFAULT_RETRY_AFTER_MS);
  }
}

/** The typed error for a non-2xx answer (429 → throttled, with its Retry-After). */
export function steamFailure(raw: SteamResponse, options: SteamRequestOptions): SteamUnavailableError {
  if (raw.status === 429) {
    return new SteamUnavailableError('throttled (HTTP 429)', parseRetryAfter(raw.headers.get('retry-after'), options.now(), DEFAULT_RETRY_AFTER_MS), true);
  }
  const retryAfter = raw.headers.get('retry-after');
  return new SteamUnavailableError(`HTTP ${raw.status}`, parseRetryAfter(retryAfter, options.now(), DEFAULT_RETRY_AFTER_MS));
}

export function parseSteamJson(raw: SteamResponse): unknown {
  try {
    return JSON.parse(raw.text);
  } catch {
    throw new SteamUnavailableError(`unparseable body (HTTP ${raw.status}, ${raw.text.length} bytes)`, DEFAULT_RETRY_AFTER_MS);
  }
}

export const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** One `players[]` entry of GetPlayerSummaries v2, fields as upstream names them. */
export type PlayerSummary = {
  steamid: string;
  communityvisibilitystate?: number;
  personaname?: string;
  profileurl?: string;
  avatar?: string;
  avatarmedium?: string;
  avatarfull?: string;
  loccountrycode?: string;
  timecreated?: number;
  lastlogoff?: number;
};

/**
 * `ISteamUser/GetPlayerSummaries/v2` for one SteamID64: the player, or SteamNotFoundError when
 * `players` is empty. The key goes in the query string (Steam's only way); it is never logged.
 */
export async function fetchPlayerSummary(config: Config, apiKey: string, steamId64: string, options: SteamRequestOptions): Promise<PlayerSummary> {
  const query = new URLSearchParams({ key: apiKey, steamids: steamId64 });
  const raw = await steamGet(joinUrl(config.STEAM_API_URL, `ISteamUser/GetPlayerSummaries/v2/?${query}`), options);
  if (raw.status < 200 || raw.status > 299) throw steamFailure(raw, options);
  const body = parseSteamJson(raw);
  const players = isObject(body) && isObject(body.response) ? body.response.players : undefined;
  if (!Array.isArray(players)) throw new SteamUnavailableError('unexpected body (no response.players)', DEFAULT_RETRY_AFTER_MS);
  const player = players.find((entry) => isObject(entry) && entry.steamid === steamId64);
  if (!player) {
    if (players.length === 0) throw new SteamNotFoundError('profile');
    throw new SteamUnavailableError('players[] does not hold the requested steamid', DEFAULT_RETRY_AFTER_MS);
  }
  return player as PlayerSummary;
}

/**
 * The API answer for a Steam failure (docs/design.md §11): private → 403 inventory_private, not found → 404
 * (the caller's code), unavailable or throttled → 503 upstream_unavailable with Retry-After. Anything
 * else is ours, not upstream behaviour, and is rethrown as is.
 */
export function steamApiError(error: unknown, notFoundCode: 'profile_not_found' | 'inventory_not_found'): unknown {
  if (error instanceof SteamPrivateError) return new ApiError(403, 'inventory_private', 'This Steam inventory is not public.');
  if (error instanceof SteamNotFoundError) {
    return new ApiError(
      404,
      notFoundCode,
      notFoundCode === 'profile_not_found' ? 'Steam has no profile with this id.' : 'Steam has no inventory with this id.',
    );
  }
  if (error instanceof SteamUnavailableError) {
    return new ApiError(
      503,
      'upstream_unavailable',
      `Steam is ${error.throttled ? 'throttling our requests' : 'not answering'} and no cached copy exists; retry later.`,
      undefined,
      {
        'retry-after': String(Math.max(1, Math.ceil(error.retryAfterMs / 1000))),
      },
    );
  }
  return error;
}
