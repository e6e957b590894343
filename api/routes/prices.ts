import { Elysia } from 'elysia';
import { z } from 'zod';
import { isCatalogId, isPriceVersion } from '../../shared/catalog/identity.ts';
import { decodeCursor, encodeCursor } from '../../shared/http/cursor.ts';
import { ApiError, errors } from '../../shared/http/errors.ts';
import { cursorInstant, dateTime, pageCursor, pageLimit, text } from '../../shared/http/validation.ts';
import { SOURCE_NAMES } from '../../shared/platform/source-names.ts';
import { convertDocumentText, currencyParam, fxSchema, resolveConversion } from '../../shared/prices/currency.ts';
import { itemPricesSchema, renderItemPrices } from '../../shared/prices/current.ts';
import {
  DEFAULT_GRANULARITY,
  GRANULARITIES,
  HISTORY_LIMIT_DEFAULT,
  HISTORY_LIMIT_MAX,
  type HistoryPageInput,
  historyPageJson,
  historySeriesSchema,
  resolveHistoryWindow,
} from '../../shared/prices/history.ts';
import type { HistoryPosition } from '../../shared/prices/repository.ts';
import { retentionPolicy } from '../../shared/retention/policy.ts';
import type { AppDeps } from '../deps.ts';
import { routeResponses } from '../openapi.ts';
import { type ApiKeyPluginDeps, apiKeyPlugin } from '../plugins/api-key.ts';
import { marketplaceField } from '../segment-filter.ts';

const versionMessage = 'unknown version: default, phase-1…phase-4, ruby, sapphire, black-pearl, emerald, pattern-<0…1000> or tier-<n>';
const version = z.string().max(32).refine(isPriceVersion, versionMessage);

const itemParams = z.object({ catalog_id: text({ max: 128 }).describe('A catalog id as returned by the catalog API (itm_…), passed back unchanged') });

const pricesQuery = z.object({ version: version.optional(), currency: currencyParam.optional() }).strict();

const historyQuery = z
  .object({
    marketplace: marketplaceField,
    version: version.optional(),
    granularity: z
      .enum(GRANULARITIES, { error: (issue) => `unknown granularity ${JSON.stringify(issue.input)}; one of ${GRANULARITIES.join(', ')}` })
      .default(DEFAULT_GRANULARITY),
    from: dateTime.optional(),
    to: dateTime.optional(),
    limit: pageLimit({ max: HISTORY_LIMIT_MAX, default: HISTORY_LIMIT_DEFAULT }),
    cursor: pageCursor,
    currency: currencyParam.optional(),
  })
  .strict();

const historyPage = z.object({
  catalog_id: z.string(),
  market_hash_name: z.string(),
  marketplace: z.enum(SOURCE_NAMES),
  granularity: z.enum(GRANULARITIES),
  from: z.string().describe('The window answered, inclusive (the defaults resolved)'),
  to: z.string().describe('The window answered, exclusive'),
  data: z.array(historySeriesSchema).describe('Series in version order; one cut by the page limit continues at the top of the next page'),
  next_cursor: z.string().nullable().describe('Pass as `cursor` for the next page; null on the last page'),
  currency: z.string().optional().describe('With `?currency=` other than USD: the currency of open/high/low/close (USD otherwise)'),
  fx: fxSchema.optional(),
});

type HistoryCursorPosition = { v: string; b: string; f: string; t: string };

const historyPosition: z.ZodType<HistoryCursorPosition> = z.object({ v: version, b: cursorInstant, f: cursorInstant, t: cursorInstant });

/** Checked before validation and authentication, so a malformed id is a 400 with its own code. */
function checkCatalogId({ params }: { params: Record<string, string | undefined> }) {
  const catalogId = params.catalog_id ?? '';
  if (!isCatalogId(catalogId)) {
    throw new ApiError(400, 'invalid_catalog_id', 'The catalog id is malformed; pass back a catalog_id from the catalog API unchanged.', [
      { field: 'params.catalog_id', message: 'malformed catalog id' },
    ]);
  }
}

const notFound = () => errors.notFound('No catalog item has this catalog id.');

export function priceRoutes(deps: Pick<AppDeps, 'config' | 'sql' | 'now' | 'itemPrices' | 'historyPages' | 'priceDemand'> & ApiKeyPluginDeps) {
  const signingKey = deps.config.SIGNING_KEY!;
  return new Elysia({ name: 'price-routes' })
    .use(apiKeyPlugin(deps))
    .get(
      '/v2/prices/:catalog_id',
      async ({ params, query, set }) => {
        const conversion = await resolveConversion(deps.sql, query.currency);
        const prices = await deps.itemPrices.read(params.catalog_id);
        if (prices === null) throw notFound();
        // docs/design.md §19: an item people ask about gets its 24 h sales read first (never awaited).
        deps.priceDemand.record([params.catalog_id]);
        // Already JSON (shared/prices/current.ts renders it around the per-request ages).
        set.headers['content-type'] = 'application/json;charset=utf-8';
        return convertDocumentText(renderItemPrices(prices, query.version, deps.now()), conversion);
      },
      {
        operation: 'prices.get',
        params: itemParams,
        query: pricesQuery,
        transform: checkCatalogId,
        detail: {
          summary: 'Current prices of a catalog item',
          description: [
            "The item's latest price at every marketplace, per version (default, Doppler phases, patterns, …), with each price's age and freshness (stale once older than its source's stale threshold, and whenever the source itself is stale on GET /health), and min/median/max across marketplaces. `version` keeps one version; `currency` converts (see Conventions).",
            'Errors: 400 `invalid_catalog_id` (pass a catalog_id from the catalog unchanged), 400 `invalid_request` (an unknown version or currency), 404 `not_found` (no catalog item has this id), 503 `fx_unavailable`.',
          ].join('\n\n'),
          tags: ['prices'],
          responses: routeResponses({ 200: { description: 'The item’s current prices', body: itemPricesSchema } }, 404, 503),
        },
      },
    )
    .get(
      '/v2/prices/:catalog_id/history',
      async ({ params, query, principal, set }) => {
        const { from, to } = query;
        // docs/interface.md §4: the cursor binds the item, the workspace and every filter (not the page size).
        const filters = {
          workspace: principal.workspace.id,
          catalog_id: params.catalog_id,
          marketplace: query.marketplace,
          version: query.version ?? null,
          granularity: query.granularity,
          from: from?.toISOString() ?? null,
          to: to?.toISOString() ?? null,
        };
        const conversion = await resolveConversion(deps.sql, query.currency);
        let window: { from: Date; to: Date };
        let after: HistoryPosition | null = null;
        if (query.cursor) {
          const position = decodeCursor(signingKey, 'price_history', filters, query.cursor, historyPosition);
          // The window a default (omitted from/to) resolved to on the first page rides in the cursor,
          // so later pages page through the same window instead of one that moved with the clock.
          window = { from: new Date(position.f), to: new Date(position.t) };
          after = { version: position.v, bucket_start: position.b };
        } else {
          window = resolveHistoryWindow(query.granularity, from, to, deps.now(), retentionPolicy(deps.config).rollups[query.granularity]);
        }
        const input: HistoryPageInput = {
          catalogId: params.catalog_id,
          marketplace: query.marketplace,
          granularity: query.granularity,
          version: query.version ?? null,
          window,
        };
        const page = await deps.historyPages.read(input, after, query.limit);
        if (!page) throw notFound();
        const nextCursor = page.next
          ? encodeCursor<HistoryCursorPosition>(signingKey, 'price_history', filters, {
              v: page.next.version,
              b: page.next.bucket_start,
              f: window.from.toISOString(),
              t: window.to.toISOString(),
            })
          : null;
        // Already JSON but for the cursor (shared/prices/history.ts), which is this caller's own.
        set.headers['content-type'] = 'application/json;charset=utf-8';
        return convertDocumentText(historyPageJson(page, input, nextCursor), conversion);
      },
      {
        operation: 'prices.history',
        params: itemParams,
        query: historyQuery,
        transform: checkCatalogId,
        detail: {
          summary: 'Price history of a catalog item at one marketplace',
          description: [
            'Open, high, low and close and the sample count per time bucket at `marketplace`, one series per version (or only `version`), oldest bucket first. `granularity` is `10m`, `hourly` (default) or `daily`. `to` defaults to now and `from` to 2, 30 or 365 days before it (by granularity); a range may span at most 31, 366 or 3 660 days, and no further back than its granularity is kept (the retention horizon: use a coarser granularity for older history). The window the first page resolved rides in its cursor, so later pages do not move with the clock. `currency` converts.',
            '`limit` counts buckets, 1 to 1000 (default 288); a series cut by the limit continues on the next page.',
            'Errors: 400 `invalid_catalog_id`, 400 `invalid_request` (unknown marketplace, version, granularity or currency; `from` not before `to`; a range too long or before the horizon), 400 `invalid_cursor`, 404 `not_found`, 503 `fx_unavailable`.',
          ].join('\n\n'),
          tags: ['prices'],
          responses: routeResponses({ 200: { description: 'One page of buckets', body: historyPage } }, 404, 503),
        },
      },
    );
}
