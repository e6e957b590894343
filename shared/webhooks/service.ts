import { type AuditActor, insertAuditEvent } from '../audit/events.ts';
import { EVENT_TYPES, type EventType, insertOutboxEvent } from '../events/outbox.ts';
import { errors } from '../http/errors.ts';
import type { Sql } from '../platform/db.ts';
import { newId } from '../util/ids.ts';
import { findDeliveryForRetry, requestManualAttempt } from './deliveries.ts';
import type { EnqueueDeliveries } from './dispatch.ts';
import {
  deleteWebhookEndpoint,
  type EndpointChanges,
  findSecretsNotUnderKey,
  findWebhookEndpoint,
  insertWebhookEndpoint,
  lockAndCountLiveEndpoints,
  MAX_ENDPOINTS_PER_WORKSPACE,
  replaceSealedSecret,
  rotateSealedSecret,
  updateWebhookEndpoint,
  type WebhookEndpoint,
} from './endpoints.ts';
import { generateSigningSecret, type SecretKeyring } from './secrets.ts';
import { parseWebhookUrl, resolveTarget, type TargetPolicy, TargetRefusedError } from './targets.ts';

type RequestMeta = { workspaceId: string; actor: AuditActor; requestId: string; now: Date };

/** A URL a webhook may be created with, or 400 naming what is wrong with it (checked at creation and again at every delivery). */
export async function checkWebhookUrl(raw: string, policy: TargetPolicy): Promise<URL> {
  try {
    const url = parseWebhookUrl(raw, policy);
    await resolveTarget(url, policy);
    return url;
  } catch (error) {
    if (!(error instanceof TargetRefusedError)) throw error;
    throw errors.invalidRequest(`The webhook url is not allowed: ${error.message}.`, [{ field: 'body.url', message: error.message }]);
  }
}

/** Each type once, in the order of the docs/design.md §8 list, so equal subscriptions look equal. */
function normaliseEventTypes(eventTypes: readonly EventType[]): EventType[] {
  return EVENT_TYPES.filter((type) => eventTypes.includes(type));
}

/**
 * Creates an endpoint with a new signing secret, sealed under the current WEBHOOK_SECRET_KEY, and
 * records `webhook_endpoint.created` in the same transaction (docs/design.md §7). A workspace that already
 * has MAX_ENDPOINTS_PER_WORKSPACE live endpoints gets 409 `webhook_limit_reached` instead. The clear secret exists
 * only in the returned object: this response is the one time the client sees it.
 */
export async function createWebhookEndpoint(
  sql: Sql,
  keyring: SecretKeyring,
  policy: TargetPolicy,
  input: { url: string; eventTypes: readonly EventType[]; description?: string },
  meta: RequestMeta,
): Promise<WebhookEndpoint & { secret: string }> {
  // docs/interface.md §6: creation fails with 503 when encrypted secret storage is not configured.
  if (!keyring.canSeal) {
    throw errors.unavailable(
      'secret_storage_unavailable',
      'Webhook signing secrets cannot be stored: encrypted secret storage (WEBHOOK_SECRET_KEY) is not configured.',
    );
  }
  const url = await checkWebhookUrl(input.url, policy);
  const id = newId();
  const secret = generateSigningSecret();
  const sealed = keyring.seal(id, secret);
  const eventTypes = normaliseEventTypes(input.eventTypes);
  const created = await sql.begin(async (tx) => {
    // Counted under the workspace's lock, so concurrent creates cannot all pass at 19.
    if ((await lockAndCountLiveEndpoints(tx, meta.workspaceId)) >= MAX_ENDPOINTS_PER_WORKSPACE) return null;
    const endpoint = await insertWebhookEndpoint(tx, {
      id,
      workspaceId: meta.workspaceId,
      url: url.href,
      description: input.description ?? null,
      eventTypes,
      secretCiphertext: sealed.ciphertext,
      secretKeyId: sealed.keyId,
      createdAt: meta.now,
    });
    await insertAuditEvent(tx, {
      workspaceId: meta.workspaceId,
      eventType: 'webhook_endpoint.created',
      resourceType: 'webhook_endpoint',
      resourceId: id,
      outcome: 'succeeded',
      actor: meta.actor,
      requestId: meta.requestId,
      occurredAt: meta.now,
      metadata: { host: url.host, event_types: eventTypes },
    });
    return { ...endpoint, secret };
  });
  if (created) return created;
  // docs/design.md §7: a 409 is recorded as a rejected request, as the idempotency conflicts are.
  await insertAuditEvent(sql, {
    workspaceId: meta.workspaceId,
    eventType: 'request.denied',
    resourceType: 'operation',
    resourceId: 'webhooks.create',
    outcome: 'rejected',
    actor: meta.actor,
    requestId: meta.requestId,
    occurredAt: meta.now,
    metadata: { status: 409, reason: 'webhook_limit_reached', limit: MAX_ENDPOINTS_PER_WORKSPACE },
  });
  throw errors.conflict(
    'webhook_limit_reached',
    `This workspace already has ${MAX_ENDPOINTS_PER_WORKSPACE} webhook endpoints, the most it may have; delete one to create another.`,
  );
}

const endpointNotFound = () => errors.notFound('No webhook endpoint with this id in your workspace.');

/** docs/design.md §7: a 409 is recorded as a rejected request (outside the failed transaction). */
async function recordConflict(sql: Sql, operation: string, reason: string, meta: RequestMeta, extra: Record<string, unknown> = {}): Promise<void> {
  await insertAuditEvent(sql, {
    workspaceId: meta.workspaceId,
    eventType: 'request.denied',
    resourceType: 'operation',
    resourceId: operation,
    outcome: 'rejected',
    actor: meta.actor,
    requestId: meta.requestId,
    occurredAt: meta.now,
    metadata: { status: 409, reason, ...extra },
  });
}

const endpointDisabled = (endpoint: WebhookEndpoint) =>
  errors.conflict(
    'webhook_disabled',
    `This webhook endpoint is disabled (${endpoint.disabled_reason ?? 'no reason recorded'}); re-enable it with PATCH {"enabled": true} first.`,
  );

/**
 * PATCH /v2/webhooks/{id} (docs/design.md §15): changes the url (checked as at creation: https, public
 * addresses only), the event types, the description (null clears it) or whether it is enabled,
 * and records `webhook_endpoint.updated` naming the changed fields. Deliveries not yet made go to
 * the new url; the new event types apply to events written from now on.
 */
export async function updateEndpoint(
  sql: Sql,
  policy: TargetPolicy,
  id: string,
  input: { url?: string; eventTypes?: readonly EventType[]; description?: string | null; enabled?: boolean },
  meta: RequestMeta,
): Promise<WebhookEndpoint> {
  const changes: EndpointChanges = {};
  if (input.url !== undefined) changes.url = (await checkWebhookUrl(input.url, policy)).href;
  if (input.eventTypes !== undefined) changes.eventTypes = normaliseEventTypes(input.eventTypes);
  if (input.description !== undefined) changes.description = input.description;
  if (input.enabled !== undefined) changes.enabled = input.enabled;
  return sql.begin(async (tx) => {
    const updated = await updateWebhookEndpoint(tx, meta.workspaceId, id, changes, meta.now);
    if (!updated) throw endpointNotFound();
    const { before, after } = updated;
    const changed = (['url', 'event_types', 'description', 'enabled'] as const).filter(
      (field) => JSON.stringify(before[field]) !== JSON.stringify(after[field]),
    );
    await insertAuditEvent(tx, {
      workspaceId: meta.workspaceId,
      eventType: 'webhook_endpoint.updated',
      resourceType: 'webhook_endpoint',
      resourceId: id,
      outcome: 'succeeded',
      actor: meta.actor,
      requestId: meta.requestId,
      occurredAt: meta.now,
      // The host only, never the url's path or query (they may hold the receiver's own tokens).
      metadata: {
        changed,
        host: new URL(after.url).host,
        event_types: after.event_types,
        enabled: after.enabled,
        ...(before.enabled !== after.enabled && !after.enabled ? { disabled_reason: after.disabled_reason } : {}),
      },
    });
    return after;
  });
}

/** How long deliveries are also signed with the secret a rotation replaced (docs/design.md §15). */
export const PREVIOUS_SECRET_OVERLAP_MS = 24 * 3_600_000;

/**
 * POST /v2/webhooks/{id}/rotate-secret (docs/design.md §15): a new signing secret, sealed under the current
 * WEBHOOK_SECRET_KEY; the one it replaces keeps signing deliveries (second in webhook-signature)
 * for 24 h, and a previous one from an earlier rotation is dropped. The clear secret exists only in
 * the returned object: never logged, never stored in clear, never returned again.
 */
export async function rotateEndpointSecret(
  sql: Sql,
  keyring: SecretKeyring,
  id: string,
  meta: RequestMeta,
): Promise<{ secret: string; previous_secret_expires_at: string }> {
  if (!keyring.canSeal) {
    throw errors.unavailable(
      'secret_storage_unavailable',
      'Webhook signing secrets cannot be stored: encrypted secret storage (WEBHOOK_SECRET_KEY) is not configured.',
    );
  }
  const secret = generateSigningSecret();
  const sealed = keyring.seal(id, secret);
  const previousExpiresAt = new Date(meta.now.getTime() + PREVIOUS_SECRET_OVERLAP_MS);
  await sql.begin(async (tx) => {
    const rotated = await rotateSealedSecret(tx, meta.workspaceId, id, sealed, previousExpiresAt, meta.now);
    if (!rotated) throw endpointNotFound();
    await insertAuditEvent(tx, {
      workspaceId: meta.workspaceId,
      eventType: 'webhook_endpoint.secret_rotated',
      resourceType: 'webhook_endpoint',
      resourceId: id,
      outcome: 'succeeded',
      actor: meta.actor,
      requestId: meta.requestId,
      occurredAt: meta.now,
      metadata: { key_id: sealed.keyId, previous_valid_until: previousExpiresAt.toISOString() },
    });
  });
  return { secret, previous_secret_expires_at: previousExpiresAt.toISOString() };
}

/**
 * POST /v2/webhooks/{id}/test (docs/design.md §15): a `webhook.test` event for this endpoint only, whatever
 * its event_types, through the outbox like any other event (so it is signed, retried and listed
 * among the deliveries). A disabled endpoint receives nothing: 409 `webhook_disabled`.
 */
export async function sendTestEvent(sql: Sql, id: string, meta: RequestMeta): Promise<{ event_id: string }> {
  type Outcome = { conflict: WebhookEndpoint } | { eventId: string };
  const outcome = await sql.begin(async (tx): Promise<Outcome> => {
    const endpoint = await findWebhookEndpoint(tx, meta.workspaceId, id);
    if (!endpoint) throw endpointNotFound();
    if (!endpoint.enabled) return { conflict: endpoint };
    const eventId = await insertOutboxEvent(tx, {
      type: 'webhook.test',
      workspaceId: meta.workspaceId,
      endpointId: id,
      payload: { webhook_id: id, message: 'A test event sent by POST /v2/webhooks/{id}/test; it needs no action.', requested_at: meta.now.toISOString() },
      at: meta.now,
    });
    await insertAuditEvent(tx, {
      workspaceId: meta.workspaceId,
      eventType: 'webhook_endpoint.test_requested',
      resourceType: 'webhook_endpoint',
      resourceId: id,
      outcome: 'accepted',
      actor: meta.actor,
      requestId: meta.requestId,
      occurredAt: meta.now,
      metadata: { event_id: eventId },
    });
    return { eventId };
  });
  if ('conflict' in outcome) {
    await recordConflict(sql, 'webhooks.test', 'webhook_disabled', meta);
    throw endpointDisabled(outcome.conflict);
  }
  return { event_id: outcome.eventId };
}

/**
 * POST /v2/webhooks/{id}/deliveries/{delivery_id}/retry (docs/design.md §15): one attempt now, outside the
 * schedule, of a delivery whose last attempt failed, whether it waits for its next scheduled retry
 * (`pending`) or has none left (`failed`). If the attempt fails, the delivery goes back to what it
 * was: its scheduled retry keeps its time, a failed one stays failed. 409 `delivery_succeeded` for
 * a delivery that succeeded; 409 `delivery_not_retryable` for one never attempted yet, being
 * attempted right now, cancelled, or whose event has expired; 409 `webhook_disabled` while the
 * endpoint is disabled. The attempt is enqueued after commit; if that fails, the sweeper enqueues
 * it within seconds (the delivery is due now in Postgres).
 */
export async function retryDelivery(
  sql: Sql,
  enqueue: EnqueueDeliveries,
  endpointId: string,
  deliveryId: string,
  meta: RequestMeta,
): Promise<{ delivery_id: string; event_id: string; status: 'pending' }> {
  type Outcome = { conflict: string; error: Error } | { attemptCount: number; eventId: string };
  const outcome = await sql.begin(async (tx): Promise<Outcome> => {
    const endpoint = await findWebhookEndpoint(tx, meta.workspaceId, endpointId);
    if (!endpoint) throw endpointNotFound();
    const delivery = await findDeliveryForRetry(tx, endpointId, deliveryId);
    if (!delivery) throw errors.notFound('No delivery with this id for this webhook endpoint.');
    if (delivery.state === 'succeeded') {
      return { conflict: 'delivery_succeeded', error: errors.conflict('delivery_succeeded', 'This delivery succeeded; there is nothing to retry.') };
    }
    if (!endpoint.enabled) return { conflict: 'webhook_disabled', error: endpointDisabled(endpoint) };
    const why =
      delivery.state === 'cancelled'
        ? 'it was cancelled'
        : delivery.state === 'delivering'
          ? 'an attempt is being made right now'
          : delivery.attempt_count === 0
            ? 'its first attempt has not been made yet'
            : !delivery.event_exists
              ? 'its event has expired'
              : null;
    if (why) return { conflict: 'delivery_not_retryable', error: errors.conflict('delivery_not_retryable', `This delivery cannot be retried: ${why}.`) };
    const requested = await requestManualAttempt(tx, deliveryId, meta.now);
    await insertAuditEvent(tx, {
      workspaceId: meta.workspaceId,
      eventType: 'webhook_delivery.retry_requested',
      resourceType: 'webhook_delivery',
      resourceId: deliveryId,
      outcome: 'accepted',
      actor: meta.actor,
      requestId: meta.requestId,
      occurredAt: meta.now,
      metadata: { endpoint_id: endpointId, event_id: delivery.event_id, state: delivery.state, attempt_count: delivery.attempt_count },
    });
    return { attemptCount: requested.attempt_count, eventId: delivery.event_id };
  });
  if ('conflict' in outcome) {
    await recordConflict(sql, 'webhooks.deliveries.retry', outcome.conflict, meta, { delivery_id: deliveryId });
    throw outcome.error;
  }
  // A distinct job id from the schedule's (whd-…): the scheduled job, if any, still fires at its time.
  await enqueue([{ deliveryId, attemptsMade: outcome.attemptCount, delayMs: 0, jobId: `whr-${deliveryId}-${outcome.attemptCount}` }]);
  return { delivery_id: deliveryId, event_id: outcome.eventId, status: 'pending' };
}

/** Deletes a live endpoint of the workspace (404 otherwise) and records `webhook_endpoint.deleted`. */
export async function removeWebhookEndpoint(sql: Sql, id: string, meta: RequestMeta): Promise<WebhookEndpoint> {
  return sql.begin(async (tx) => {
    const endpoint = await deleteWebhookEndpoint(tx, meta.workspaceId, id, meta.now);
    if (!endpoint) throw errors.notFound('No webhook endpoint with this id in your workspace.');
    await insertAuditEvent(tx, {
      workspaceId: meta.workspaceId,
      eventType: 'webhook_endpoint.deleted',
      resourceType: 'webhook_endpoint',
      resourceId: id,
      outcome: 'succeeded',
      actor: meta.actor,
      requestId: meta.requestId,
      occurredAt: meta.now,
      metadata: { host: new URL(endpoint.url).host, event_types: endpoint.event_types },
    });
    return endpoint;
  });
}

export type RewrapReport = { current_key_id: string; rewrapped: number; unreadable: { endpoint_id: string; secret_key_id: string }[] };

/**
 * Key rotation's last step (`npm run admin -- rewrap-webhook-secrets`): every live endpoint's secret
 * not yet under the current key is opened with the key it names and sealed again under the current
 * one, each with a `webhook_endpoint.secret_rewrapped` audit event in its transaction. Secrets whose
 * key is not configured are reported, never touched. Safe to run again, or from two hosts at once.
 */
export async function rewrapWebhookSecrets(sql: Sql, keyring: SecretKeyring, actor: AuditActor, batchSize = 200): Promise<RewrapReport> {
  const currentKeyId = keyring.currentKeyId;
  if (!currentKeyId) throw new Error('WEBHOOK_SECRET_KEY is not configured: there is no current key to rewrap under');
  const report: RewrapReport = { current_key_id: currentKeyId, rewrapped: 0, unreadable: [] };
  let afterId: string | null = null;
  for (;;) {
    const batch = await findSecretsNotUnderKey(sql, currentKeyId, afterId, batchSize);
    if (batch.length === 0) return report;
    afterId = batch[batch.length - 1]!.id;
    for (const endpoint of batch) {
      let secret: string;
      let previous: string | null = null;
      try {
        secret = keyring.open(endpoint.id, endpoint.secret_ciphertext, endpoint.secret_key_id);
      } catch {
        report.unreadable.push({ endpoint_id: endpoint.id, secret_key_id: endpoint.secret_key_id });
        continue;
      }
      // The previous secret of a rotation still signs for up to 24 h: rewrapped too, so the old key can go.
      if (endpoint.previous_secret_ciphertext && endpoint.previous_secret_key_id) {
        try {
          previous = keyring.open(endpoint.id, endpoint.previous_secret_ciphertext, endpoint.previous_secret_key_id);
        } catch {
          report.unreadable.push({ endpoint_id: endpoint.id, secret_key_id: endpoint.previous_secret_key_id });
          continue;
        }
      }
      const replaced = await sql.begin(async (tx) => {
        const sealedPrevious = previous === null ? null : keyring.seal(endpoint.id, previous);
        if (!(await replaceSealedSecret(tx, endpoint, keyring.seal(endpoint.id, secret), sealedPrevious))) return false;
        await insertAuditEvent(tx, {
          workspaceId: endpoint.workspace_id,
          eventType: 'webhook_endpoint.secret_rewrapped',
          resourceType: 'webhook_endpoint',
          resourceId: endpoint.id,
          outcome: 'succeeded',
          actor,
          metadata: {
            from_key_id: endpoint.secret_key_id,
            to_key_id: currentKeyId,
            ...(endpoint.previous_secret_key_id ? { previous_from_key_id: endpoint.previous_secret_key_id } : {}),
          },
        });
        return true;
      });
      if (replaced) report.rewrapped += 1;
    }
  }
}
