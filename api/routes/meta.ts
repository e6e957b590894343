import { existsSync } from 'node:fs';
import { Elysia } from 'elysia';
import { z } from 'zod';
import { currencyList } from '../../shared/fx/currencies.ts';
import { capabilities, capabilitySchema } from '../../shared/http/capabilities.ts';
import type { Dependency } from '../../shared/http/operations.ts';
import { DEFAULT_SCOPES, SCOPES } from '../../shared/http/scopes.ts';
import { itemFilesStatus } from '../../shared/media/item-files.ts';
import { latestCurrencyTable } from '../../shared/prices/currency.ts';
import type { AppDeps } from '../deps.ts';
import { routeResponses } from '../openapi.ts';

const scopeList = z.object({
  scopes: z.array(z.enum(SCOPES)),
  default_scopes: z.array(z.enum(SCOPES)).describe('What a key gets when it is created without naming scopes'),
});
const capabilityList = z.object({ spec_version: z.string(), capabilities: z.array(capabilitySchema) });
// docs/design.md §19: what `?currency=` converts to, where each rate comes from, and what is not offered and why.
const currencyListSchema = z.object({
  base: z.literal('USD').describe('Prices are stored in USD; every conversion starts from it'),
  currencies: z
    .array(
      z.object({
        code: z.string().describe('ISO 4217 code, as `?currency=` takes it'),
        source: z.enum(['base', 'ecb', 'steam-implied']).describe('`base` for USD (nothing converted); else `fx.source` of a converted answer'),
        minor_units: z.number().int().describe('Decimal places of converted amounts (the ISO 4217 exponent: 0 for JPY, KRW, CLP, VND; 3 for KWD)'),
        rate: z.string().nullable().describe('Units per USD, 8 decimal places (`fx.rate`); null for USD'),
        as_of: z.string().nullable().describe('`fx.as_of`: the ECB reference date, or the UTC date of the Steam basket read (YYYY-MM-DD); null for USD'),
      }),
    )
    .describe('Every currency offered now, sorted by code'),
  unavailable: z
    .array(z.object({ code: z.string(), source: z.enum(['ecb', 'steam-implied']), reason: z.string().describe('Why it is not offered now') }))
    .describe(
      'Currencies `?currency=` knows but cannot convert to now (a 503 `fx_unavailable` names the same reason): a Steam wallet currency whose basket had fewer than three prices, that was never read, or whose steam source is disabled; EUR before any ECB rates',
    ),
});

export function metaRoutes(deps: Pick<AppDeps, 'config' | 'redis' | 'sql'>) {
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
      detail: {
        summary: 'Every recognised scope, in stable order',
        description:
          'Every scope an API key can hold, in a stable order (new scopes are appended), and `default_scopes`: what POST /v1/me/keys grants when the request names none (read-only scopes only).',
        tags: ['status'],
        responses: routeResponses({ 200: { description: 'The scopes', body: scopeList } }),
      },
    })
    .get('/v2/meta/currencies', async () => currencyList(await latestCurrencyTable(deps.sql)), {
      detail: {
        summary: 'Every currency offered, and where its rate comes from',
        description:
          'What `?currency=` converts to now: USD (the base), EUR and every currency of the newest ECB reference rates (`source: "ecb"`), and the Steam wallet currencies the ECB does not publish, at rates implied by Steam\'s own prices (`source: "steam-implied"`: the median over a fixed basket of liquid items of their lowest Steam price in the currency over their lowest Steam price in USD, read every SOURCE_FX_INTERVAL_SECONDS). Each with its minor units, rate and `as_of`. `unavailable` lists the currencies known but not offered now, with the reason (too few basket prices, never read, steam source disabled); asking for one is a 503 `fx_unavailable`. Rates are read at most every 5 s.',
        tags: ['status'],
        responses: routeResponses({ 200: { description: 'Offered and unavailable currencies', body: currencyListSchema } }),
      },
    })
    .get('/v2/meta/capabilities', () => ({ spec_version: '1.0.0', capabilities: capabilities(dependencyAvailable) }), {
      detail: {
        summary: 'Every operation and its availability here',
        description:
          'Every operation of the interface with its method, path, auth, scopes and unit weight, and its status here: `production`; `unavailable` when a runtime dependency is missing in this deployment (`unavailable_because` names it: `redis`, `webhook_secret_key`, `steam_web_api_key`, `chromium` or `item_files`); or `planned`.',
        tags: ['status'],
        responses: routeResponses({ 200: { description: 'Every operation of the interface', body: capabilityList } }),
      },
    });
}
