import { insertAuditEvent, type AuditActor } from '../audit/events.ts';
import type { Sql } from '../db.ts';
import { errors } from '../errors.ts';
import { EVENT_TYPES, type EventType } from '../events/outbox.ts';
import { newId } from '../ids.ts';
import {
  deleteWebhookEndpoint,
  findSecretsNotUnderKey,
  insertWebhookEndpoint,
  lockAndCountLiveEndpoints,
  MAX_ENDPOINTS_PER_WORKSPACE,
  replaceSealedSecret,
  type WebhookEndpoint,
} from './endpoints.ts';
import { generateSigningSecret, type SecretKeyring } from './secrets.ts';
import { parseWebhookUrl, resolveTarget, TargetRefusedError, type TargetPolicy } from './targets.ts';

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

/** Each type once, in the order of the DESIGN 8 list, so equal subscriptions look equal. */
function normaliseEventTypes(eventTypes: readonly EventType[]): EventType[] {
  return EVENT_TYPES.filter((type) => eventTypes.includes(type));
}

/**
 * Creates an endpoint with a new signing secret, sealed under the current WEBHOOK_SECRET_KEY, and
 * records `webhook_endpoint.created` in the same transaction (DESIGN 7). A workspace that already
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
  // spec 6: creation fails with 503 when encrypted secret storage is not configured.
  if (!keyring.canSeal) {
    throw errors.unavailable('secret_storage_unavailable', 'Webhook signing secrets cannot be stored: encrypted secret storage (WEBHOOK_SECRET_KEY) is not configured.');
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
      workspaceId: meta.workspaceId, eventType: 'webhook_endpoint.created', resourceType: 'webhook_endpoint', resourceId: id,
      outcome: 'succeeded', actor: meta.actor, requestId: meta.requestId, occurredAt: meta.now,
      metadata: { host: url.host, event_types: eventTypes },
    });
    return { ...endpoint, secret };
  });
  if (created) return created;
  // DESIGN 7: a 409 is recorded as a rejected request, as the idempotency conflicts are.
  await insertAuditEvent(sql, {
    workspaceId: meta.workspaceId, eventType: 'request.denied', resourceType: 'operation', resourceId: 'webhooks.create',
    outcome: 'rejected', actor: meta.actor, requestId: meta.requestId, occurredAt: meta.now,
    metadata: { status: 409, reason: 'webhook_limit_reached', limit: MAX_ENDPOINTS_PER_WORKSPACE },
  });
  throw errors.conflict(
    'webhook_limit_reached',
    `This workspace already has ${MAX_ENDPOINTS_PER_WORKSPACE} webhook endpoints, the most it may have; delete one to create another.`,
  );
}

/** Deletes a live endpoint of the workspace (404 otherwise) and records `webhook_endpoint.deleted`. */
export async function removeWebhookEndpoint(sql: Sql, id: string, meta: RequestMeta): Promise<WebhookEndpoint> {
  return sql.begin(async (tx) => {
    const endpoint = await deleteWebhookEndpoint(tx, meta.workspaceId, id, meta.now);
    if (!endpoint) throw errors.notFound('No webhook endpoint with this id in your workspace.');
    await insertAuditEvent(tx, {
      workspaceId: meta.workspaceId, eventType: 'webhook_endpoint.deleted', resourceType: 'webhook_endpoint', resourceId: id,
      outcome: 'succeeded', actor: meta.actor, requestId: meta.requestId, occurredAt: meta.now,
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
      try {
        secret = keyring.open(endpoint.id, endpoint.secret_ciphertext, endpoint.secret_key_id);
      } catch {
        report.unreadable.push({ endpoint_id: endpoint.id, secret_key_id: endpoint.secret_key_id });
        continue;
      }
      const replaced = await sql.begin(async (tx) => {
        if (!(await replaceSealedSecret(tx, endpoint.id, endpoint.secret_key_id, keyring.seal(endpoint.id, secret)))) return false;
        await insertAuditEvent(tx, {
          workspaceId: endpoint.workspace_id, eventType: 'webhook_endpoint.secret_rewrapped', resourceType: 'webhook_endpoint',
          resourceId: endpoint.id, outcome: 'succeeded', actor,
          metadata: { from_key_id: endpoint.secret_key_id, to_key_id: currentKeyId },
        });
        return true;
      });
      if (replaced) report.rewrapped += 1;
    }
  }
}
