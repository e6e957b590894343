import { Elysia } from 'elysia';
import { z } from 'zod';
import { decodeCursor, encodeCursor } from '../../shared/cursor.ts';
import { errors } from '../../shared/errors.ts';
import { EVENT_TYPES } from '../../shared/events/outbox.ts';
import type { ApiKeyPrincipal } from '../../shared/identity/api-keys.ts';
import { cursorInstant, pageCursor, pageLimit, text, uuid } from '../../shared/validation.ts';
import { DELIVERY_STATES, listDeliveries, type DeliveryPosition } from '../../shared/webhooks/deliveries.ts';
import { findWebhookEndpoint, listWebhookEndpoints, type EndpointPosition } from '../../shared/webhooks/endpoints.ts';
import { SecretKeyring } from '../../shared/webhooks/secrets.ts';
import { createWebhookEndpoint, removeWebhookEndpoint } from '../../shared/webhooks/service.ts';
import { MAX_WEBHOOK_URL_LENGTH } from '../../shared/webhooks/targets.ts';
import type { AppDeps } from '../deps.ts';
import { routeResponses } from '../openapi.ts';
import { webhookEventPageRoutes } from './webhook-event-pages.ts';
import { apiKeyPlugin, type ApiKeyPluginDeps } from '../plugins/api-key.ts';
import { idempotencyPlugin, type IdempotencyPluginDeps } from '../plugins/idempotency.ts';
import { requestMetaPlugin, type RequestMeta } from '../plugins/request-meta.ts';

export const WEBHOOK_PAGE_LIMIT = { default: 25, max: 100 } as const;

const allowedEventTypes = EVENT_TYPES.join(', ');
const createBody = z
  .object({
    url: text({ min: 1, max: MAX_WEBHOOK_URL_LENGTH, trim: true }).describe('HTTPS address that receives the events'),
    event_types: z
      .array(z.enum(EVENT_TYPES, { error: (issue) => `unknown event type ${JSON.stringify(issue.input)}; one of ${allowedEventTypes}` }))
      .min(1, `name at least one event type: ${allowedEventTypes}`)
      .max(EVENT_TYPES.length * 2),
    description: text({ min: 1, max: 500, trim: true }).optional(),
  })
  .strict();

const endpointSchema = z.object({
  id: z.uuid(),
  url: z.string(),
  description: z.string().nullable(),
  event_types: z.array(z.enum(EVENT_TYPES)),
  status: z.enum(['enabled', 'disabled']),
  disabled_reason: z.string().nullable(),
  disabled_at: z.string().nullable(),
  created_at: z.string(),
});
const createdEndpoint = endpointSchema.extend({
  secret: z.string().describe('The signing secret for verifying deliveries; shown in this response only'),
});
const attemptSchema = z.object({
  attempt: z.number().int(),
  status: z.enum(['succeeded', 'failed', 'interrupted']),
  response_status: z.number().int().nullable(),
  duration_ms: z.number().int().nullable(),
  error: z.string().nullable(),
  started_at: z.string(),
  next_attempt_at: z.string().nullable(),
});
const deliverySchema = z.object({
  id: z.uuid(),
  event_id: z.uuid(),
  event_type: z.enum(EVENT_TYPES),
  status: z.enum(DELIVERY_STATES),
  attempt_count: z.number().int(),
  next_attempt_at: z.string().nullable(),
  last_response_status: z.number().int().nullable(),
  last_error: z.string().nullable(),
  created_at: z.string(),
  settled_at: z.string().nullable(),
  attempts: z.array(attemptSchema),
});

const pageFields = {
  limit: pageLimit(WEBHOOK_PAGE_LIMIT),
  cursor: pageCursor,
};
const listQuery = z.object(pageFields).strict();
const deliveriesQuery = z.object({ status: z.enum(DELIVERY_STATES).optional(), ...pageFields }).strict();
const endpointParams = z.object({ webhook_id: uuid('The id of a webhook endpoint (uuid)') });

const position: z.ZodType<EndpointPosition & DeliveryPosition> = z.object({ id: uuid('position id'), created_at: cursorInstant });

const notFound = () => errors.notFound('No webhook endpoint with this id in your workspace.');

/** DESIGN 8: webhook endpoints of the key's workspace and their deliveries. */
export function webhookRoutes(deps: Pick<AppDeps, 'config' | 'sql' | 'now'> & ApiKeyPluginDeps & IdempotencyPluginDeps) {
  const signingKey = deps.config.SIGNING_KEY!;
  const keyring = SecretKeyring.fromConfig(deps.config);
  const policy = { allowPrivate: deps.config.WEBHOOK_ALLOW_PRIVATE_TARGETS };
  const meta = (principal: ApiKeyPrincipal, requestMeta: RequestMeta) => ({
    ...requestMeta,
    workspaceId: principal.workspace.id,
    actor: { type: 'api_key' as const, id: principal.keyId },
  });

  return new Elysia({ name: 'webhook-routes' })
    .use(apiKeyPlugin(deps))
    .use(idempotencyPlugin(deps))
    .use(requestMetaPlugin(deps))
    .post(
      '/v2/webhooks',
      async ({ principal, body, set, requestMeta }) => {
        const created = await createWebhookEndpoint(
          deps.sql,
          keyring,
          policy,
          { url: body.url, eventTypes: body.event_types, description: body.description },
          meta(principal, requestMeta),
        );
        set.status = 201;
        return created;
      },
      {
        operation: 'webhooks.create',
        idempotent: { operation: 'webhooks.create', required: true },
        body: createBody,
        detail: {
          summary: 'Create a webhook endpoint; its signing secret is returned in this response only (needs webhooks:write)',
          tags: ['webhooks'], responses: routeResponses({ 201: { description: 'Endpoint created; `secret` appears in this response only', body: createdEndpoint } }),
        },
      },
    )
    .get(
      '/v2/webhooks',
      async ({ principal, query }) => {
        const filters = { workspace: principal.workspace.id };
        const after = query.cursor ? decodeCursor(signingKey, 'webhook_endpoints', filters, query.cursor, position) : null;
        const page = await listWebhookEndpoints(deps.sql, principal.workspace.id, after, query.limit);
        return { data: page.endpoints, next_cursor: page.next ? encodeCursor(signingKey, 'webhook_endpoints', filters, page.next) : null };
      },
      {
        operation: 'webhooks.list',
        query: listQuery,
        response: { 200: z.object({ data: z.array(endpointSchema), next_cursor: z.string().nullable() }) },
        detail: { summary: 'Webhook endpoints of the workspace, newest first (needs webhooks:read)', tags: ['webhooks'] },
      },
    )
    .get(
      '/v2/webhooks/:webhook_id',
      async ({ principal, params }) => {
        const endpoint = await findWebhookEndpoint(deps.sql, principal.workspace.id, params.webhook_id);
        if (!endpoint) throw notFound();
        return endpoint;
      },
      {
        operation: 'webhooks.get',
        params: endpointParams,
        response: { 200: endpointSchema },
        detail: { summary: 'One webhook endpoint, never its secret (needs webhooks:read)', tags: ['webhooks'], responses: routeResponses({}, 404) },
      },
    )
    .delete(
      '/v2/webhooks/:webhook_id',
      async ({ principal, params, set, requestMeta }) => {
        await removeWebhookEndpoint(deps.sql, params.webhook_id, meta(principal, requestMeta));
        set.status = 204;
      },
      {
        operation: 'webhooks.delete',
        params: endpointParams,
        detail: { summary: 'Delete a webhook endpoint: its secret is destroyed and unsent deliveries are cancelled (needs webhooks:write)', tags: ['webhooks'], responses: routeResponses({ 204: 'Deleted' }, 404) },
      },
    )
    .get(
      '/v2/webhooks/:webhook_id/deliveries',
      async ({ principal, params, query }) => {
        const endpoint = await findWebhookEndpoint(deps.sql, principal.workspace.id, params.webhook_id);
        if (!endpoint) throw notFound();
        // spec 4: the cursor binds the workspace, the endpoint and the status filter (not the page size).
        const filters = { workspace: principal.workspace.id, endpoint: endpoint.id, status: query.status ?? null };
        const after = query.cursor ? decodeCursor(signingKey, 'webhook_deliveries', filters, query.cursor, position) : null;
        const page = await listDeliveries(deps.sql, endpoint.id, query.status, after, query.limit);
        return { data: page.deliveries, next_cursor: page.next ? encodeCursor(signingKey, 'webhook_deliveries', filters, page.next) : null };
      },
      {
        operation: 'webhooks.deliveries.list',
        params: endpointParams,
        query: deliveriesQuery,
        response: { 200: z.object({ data: z.array(deliverySchema), next_cursor: z.string().nullable() }) },
        detail: {
          summary: "An endpoint's deliveries, newest first, each with every attempt: status, response code, duration, next retry (needs webhooks:read)",
          tags: ['webhooks'], responses: routeResponses({}, 404),
        },
      },
    )
    // The keyless pages behind a prices.updated event's signed next_url.
    .use(webhookEventPageRoutes(deps));
}
