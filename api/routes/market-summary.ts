import { Elysia } from 'elysia';
import { z } from 'zod';
import { marketSummary, marketSummarySchema } from '../../shared/market/summary.ts';
import type { AppDeps } from '../deps.ts';
import { routeResponses } from '../openapi.ts';
import { apiKeyPlugin, type ApiKeyPluginDeps } from '../plugins/api-key.ts';
import { marketplaceField, segmentFilterParser, segmentQueryFields } from '../segment-filter.ts';

const summaryQuery = z
  .object({
    marketplace: marketplaceField
      .optional()
      .describe('Only this marketplace; omitted: every marketplace'),
    ...segmentQueryFields,
    fresh_only: z
      .enum(['true', 'false'], { error: (issue) => `expected true or false, got ${JSON.stringify(issue.input)}` })
      .default('false')
      .describe('Count only prices that are fresh now (younger than their source’s stale threshold)'),
  })
  .strict();

export function marketSummaryRoutes(deps: Pick<AppDeps, 'sql' | 'now' | 'marketSummaries'> & ApiKeyPluginDeps) {
  const parseSegment = segmentFilterParser(deps);
  return new Elysia({ name: 'market-summary-routes' })
    .use(apiKeyPlugin(deps))
    .get(
      '/v2/market/summary',
      async ({ query }) => {
        const segment = await parseSegment(query);
        return marketSummary(
          deps.sql,
          { marketplace: query.marketplace ?? null, segment, freshOnly: query.fresh_only === 'true' },
          deps.now,
          deps.marketSummaries,
        );
      },
      {
        operation: 'market.summary',
        query: summaryQuery,
        detail: {
          summary:
            'Current USD totals from the latest price of every item per marketplace: items priced, sum of lowest prices, listed value and listings, overall and per marketplace (needs market:read)',
          tags: ['market'],
          responses: routeResponses({ 200: { description: 'The totals', body: marketSummarySchema } }),
        },
      },
    );
}
