import { Elysia } from 'elysia';
import { z } from 'zod';
import { marketSummarySchema } from '../../shared/market/summary.ts';
import { convertDocumentText, currencyParam, resolveConversion } from '../../shared/prices/currency.ts';
import type { AppDeps } from '../deps.ts';
import { routeResponses } from '../openapi.ts';
import { type ApiKeyPluginDeps, apiKeyPlugin } from '../plugins/api-key.ts';
import { marketplaceField, segmentFilterParser, segmentQueryFields } from '../segment-filter.ts';

const summaryQuery = z
  .object({
    marketplace: marketplaceField.optional().describe('Only this marketplace; omitted: every marketplace'),
    ...segmentQueryFields,
    fresh_only: z
      .enum(['true', 'false'], { error: (issue) => `expected true or false, got ${JSON.stringify(issue.input)}` })
      .default('false')
      .describe('Count only prices that are fresh now (younger than their source’s stale threshold)'),
    currency: currencyParam.optional(),
  })
  .strict();

// The summary's sums are money too (each converted once, never summed from converted parts).
const SUMMARY_MONEY_FIELDS = new Set(['lowest_price_sum', 'listed_value_sum']);

export function marketSummaryRoutes(deps: Pick<AppDeps, 'sql' | 'now' | 'marketSummaries'> & ApiKeyPluginDeps) {
  const parseSegment = segmentFilterParser(deps);
  return new Elysia({ name: 'market-summary-routes' }).use(apiKeyPlugin(deps)).get(
    '/v2/market/summary',
    async ({ query, set }) => {
      const conversion = await resolveConversion(deps.sql, query.currency);
      const segment = await parseSegment(query);
      const summary = await deps.marketSummaries.read({ marketplace: query.marketplace ?? null, segment, freshOnly: query.fresh_only === 'true' });
      if (!conversion) return summary;
      // The summary may be shared from a cache: it is converted as a copy, through its JSON text.
      set.headers['content-type'] = 'application/json;charset=utf-8';
      return convertDocumentText(JSON.stringify(summary), conversion, SUMMARY_MONEY_FIELDS);
    },
    {
      operation: 'market.summary',
      query: summaryQuery,
      detail: {
        summary: 'Current market totals',
        description: [
          'Totals from the latest price of every item at each marketplace: items priced, the sum of lowest prices, listed value and listings, overall and per marketplace. `marketplace` keeps one marketplace; `segment` and `value` one segment; `fresh_only=true` counts only prices that are fresh now. Sums are decimal strings in USD, or in `currency` (each sum converted once).',
          'Errors: 400 `invalid_request` (an unknown marketplace, segment, value or currency), 503 `fx_unavailable`.',
        ].join('\n\n'),
        tags: ['market'],
        responses: routeResponses({ 200: { description: 'The totals', body: marketSummarySchema } }, 503),
      },
    },
  );
}
