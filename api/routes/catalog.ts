import { Elysia } from 'elysia';
import { z } from 'zod';
import { catalogRecordSchema, EXTERIORS, ITEM_TYPES, PHASE_VERSIONS, RARITIES } from '../../shared/catalog/identity.ts';
import { type CatalogPosition, catalogIsLoaded, listCatalogItems } from '../../shared/catalog/repository.ts';
import { decodeCursor, encodeCursor } from '../../shared/http/cursor.ts';
import { errors } from '../../shared/http/errors.ts';
import { pageCursor, pageLimit, text } from '../../shared/http/validation.ts';
import { itemImageSchema, itemImages } from '../../shared/media/images/item-images.ts';
import type { AppDeps } from '../deps.ts';
import { routeResponses } from '../openapi.ts';
import { type ApiKeyPluginDeps, apiKeyPlugin } from '../plugins/api-key.ts';
import { weaponNameCheck } from '../weapon-names.ts';

const INDEX_MAX = 2_147_483_647;
const booleanFlag = z.enum(['true', 'false']);
// Integers written plainly (no sign, exponent or fraction), within Postgres's integer. Kept a string
// here (a transform has no JSON Schema for the OpenAPI document) and converted in the handler.
const catalogIndex = z
  .string()
  .regex(/^(0|[1-9][0-9]{0,9})$/, 'must be a non-negative integer')
  .refine((value) => Number(value) <= INDEX_MAX, `must be at most ${INDEX_MAX}`);
const toIndex = (value: string | undefined) => (value === undefined ? undefined : Number(value));

function catalogQuery() {
  return z
    .object({
      // An empty q (a cleared search box) is no filter.
      q: text({ max: 200 }).optional(),
      type: z.enum(ITEM_TYPES).optional(),
      // Checked against the catalog's own names in the handler (api/weapon-names.ts).
      weapon: text({ min: 1, max: 80 }).optional(),
      exterior: z.enum(EXTERIORS).optional(),
      rarity: z.enum(RARITIES).optional(),
      phase: z.enum(PHASE_VERSIONS).optional(),
      stattrak: booleanFlag.optional(),
      souvenir: booleanFlag.optional(),
      definition_index: catalogIndex.optional(),
      paint_index: catalogIndex.optional(),
      limit: pageLimit({ max: 200, default: 50 }),
      cursor: pageCursor,
    })
    .strict();
}

const catalogPage = z.object({
  // docs/design.md §18: each item's image (its `default` version's; the price routes give each version's).
  data: z.array(catalogRecordSchema.extend({ image: itemImageSchema.nullable() })),
  next_cursor: z.string().nullable().describe('Pass as `cursor` for the next page; null on the last page'),
});

const position: z.ZodType<CatalogPosition> = z.object({ name: text({ min: 1, max: 512 }) });

const flag = (value: 'true' | 'false' | undefined) => (value === undefined ? undefined : value === 'true');

export function catalogRoutes(deps: Pick<AppDeps, 'config' | 'sql'> & ApiKeyPluginDeps) {
  const signingKey = deps.config.SIGNING_KEY!;
  const checkWeapon = weaponNameCheck(deps);
  return new Elysia({ name: 'catalog-routes' }).use(apiKeyPlugin(deps)).get(
    '/v2/catalog/items',
    async ({ principal, query }) => {
      await checkWeapon(query.weapon, 'query.weapon');
      const filters = {
        q: query.q ? query.q : undefined,
        type: query.type,
        weapon: query.weapon,
        exterior: query.exterior,
        rarity: query.rarity,
        phase: query.phase,
        stattrak: flag(query.stattrak),
        souvenir: flag(query.souvenir),
        definition_index: toIndex(query.definition_index),
        paint_index: toIndex(query.paint_index),
      };
      // docs/interface.md §4: the cursor binds every filter and the workspace, not the page size.
      const bound = { workspace: principal.workspace.id, ...Object.fromEntries(Object.entries(filters).map(([k, v]) => [k, v ?? null])) };
      const after = query.cursor ? decodeCursor(signingKey, 'catalog_items', bound, query.cursor, position) : null;
      const page = await listCatalogItems(deps.sql, filters, after, query.limit);
      // docs/interface.md §7: 503 when the catalog is unavailable, i.e. has never been loaded (an empty page of a
      // loaded catalog is a 200).
      if (page.items.length === 0 && !(await catalogIsLoaded(deps.sql))) {
        throw errors.unavailable('catalog_unavailable', 'The catalog has not been loaded yet; retry shortly.');
      }
      const images = await itemImages(
        deps.sql,
        deps.config,
        page.items.map((item) => ({ catalog_id: item.catalog_id })),
      );
      const data = page.items.map((item, index) => ({ ...item, image: images[index] ?? null }));
      return { data, next_cursor: page.next ? encodeCursor(signingKey, 'catalog_items', bound, page.next) : null };
    },
    {
      operation: 'catalog.items.list',
      query: catalogQuery(),
      detail: {
        summary: 'Catalog items by market_hash_name',
        description: [
          'Every item of the catalog, ordered by market_hash_name, with its `catalog_id` (what the price operations take). Filters: `q` (a case-insensitive substring of the name, up to 200 characters), `type`, `weapon` (a weapon name of the catalog), `exterior`, `rarity`, `phase`, `stattrak`, `souvenir`, `definition_index` and `paint_index`.',
          '`limit` 1 to 200 (default 50).',
          '`provisional` (docs/design.md §19): true for an item added from its market name the day it appeared on the market (seen on two price sources, or on Steam), before @ianlucas/cs2-lib knew it. It is priced like any other item; `rarity`, `definition_index` and `paint_index` are null until `npm run catalog:sync` with a library that knows it turns it into a regular item under the same `catalog_id`. Each one added is announced by the `catalog.item_added` webhook event.',
          '`image` (docs/design.md §18): the newest icon Steam has shown the item with in an inventory this service read (`source: "steam"`), else @ianlucas/cs2-lib’s image (`source: "cs2-lib"`), else null. The art is Valve’s.',
          'Errors: 400 `invalid_request` (an unknown weapon or filter value), 400 `invalid_cursor`, 503 `catalog_unavailable` (the catalog has not been loaded yet; retry shortly).',
        ].join('\n\n'),
        tags: ['catalog'],
        responses: routeResponses({ 200: { description: 'One page of items', body: catalogPage } }),
      },
    },
  );
}
