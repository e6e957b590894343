import { Elysia } from 'elysia';
import { z } from 'zod';
import { decodeCursor, encodeCursor } from '../../shared/http/cursor.ts';
import { ApiError, errors } from '../../shared/http/errors.ts';
import { cursorInstant, dateTime, pageCursor, pageLimit, text, uuid } from '../../shared/http/validation.ts';
import { SEGMENTS } from '../../shared/market/segments.ts';
import { METHODOLOGIES, METHODOLOGY, ROUNDING, ratioText } from '../../shared/market-index/methodology.ts';
import {
  type Calculation,
  type ConstituentPosition,
  findCalculation,
  findLatestCalculation,
  type IndexQuery,
  listConstituents,
  listLevelHistory,
} from '../../shared/market-index/repository.ts';
import { SOURCE_NAMES } from '../../shared/platform/source-names.ts';
import { resolveWindow } from '../../shared/prices/history.ts';
import { windowStart } from '../../shared/util/time.ts';
import type { AppDeps } from '../deps.ts';
import { routeResponses } from '../openapi.ts';
import { type ApiKeyPluginDeps, apiKeyPlugin } from '../plugins/api-key.ts';
import { marketplaceField, segmentFilterParser, segmentQueryFields } from '../segment-filter.ts';

/** History windows: omitted `from` is 30 days before `to` (default now); at most 366 days per request. */
export const INDEX_HISTORY_DEFAULT_DAYS = 30;
export const INDEX_HISTORY_MAX_DAYS = 366;
export const INDEX_PAGE_LIMIT = { default: 100, max: 1000 } as const;

const indexQueryFields = {
  marketplace: marketplaceField,
  ...segmentQueryFields,
  methodology: z
    .enum(METHODOLOGIES, { error: (issue) => `unknown methodology ${JSON.stringify(issue.input)}; the only one is ${METHODOLOGY}` })
    .default(METHODOLOGY),
};
const pageFields = {
  limit: pageLimit(INDEX_PAGE_LIMIT),
  cursor: pageCursor,
};

const latestQuery = z.object(indexQueryFields).strict();
const historyQuery = z.object({ ...indexQueryFields, from: dateTime.optional(), to: dateTime.optional(), ...pageFields }).strict();
const constituentsQuery = z.object(pageFields).strict();
const calculationParams = z.object({ calculation_id: uuid('The id of a calculation (uuid)') });

type HistoryCursor = { a: string; i: string; f: string; t: string };
const historyPosition: z.ZodType<HistoryCursor> = z.object({ a: cursorInstant, i: uuid('calculation id'), f: cursorInstant, t: cursorInstant });
const constituentPosition: z.ZodType<ConstituentPosition> = z.object({ catalog_id: text({ max: 128 }), version: text({ max: 32 }) });

const nextCursor = z.string().nullable().describe('Pass as `cursor` for the next page; null on the last page');
// Levels, link factors, prices and ratios are decimal strings (12 places for index figures).
const calculationSummarySchema = z.object({
  id: z.uuid(),
  methodology: z.enum(METHODOLOGIES),
  marketplace: z.enum(SOURCE_NAMES),
  segment: z.enum(SEGMENTS).nullable().describe('Null for the whole marketplace'),
  value: z.string().nullable().describe('The segment value; null for the whole marketplace'),
  level: z.string(),
  previous_level: z.string().nullable().describe('Null at inception'),
  link_factor: z.string().nullable().describe('Mean of the constituent ratios; null at inception'),
  constituent_count: z.number().int(),
  inception: z.boolean().describe('The first calculation of its series (level 1000)'),
  as_of: z.string(),
});
const publishedCalculation = calculationSummarySchema.extend({
  calculated_at: z.string(),
  previous_calculation_id: z.uuid().nullable(),
  rounding: z.object({ scale: z.number().int(), mode: z.literal(ROUNDING.mode), rule: z.string() }),
  links: z
    .object({
      constituents: z.string(),
      previous_constituents: z.string().nullable(),
      history: z.string(),
    })
    .describe('Request paths that reproduce the calculation'),
});
const levelHistory = z.object({
  methodology: z.enum(METHODOLOGIES),
  marketplace: z.enum(SOURCE_NAMES),
  segment: z.enum(SEGMENTS).nullable(),
  value: z.string().nullable(),
  from: z.string().describe('The window answered, inclusive (the defaults resolved)'),
  to: z.string().describe('The window answered, exclusive'),
  data: z.array(
    z.object({
      calculation_id: z.uuid(),
      as_of: z.string(),
      calculated_at: z.string(),
      level: z.string(),
      previous_level: z.string().nullable(),
      link_factor: z.string().nullable(),
      constituent_count: z.number().int(),
      inception: z.boolean(),
    }),
  ),
  next_cursor: nextCursor,
});
const constituentsPage = z.object({
  calculation: calculationSummarySchema,
  data: z.array(
    z.object({
      catalog_id: z.string(),
      market_hash_name: z.string(),
      version: z.string(),
      previous_price: z.string().nullable().describe('Null in an inception calculation'),
      current_price: z.string(),
      ratio: z.string().nullable().describe('current_price / previous_price, rounded half-even to 12 places; null at inception'),
    }),
  ),
  next_cursor: nextCursor,
});

function queryString(query: IndexQuery): string {
  const search = new URLSearchParams({ marketplace: query.marketplace });
  if (query.filter) {
    search.set('segment', query.filter.segment);
    search.set('value', query.filter.value);
  }
  search.set('methodology', query.methodology);
  return search.toString();
}

const constituentsPath = (id: string) => `/v2/market-index/cs2/calculations/${id}/constituents`;

/** What identifies a calculation and its result (also heads each constituents page). */
function calculationSummary(calculation: Calculation) {
  return {
    id: calculation.id,
    methodology: calculation.methodology,
    marketplace: calculation.marketplace,
    segment: calculation.segment,
    value: calculation.value,
    level: calculation.level,
    previous_level: calculation.previous_level,
    link_factor: calculation.link_factor,
    constituent_count: calculation.constituent_count,
    inception: calculation.inception,
    as_of: calculation.as_of.toISOString(),
  };
}

/** A successful calculation with what it takes to reproduce it. */
function publishCalculation(calculation: Calculation, query: IndexQuery) {
  return {
    ...calculationSummary(calculation),
    calculated_at: calculation.calculated_at.toISOString(),
    previous_calculation_id: calculation.previous_calculation_id,
    rounding: ROUNDING,
    links: {
      constituents: constituentsPath(calculation.id),
      previous_constituents: calculation.previous_calculation_id ? constituentsPath(calculation.previous_calculation_id) : null,
      history: `/v2/market-index/cs2/history?${queryString(query)}`,
    },
  };
}

const noCalculation = () => errors.notFound('No successful index calculation matches this query yet.');

/**
 * Issue 13: a calculation is published (latest, constituents) only while its price vectors are kept,
 * RETENTION_INDEX_VECTORS_DAYS after it was calculated, so whatever is served can be recomputed. The
 * window is judged on calculated_at, the time in the run id its vectors are partitioned by (sql/0011),
 * so nothing inside it has been dropped; levels stay in the history for its horizon.
 */
function publishedSince(deps: Pick<AppDeps, 'config' | 'now'>): Date {
  return windowStart(deps.now(), deps.config.RETENTION_INDEX_VECTORS_DAYS);
}

export function marketIndexRoutes(deps: Pick<AppDeps, 'config' | 'sql' | 'now'> & ApiKeyPluginDeps) {
  const signingKey = deps.config.SIGNING_KEY!;
  const parseSegmentFilter = segmentFilterParser(deps);
  const indexQuery = async (query: z.infer<typeof latestQuery>): Promise<IndexQuery> => ({
    marketplace: query.marketplace,
    methodology: query.methodology,
    filter: await parseSegmentFilter(query),
  });
  return new Elysia({ name: 'market-index-routes' })
    .use(apiKeyPlugin(deps))
    .get(
      '/v2/market-index/cs2',
      async ({ query }) => {
        const resolved = await indexQuery(query);
        const calculation = await findLatestCalculation(deps.sql, resolved);
        if (!calculation) throw noCalculation();
        if (calculation.calculated_at < publishedSince(deps)) {
          const days = deps.config.RETENTION_INDEX_VECTORS_DAYS;
          throw errors.notFound(
            `No successful index calculation matches this query in the last ${days} days: calculations are published with their constituents for ${days} days (RETENTION_INDEX_VECTORS_DAYS); older levels are in the history.`,
          );
        }
        return publishCalculation(calculation, resolved);
      },
      {
        operation: 'market_index.get',
        query: latestQuery,
        detail: {
          summary: 'Newest market index calculation',
          description: [
            'The newest successful calculation of the `cs2.chain-equal-weight.v1` index (the only `methodology`) at `marketplace`, for the whole marketplace or one `segment` and its `value`: its level, previous level, link factor, constituent count and as-of time, and the inputs it used. Calculations are published with their constituents for `RETENTION_INDEX_VECTORS_DAYS`; older levels are in the history.',
            'Errors: 400 `invalid_request` (an unknown marketplace, segment or value; `value` without `segment` or the reverse), 404 `not_found` (no calculation matches, or the newest is older than the publication window).',
          ].join('\n\n'),
          tags: ['market'],
          responses: routeResponses({ 200: { description: 'The calculation', body: publishedCalculation } }, 404),
        },
      },
    )
    .get(
      '/v2/market-index/cs2/history',
      async ({ query, principal }) => {
        const resolved = await indexQuery(query);
        const { from, to } = query;
        const filters = {
          workspace: principal.workspace.id,
          ...resolved,
          filter: resolved.filter ?? null,
          from: from?.toISOString() ?? null,
          to: to?.toISOString() ?? null,
        };
        let window: { from: Date; to: Date };
        let after: { as_of: string; id: string } | null = null;
        if (query.cursor) {
          const position = decodeCursor(signingKey, 'market_index_history', filters, query.cursor, historyPosition);
          window = { from: new Date(position.f), to: new Date(position.t) };
          after = { as_of: position.a, id: position.i };
        } else {
          window = resolveWindow(from, to, deps.now(), { defaultDays: INDEX_HISTORY_DEFAULT_DAYS, maxDays: INDEX_HISTORY_MAX_DAYS });
        }
        const page = await listLevelHistory(deps.sql, resolved, window, after, query.limit);
        return {
          methodology: resolved.methodology,
          marketplace: resolved.marketplace,
          segment: resolved.filter?.segment ?? null,
          value: resolved.filter?.value ?? null,
          from: window.from.toISOString(),
          to: window.to.toISOString(),
          data: page.points.map((point) => ({
            calculation_id: point.id,
            as_of: point.as_of.toISOString(),
            calculated_at: point.calculated_at.toISOString(),
            level: point.level,
            previous_level: point.previous_level,
            link_factor: point.link_factor,
            constituent_count: point.constituent_count,
            inception: point.inception,
          })),
          next_cursor: page.next
            ? encodeCursor<HistoryCursor>(signingKey, 'market_index_history', filters, {
                a: page.next.as_of,
                i: page.next.id,
                f: window.from.toISOString(),
                t: window.to.toISOString(),
              })
            : null,
        };
      },
      {
        operation: 'market_index.history',
        query: historyQuery,
        detail: {
          summary: 'Market index levels over time',
          description: [
            'The index levels of a marketplace and segment, oldest first, one point per calculation with its level, previous level, link factor and constituent count. `to` defaults to now and `from` to 30 days before it; a range may span at most 366 days. The window of the first page rides in its cursor.',
            '`limit` 1 to 1000 (default 100).',
            'Errors: 400 `invalid_request` (as GET /v2/market-index/cs2, or `from` not before `to`, or a range over 366 days), 400 `invalid_cursor`.',
          ].join('\n\n'),
          tags: ['market'],
          responses: routeResponses({ 200: { description: 'One page of levels', body: levelHistory } }),
        },
      },
    )
    .get(
      '/v2/market-index/cs2/calculations/:calculation_id/constituents',
      async ({ params, query, principal }) => {
        const calculation = await findCalculation(deps.sql, params.calculation_id);
        // Only successful calculations are published; a failed one has no constituents by definition.
        if (calculation?.status !== 'succeeded') throw errors.notFound('No successful index calculation has this id.');
        if (calculation.calculated_at < publishedSince(deps)) {
          const days = deps.config.RETENTION_INDEX_VECTORS_DAYS;
          throw new ApiError(
            410,
            'constituents_expired',
            `The constituents of a calculation are kept for ${days} days after it (RETENTION_INDEX_VECTORS_DAYS); this one was calculated at ${calculation.calculated_at.toISOString()}.`,
          );
        }
        const filters = { workspace: principal.workspace.id, calculation: calculation.id };
        const after = query.cursor ? decodeCursor(signingKey, 'market_index_constituents', filters, query.cursor, constituentPosition) : null;
        const page = await listConstituents(deps.sql, calculation, after, query.limit);
        return {
          calculation: calculationSummary(calculation),
          data: page.items.map((item) => ({
            ...item,
            ratio: item.previous_price === null ? null : ratioText(item.previous_price, item.current_price),
          })),
          next_cursor: page.next ? encodeCursor(signingKey, 'market_index_constituents', filters, page.next) : null,
        };
      },
      {
        operation: 'market_index.constituents',
        params: calculationParams,
        query: constituentsQuery,
        detail: {
          summary: 'Constituents of a market index calculation',
          description: [
            'Every constituent (item and version) of one successful calculation, with its previous and current price and their ratio (null when it had no previous price), paged.',
            '`limit` 1 to 1000 (default 100).',
            'Errors: 400 `invalid_cursor`, 404 `not_found` (no successful calculation has this id), 410 `constituents_expired` (constituents are kept `RETENTION_INDEX_VECTORS_DAYS` after a calculation).',
          ].join('\n\n'),
          tags: ['market'],
          responses: routeResponses({ 200: { description: 'One page of constituents', body: constituentsPage } }, 404, 410),
        },
      },
    );
}
