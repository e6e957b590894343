import { Elysia } from 'elysia';
import { z } from 'zod';
import { errors } from '../../shared/http/errors.ts';
import { checkEventPageSignature, findEventPage } from '../../shared/webhooks/event-pages.ts';
import type { AppDeps } from '../deps.ts';
import { routeResponses } from '../openapi.ts';

const pageParams = z.object({
  event_id: z.uuid({ error: 'must be a uuid' }).describe('The prices.updated event id (the webhook-id of its delivery)'),
  // Page 1 is the event itself; the pages behind next_url start at 2.
  page: z
    .string()
    .regex(/^[1-9]\d{0,5}$/, 'must be a page number')
    .transform(Number)
    .describe('Page number, from 2'),
});
// Unknown parameters are tolerated: receivers follow the URL as they got it.
const pageQuery = z.object({ expires: z.string().max(20).optional(), signature: z.string().max(200).optional() });

const itemSchema = z.object({
  catalog_id: z.string(),
  version: z.string(),
  price: z.string(),
  previous_price: z.string().nullable(),
  bid: z.string().nullable().describe('Highest buy order at the source (decimal string), null where it publishes none'),
  volume_7d: z.number().int().nullable().describe('Sales at the source in the last 7 days, null where it does not say'),
});
const pageSchema = z.object({
  event_id: z.uuid(),
  type: z.literal('prices.updated'),
  source: z.string(),
  run_id: z.string(),
  page: z.number().int(),
  page_count: z.number().int(),
  items: z.array(itemSchema),
  next_url: z.string().nullable(),
});

/**
 * docs/design.md §8: the pages of a prices.updated event past its first, behind the signed `next_url` that
 * deliveries carry. No API key: the signed URL is the credential, as for audit export downloads.
 */
export function webhookEventPageRoutes(deps: Pick<AppDeps, 'config' | 'sql' | 'now'>) {
  const signingKey = deps.config.SIGNING_KEY!;
  return new Elysia({ name: 'webhook-event-page-routes' }).get(
    '/v2/webhooks/events/:event_id/pages/:page',
    async ({ params, query, request, set }) => {
      const now = deps.now();
      // Under PUBLIC_BASE_URL, or the request's own origin when it is unset (development).
      const links = { signingKey, baseUrl: deps.config.PUBLIC_BASE_URL ?? new URL(request.url).origin };
      // The signature is checked before any lookup: unsigned traffic costs one HMAC.
      const check = checkEventPageSignature(signingKey, params.event_id, params.page, query.expires, query.signature, now);
      if (check === 'invalid')
        throw errors.forbidden('invalid_page_url', 'The page URL is not valid; follow the next_url of the event or of the previous page as it was given.');
      if (check === 'expired')
        throw errors.forbidden(
          'page_url_expired',
          'The page URL has expired; next_url links are valid for 24 hours from the delivery or page that carried them.',
        );
      const page = await findEventPage(deps.sql, params.event_id, params.page, links, now);
      if (!page) throw errors.notFound('This page of the event is no longer available.');
      set.headers['cache-control'] = 'private, no-store';
      return page;
    },
    {
      params: pageParams,
      query: pageQuery,
      response: { 200: pageSchema },
      detail: {
        summary: 'A further page of a prices.updated event',
        description: [
          "A `prices.updated` delivery carries the first page of changed prices; when there are more, its `next_url` leads here, and each page carries the next one's. The signed URL (`expires`, `signature`) is the only credential; links are valid for 24 hours from the delivery or page that carried them.",
          'Errors: 403 `invalid_page_url` (follow `next_url` as given), 403 `page_url_expired`, 404 `not_found` (the page is no longer kept).',
        ].join('\n\n'),
        tags: ['webhooks'],
        responses: routeResponses({}, 403, 404),
      },
    },
  );
}
