import { Elysia } from 'elysia';
import { z } from 'zod';
import { EVENT_TYPES } from '../../shared/events/outbox.ts';
import { decodeCursor, encodeCursor } from '../../shared/http/cursor.ts';
import { errors } from '../../shared/http/errors.ts';
import { cursorInstant, noBody, pageCursor, pageLimit, text, uuid } from '../../shared/http/validation.ts';
import type { ApiKeyPrincipal } from '../../shared/identity/api-keys.ts';
import { DELIVERY_STATES, type DeliveryPosition, listDeliveries } from '../../shared/webhooks/deliveries.ts';
import { type DeliveryJob, deliveryEnqueuer } from '../../shared/webhooks/dispatch.ts';
import {
  DISABLE_AFTER_FAILING_MS,
  DISABLED_BY_REQUEST,
  type EndpointPosition,
  FAILING_DISABLED_REASON,
  findWebhookEndpoint,
  listWebhookEndpoints,
} from '../../shared/webhooks/endpoints.ts';
import { SecretKeyring } from '../../shared/webhooks/secrets.ts';
import {
  createWebhookEndpoint,
  PREVIOUS_SECRET_OVERLAP_MS,
  removeWebhookEndpoint,
  retryDelivery,
  rotateEndpointSecret,
  sendTestEvent,
  updateEndpoint,
} from '../../shared/webhooks/service.ts';
import { MAX_WEBHOOK_URL_LENGTH } from '../../shared/webhooks/targets.ts';
import type { AppDeps } from '../deps.ts';
import { routeResponses } from '../openapi.ts';
import { type ApiKeyPluginDeps, apiKeyPlugin } from '../plugins/api-key.ts';
import { type IdempotencyPluginDeps, idempotencyPlugin } from '../plugins/idempotency.ts';
import { type RequestMeta, requestMetaPlugin } from '../plugins/request-meta.ts';
import { webhookEventPageRoutes } from './webhook-event-pages.ts';

export const WEBHOOK_PAGE_LIMIT = { default: 25, max: 100 } as const;

const allowedEventTypes = EVENT_TYPES.join(', ');
const urlField = text({ min: 1, max: MAX_WEBHOOK_URL_LENGTH, trim: true }).describe('HTTPS address that receives the events');
const eventTypesField = z
  .array(z.enum(EVENT_TYPES, { error: (issue) => `unknown event type ${JSON.stringify(issue.input)}; one of ${allowedEventTypes}` }))
  .min(1, `name at least one event type: ${allowedEventTypes}`)
  .max(EVENT_TYPES.length * 2);
const descriptionField = text({ min: 1, max: 500, trim: true });
const createBody = z
  .object({
    url: urlField,
    event_types: eventTypesField,
    description: descriptionField.optional(),
  })
  .strict();
// docs/design.md §15: any of the fields, at least one; unknown fields are a 400.
const updateBody = z
  .object({
    url: urlField.optional(),
    event_types: eventTypesField.optional(),
    description: descriptionField.nullable().optional().describe('Free text up to 500 characters; null clears it'),
    enabled: z.boolean().optional().describe('false disables the endpoint (its pending deliveries are cancelled); true re-enables it'),
  })
  .strict()
  .refine((body) => Object.values(body).some((value) => value !== undefined), {
    message: 'name at least one field to change: url, event_types, description, enabled',
  });

const endpointSchema = z.object({
  id: z.uuid(),
  url: z.string(),
  description: z.string().nullable(),
  event_types: z.array(z.enum(EVENT_TYPES)),
  enabled: z.boolean().describe('false while disabled: nothing is delivered until it is enabled again'),
  status: z.enum(['enabled', 'disabled']),
  disabled_reason: z.string().nullable(),
  disabled_at: z.string().nullable(),
  rotation_overlap_ends_at: z
    .string()
    .nullable()
    .describe('After a rotation: until when deliveries also carry a second signature, made with the previous signing key'),
  created_at: z.string(),
  updated_at: z.string().nullable(),
});
const rotatedSecret = z.object({
  secret: z.string().describe('The new signing secret; shown in this response only'),
  previous_secret_expires_at: z.string().describe('Until then deliveries carry a second signature, with the previous secret'),
});
const testEventAccepted = z.object({ event_id: z.uuid().describe('The id of the webhook.test event (the webhook-id header of its delivery)') });
const retryAccepted = z.object({
  delivery_id: z.uuid(),
  event_id: z.uuid(),
  status: z.literal('pending').describe('The delivery waits for the attempt, due now'),
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
  manual: z.boolean().describe('Made by POST …/retry rather than the retry schedule'),
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
const deliveryParams = z.object({ webhook_id: uuid('The id of a webhook endpoint (uuid)'), delivery_id: uuid('The id of one of its deliveries (uuid)') });

const position: z.ZodType<EndpointPosition & DeliveryPosition> = z.object({ id: uuid('position id'), created_at: cursorInstant });

const notFound = () => errors.notFound('No webhook endpoint with this id in your workspace.');

/** docs/design.md §8: webhook endpoints of the key's workspace and their deliveries. */
export function webhookRoutes(deps: Pick<AppDeps, 'config' | 'sql' | 'now' | 'queues' | 'log'> & ApiKeyPluginDeps & IdempotencyPluginDeps) {
  const signingKey = deps.config.SIGNING_KEY!;
  const enqueueDeliveries = deliveryEnqueuer(deps.queues.webhooks);
  // A manual retry is due in Postgres before it is enqueued: if Redis refuses the job, the pool's
  // sweeper enqueues the delivery within seconds, so the request still succeeds.
  const enqueueRetry = async (jobs: DeliveryJob[]) => {
    await enqueueDeliveries(jobs).catch((error: Error) => deps.log.warn({ err: error.message }, 'could not enqueue a manual webhook retry; the sweeper will'));
  };
  const keyring = SecretKeyring.fromConfig(deps.config);
  const policy = { allowPrivate: deps.config.WEBHOOK_ALLOW_PRIVATE_TARGETS };
  const meta = (principal: ApiKeyPrincipal, requestMeta: RequestMeta) => ({
    ...requestMeta,
    workspaceId: principal.workspace.id,
    actor: { type: 'api_key' as const, id: principal.keyId },
  });

  return (
    new Elysia({ name: 'webhook-routes' })
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
            summary: 'Create a webhook endpoint',
            description: [
              "Creates an endpoint that receives the workspace's events of `event_types` as signed POST requests (Standard Webhooks headers `webhook-id`, `webhook-timestamp`, `webhook-signature`) and answers 201 with its `secret` (`whsec_…`), shown in this response only and stored only encrypted.",
              'The `url` must be https and its host must not be or resolve to a loopback, private, link-local or metadata address (checked again at every delivery; `WEBHOOK_ALLOW_PRIVATE_TARGETS` allows them for development). A failed delivery is retried after 5 s, 5 min, 30 min, 2 h, 5 h, 10 h and 10 h by default. A workspace has at most 20 endpoints.',
              'Requires an `Idempotency-Key`.',
              'Errors: 400 `invalid_request` (a url that is not allowed, an unknown event type), 400 `idempotency_key_required`, 409 `webhook_limit_reached`, 409 `idempotency_key_reused` or `idempotency_key_in_use`, 503 `secret_storage_unavailable` (`WEBHOOK_SECRET_KEY` is not configured).',
            ].join('\n\n'),
            tags: ['webhooks'],
            responses: routeResponses({ 201: { description: 'Endpoint created; `secret` appears in this response only', body: createdEndpoint } }),
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
          detail: {
            summary: 'Webhook endpoints, newest first',
            description: [
              "The workspace's endpoints, newest first, never their secrets.",
              '`limit` 1 to 100 (default 25).',
              'Errors: 400 `invalid_cursor`.',
            ].join('\n\n'),
            tags: ['webhooks'],
          },
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
          detail: {
            summary: 'One webhook endpoint',
            description: [
              'One endpoint: its url, event types, description, whether it is enabled and why not; never its secret.',
              'Errors: 404 `not_found` (no such endpoint in your workspace).',
            ].join('\n\n'),
            tags: ['webhooks'],
            responses: routeResponses({}, 404),
          },
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
          detail: {
            summary: 'Delete a webhook endpoint',
            description: [
              'Deletes the endpoint and answers 204: its secret is destroyed and its deliveries not yet made are cancelled.',
              'Errors: 404 `not_found` (no such endpoint in your workspace).',
            ].join('\n\n'),
            tags: ['webhooks'],
            responses: routeResponses({ 204: 'Deleted' }, 404),
          },
        },
      )
      .get(
        '/v2/webhooks/:webhook_id/deliveries',
        async ({ principal, params, query }) => {
          const endpoint = await findWebhookEndpoint(deps.sql, principal.workspace.id, params.webhook_id);
          if (!endpoint) throw notFound();
          // docs/interface.md §4: the cursor binds the workspace, the endpoint and the status filter (not the page size).
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
            summary: "A webhook endpoint's deliveries",
            description: [
              "The endpoint's deliveries, newest first, optionally only those in `status`, each with every attempt (response status, duration, error, manual or scheduled) and the time of the next retry.",
              '`limit` 1 to 100 (default 25).',
              'Errors: 400 `invalid_cursor`, 404 `not_found` (no such endpoint in your workspace).',
            ].join('\n\n'),
            tags: ['webhooks'],
            responses: routeResponses({}, 404),
          },
        },
      )
      .patch(
        '/v2/webhooks/:webhook_id',
        async ({ principal, params, body, requestMeta }) =>
          updateEndpoint(
            deps.sql,
            policy,
            params.webhook_id,
            { url: body.url, eventTypes: body.event_types, description: body.description, enabled: body.enabled },
            meta(principal, requestMeta),
          ),
        {
          operation: 'webhooks.update',
          params: endpointParams,
          body: updateBody,
          detail: {
            summary: 'Change a webhook endpoint',
            description: [
              'Applies the fields given and returns the endpoint. Any of `url`, `event_types`, `description` (null clears it) and `enabled`; at least one, and no other field.',
              'A new `url` is checked as at creation: https only, and its host must not be or resolve to a loopback, private, link-local or metadata address (checked again at every delivery). Deliveries not yet made go to the new url; new `event_types` apply to events written from now on.',
              `\`enabled: false\` disables the endpoint (\`disabled_reason\`: "${DISABLED_BY_REQUEST}"); its pending deliveries are cancelled and no event is delivered to it while it is disabled, not even later: events written meanwhile are not kept for it. An endpoint is also disabled by the service when a receiver answers 410 Gone, or when every attempt has failed for ${DISABLE_AFTER_FAILING_MS / 86_400_000} days ("${FAILING_DISABLED_REASON}"). \`enabled: true\` re-enables it, clears \`disabled_reason\` and \`disabled_at\`, and deliveries resume with the next event.`,
              'Recorded as the audit event `webhook_endpoint.updated` with the changed field names (the url only as its host). No Idempotency-Key: applying the same change twice leaves the same endpoint.',
              'Errors: 400 `invalid_request` (an empty body, an unknown field, a url that is not allowed, an unknown event type, a malformed id), 403 `insufficient_scope` (needs webhooks:write), 404 `not_found` (no such endpoint in your workspace).',
            ].join('\n\n'),
            tags: ['webhooks'],
            responses: routeResponses({ 200: { description: 'The endpoint as changed', body: endpointSchema } }, 404),
          },
        },
      )
      .post(
        '/v2/webhooks/:webhook_id/rotate-secret',
        async ({ principal, params, requestMeta }) => rotateEndpointSecret(deps.sql, keyring, params.webhook_id, meta(principal, requestMeta)),
        {
          operation: 'webhooks.rotate_secret',
          body: noBody,
          params: endpointParams,
          detail: {
            summary: 'Rotate a webhook signing secret',
            description: [
              `Replaces the endpoint's signing secret with a new one (\`whsec_\` + base64 of 32 random bytes), returned in this response only: it is never shown again, never logged, and stored only encrypted. For ${PREVIOUS_SECRET_OVERLAP_MS / 3_600_000} h (until \`previous_secret_expires_at\`) every delivery carries two signatures in \`webhook-signature\`, the new one first: \`v1,<new> v1,<previous>\`, so a receiver verifying with either secret (any Standard Webhooks library) keeps accepting deliveries while it switches. After that only the new secret signs.`,
              'Rotating again before the 24 h are over replaces the previous secret with the one in force just before, so at most two signatures are ever sent. Works on a disabled endpoint too.',
              'Recorded as the audit event `webhook_endpoint.secret_rotated` (no secret in it). No Idempotency-Key: each call is a new rotation, so keep the answer.',
              'Errors: 400 `invalid_request` (malformed id), 403 `insufficient_scope` (needs webhooks:write), 404 `not_found` (no such endpoint in your workspace), 503 `secret_storage_unavailable` (WEBHOOK_SECRET_KEY is not configured).',
            ].join('\n\n'),
            tags: ['webhooks'],
            responses: routeResponses({ 200: { description: 'The new secret (shown only here) and the end of the overlap', body: rotatedSecret } }, 404),
          },
        },
      )
      .post(
        '/v2/webhooks/:webhook_id/test',
        async ({ principal, params, requestMeta, set }) => {
          const accepted = await sendTestEvent(deps.sql, params.webhook_id, meta(principal, requestMeta));
          set.status = 202;
          return accepted;
        },
        {
          operation: 'webhooks.test',
          body: noBody,
          params: endpointParams,
          detail: {
            summary: 'Send a test event to a webhook endpoint',
            description: [
              'Writes a `webhook.test` event (`data`: `{webhook_id, message, requested_at}`) for this endpoint only, whatever its `event_types`, and answers 202 with its `event_id` at once. It is delivered like any event: signed (with both secrets during a rotation), retried on the schedule if the receiver fails, and listed in GET /v2/webhooks/{webhook_id}/deliveries, usually within a second or two.',
              'Recorded as the audit event `webhook_endpoint.test_requested`. No Idempotency-Key: each call sends one more test event.',
              'Errors: 400 `invalid_request` (malformed id), 403 `insufficient_scope` (needs webhooks:write), 404 `not_found` (no such endpoint in your workspace), 409 `webhook_disabled` (the endpoint is disabled: enable it first).',
            ].join('\n\n'),
            tags: ['webhooks'],
            responses: routeResponses({ 202: { description: 'The test event is written and will be delivered', body: testEventAccepted } }, 404, 409),
          },
        },
      )
      .post(
        '/v2/webhooks/:webhook_id/deliveries/:delivery_id/retry',
        async ({ principal, params, requestMeta, set }) => {
          const accepted = await retryDelivery(deps.sql, enqueueRetry, params.webhook_id, params.delivery_id, meta(principal, requestMeta));
          set.status = 202;
          return accepted;
        },
        {
          operation: 'webhooks.deliveries.retry',
          body: noBody,
          params: deliveryParams,
          detail: {
            summary: 'Retry a failed webhook delivery now',
            description: [
              "For a delivery whose last attempt failed, whether it waits for its next scheduled retry (`pending`) or has none left (`failed`): one new attempt is made now, outside the retry schedule, and the answer is 202 at once. The attempt appears in the delivery's `attempts` with `manual: true`.",
              'If it succeeds, the delivery succeeds. If it fails, the schedule goes on as before: a pending delivery keeps the time of its next scheduled retry, and a failed one stays failed. Asking again before the attempt is made does not add another.',
              'Recorded as the audit event `webhook_delivery.retry_requested`; refusals (409) as `request.denied`. No Idempotency-Key.',
              'Errors: 400 `invalid_request` (malformed ids), 403 `insufficient_scope` (needs webhooks:write), 404 `not_found` (no such endpoint in your workspace, or no such delivery of that endpoint), 409 `delivery_succeeded` (it succeeded: nothing to retry), 409 `delivery_not_retryable` (never attempted yet, being attempted right now, cancelled, or its event has expired), 409 `webhook_disabled` (the endpoint is disabled: enable it first).',
            ].join('\n\n'),
            tags: ['webhooks'],
            responses: routeResponses({ 202: { description: 'The attempt is due now', body: retryAccepted } }, 404, 409),
          },
        },
      )
      // The keyless pages behind a prices.updated event's signed next_url.
      .use(webhookEventPageRoutes(deps))
  );
}
