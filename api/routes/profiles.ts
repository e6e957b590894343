import { Elysia } from 'elysia';
import { z } from 'zod';
import { getProfile, profileSchema } from '../../shared/gameplatform/profiles.ts';
import { parseSteamId } from '../../shared/gameplatform/steam-id.ts';
import { ApiError } from '../../shared/http/errors.ts';
import { text } from '../../shared/http/validation.ts';
import type { AppDeps } from '../deps.ts';
import { routeResponses } from '../openapi.ts';
import { type ApiKeyPluginDeps, apiKeyPlugin } from '../plugins/api-key.ts';

export const gameplatformIdParams = z.object({
  gameplatform_id: text({ max: 64 }).describe('A public individual Steam account: SteamID64, SteamID2 (STEAM_0:1:…) or SteamID3 ([U:1:…])'),
});

/**
 * Checked before validation and authentication (docs/design.md §11): anything parseSteamId refuses is a 400
 * with its own code, and no hostile id ever reaches Postgres or Steam. A valid id is parsed here
 * once and replaced by its SteamID64, which is what the routes use.
 */
export function checkGameplatformId({ params }: { params: Record<string, string | undefined> }) {
  const ids = parseSteamId(params.gameplatform_id ?? '');
  if (ids === null) {
    throw new ApiError(
      400,
      'invalid_gameplatform_id',
      'Not a public individual Steam account id: pass a SteamID64, SteamID2 (STEAM_0:1:…) or SteamID3 ([U:1:…]).',
      [{ field: 'params.gameplatform_id', message: 'not a SteamID64, SteamID2 or SteamID3 of an individual account' }],
    );
  }
  params.gameplatform_id = ids.steam_id;
}

export function profileRoutes(deps: Pick<AppDeps, 'config' | 'sql' | 'log' | 'now'> & ApiKeyPluginDeps) {
  return new Elysia({ name: 'profile-routes' })
    .use(apiKeyPlugin(deps))
    .get('/v2/profiles/:gameplatform_id', ({ params }) => getProfile(deps, params.gameplatform_id), {
      operation: 'profiles.get',
      params: gameplatformIdParams,
      transform: checkGameplatformId,
      detail: {
        summary: 'A public Steam profile',
        description: [
          'A public Steam profile by SteamID64, SteamID2 or SteamID3, with when it was fetched and whether it is stale. A profile is cached for `PROFILE_TTL_SECONDS` (default 600); when Steam fails, a cached copy is served stale instead of an error.',
          'Errors: 400 `invalid_gameplatform_id` (not an individual account id), 404 `profile_not_found`, 503 `upstream_unavailable` (Steam fails and nothing is cached; `Retry-After`), 503 `profile_service_unavailable` (no `STEAM_WEB_API_KEY` in this deployment).',
        ].join('\n\n'),
        tags: ['game platform'],
        responses: routeResponses({ 200: { description: 'The profile with its freshness', body: profileSchema } }, 404),
      },
    });
}
