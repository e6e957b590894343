import { existsSync } from 'node:fs';
import { Elysia } from 'elysia';
import { z } from 'zod';
import { capabilities, capabilitySchema } from '../../shared/http/capabilities.ts';
import { itemFilesStatus } from '../../shared/media/item-files.ts';
import type { Dependency } from '../../shared/http/operations.ts';
import { DEFAULT_SCOPES, SCOPES } from '../../shared/http/scopes.ts';
import type { AppDeps } from '../deps.ts';
import { routeResponses } from '../openapi.ts';

const scopeList = z.object({
  scopes: z.array(z.enum(SCOPES)),
  default_scopes: z.array(z.enum(SCOPES)).describe('What a key gets when it is created without naming scopes'),
});
const capabilityList = z.object({ spec_version: z.string(), capabilities: z.array(capabilitySchema) });

export function metaRoutes(deps: Pick<AppDeps, 'config' | 'redis'>) {
  const dependencyAvailable = (dependency: Dependency): boolean => {
    switch (dependency) {
      case 'redis':
        return deps.redis.status === 'ready';
      case 'webhook_secret_key':
        return deps.config.WEBHOOK_SECRET_KEY !== undefined;
      case 'steam_web_api_key':
        return deps.config.STEAM_WEB_API_KEY !== undefined;
      case 'chromium':
        return existsSync(deps.config.CHROMIUM_PATH);
      case 'item_files':
        // Without models nothing can be drawn; an empty directory does not count.
        return itemFilesStatus(deps.config.ITEM_FILES_DIR).status === 'ok';
    }
  };
  return new Elysia({ name: 'meta-routes' })
    .get('/v2/meta/scopes', () => ({ scopes: [...SCOPES], default_scopes: [...DEFAULT_SCOPES] }), {
      detail: { summary: 'Every recognised scope, in stable order', description: 'Every scope an API key can hold, in a stable order (new scopes are appended), and `default_scopes`: what POST /v1/me/keys grants when the request names none (read-only scopes only).', tags: ['status'], responses: routeResponses({ 200: { description: 'The scopes', body: scopeList } }) },
    })
    .get('/v2/meta/capabilities', () => ({ spec_version: '1.0.0', capabilities: capabilities(dependencyAvailable) }), {
      detail: {
        summary: 'Every operation and its availability here',
        description: 'Every operation of the interface with its method, path, auth, scopes and unit weight, and its status here: `production`; `unavailable` when a runtime dependency is missing in this deployment (`unavailable_because` names it: `redis`, `webhook_secret_key`, `steam_web_api_key`, `chromium` or `item_files`); or `planned`.',
        tags: ['status'],
        responses: routeResponses({ 200: { description: 'Every operation of the interface', body: capabilityList } }),
      },
    });
}
