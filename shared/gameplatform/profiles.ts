import { z } from 'zod';
import { ApiError } from '../http/errors.ts';
import type { Config } from '../platform/config.ts';
import type { Queryable } from '../platform/db.ts';
import type { Logger } from '../platform/logger.ts';
import { fetchPlayerSummary, type PlayerSummary, SteamUnavailableError, steamApiError } from './steam-client.ts';
import { type SteamIds, steamIdsOf } from './steam-id.ts';

/** docs/design.md §11: a public Steam profile, cached in steam_profiles for PROFILE_TTL_SECONDS. */
export const profileSchema = z.object({
  steam_id: z.string().describe('SteamID64'),
  steam_id2: z.string(),
  steam_id3: z.string(),
  persona_name: z.string().nullable(),
  profile_url: z.string().nullable(),
  avatar_url: z.string().nullable().describe('The full-size avatar'),
  visibility: z.enum(['public', 'friends_only', 'private']).describe('communityvisibilitystate 3 → public, 1 → private, other → friends_only'),
  country_code: z.string().nullable(),
  created_at: z.string().nullable().describe('Account creation time (hidden by Steam for non-public profiles)'),
  last_logoff: z.string().nullable(),
  source: z.literal('gameplatform'),
  fetched_at: z.string().describe('When this copy was fetched from Steam'),
  stale: z.boolean().describe('True when Steam failed and an older cached copy is served'),
});
export type Profile = z.infer<typeof profileSchema>;

/** The stored part: what Steam said, without the ids (derived) and freshness (per answer). */
type StoredProfile = Pick<Profile, 'persona_name' | 'profile_url' | 'avatar_url' | 'visibility' | 'country_code' | 'created_at' | 'last_logoff'>;

export type ProfileDeps = { config: Config; sql: Queryable; log: Logger; now: () => Date };

/** How long one GetPlayerSummaries call may take. */
const PROFILE_TIMEOUT_MS = 5_000;

const text = (value: unknown, max = 2048): string | null => (typeof value === 'string' && value.length > 0 ? value.slice(0, max) : null);

/** Unix seconds → RFC 3339, or null for anything that is not a plausible instant. */
function instant(value: unknown): string | null {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value <= 0 || value > 253_402_300_799) return null;
  return new Date(value * 1000).toISOString();
}

export function normaliseProfile(player: PlayerSummary): StoredProfile {
  const state = player.communityvisibilitystate;
  const country = text(player.loccountrycode, 8);
  return {
    persona_name: text(player.personaname, 256),
    profile_url: text(player.profileurl),
    avatar_url: text(player.avatarfull) ?? text(player.avatarmedium) ?? text(player.avatar),
    visibility: state === 3 ? 'public' : state === 1 ? 'private' : 'friends_only',
    country_code: country,
    created_at: instant(player.timecreated),
    last_logoff: instant(player.lastlogoff),
  };
}

const answer = (ids: SteamIds, stored: StoredProfile, fetchedAt: Date, stale: boolean): Profile => ({
  ...ids,
  ...stored,
  source: 'gameplatform',
  fetched_at: fetchedAt.toISOString(),
  stale,
});

/**
 * The profile of `steamId64`: the cached copy while younger than PROFILE_TTL_SECONDS, else a fresh
 * one from Steam (stored); when Steam fails, the cached copy of any age with `stale: true`. Throws
 * ApiError 503 profile_service_unavailable (no key, checked before any call), 404
 * profile_not_found, 503 upstream_unavailable (with Retry-After).
 */
export async function getProfile(deps: ProfileDeps, steamId64: string): Promise<Profile> {
  const apiKey = deps.config.STEAM_WEB_API_KEY;
  if (!apiKey) throw new ApiError(503, 'profile_service_unavailable', 'The profile service is not configured (no Steam Web API key).');
  const ids = steamIdsOf(steamId64);
  const [cached] = await deps.sql<{ profile: StoredProfile; fetched_at: Date }[]>`
    select profile, fetched_at from steam_profiles where steam_id = ${steamId64}`;
  const now = deps.now();
  if (cached && now.getTime() - cached.fetched_at.getTime() < deps.config.PROFILE_TTL_SECONDS * 1000) {
    return answer(ids, cached.profile, cached.fetched_at, false);
  }
  let stored: StoredProfile;
  try {
    stored = normaliseProfile(await fetchPlayerSummary(deps.config, apiKey, steamId64, { timeoutMs: PROFILE_TIMEOUT_MS, now: deps.now }));
  } catch (error) {
    if (error instanceof SteamUnavailableError) {
      deps.log.warn({ steam_id: steamId64, reason: error.reason, cached: Boolean(cached) }, 'steam profile fetch failed');
      if (cached) return answer(ids, cached.profile, cached.fetched_at, true);
    }
    throw steamApiError(error, 'profile_not_found');
  }
  await deps.sql`
    insert into steam_profiles (steam_id, profile, fetched_at) values (${steamId64}, ${deps.sql.json(stored)}, ${now})
    on conflict (steam_id) do update set profile = excluded.profile, fetched_at = excluded.fetched_at
    where steam_profiles.fetched_at <= excluded.fetched_at`;
  return answer(ids, stored, now, false);
}
