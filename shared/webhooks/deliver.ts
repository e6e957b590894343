import { insertAuditEvent } from '../audit/events.ts';
import type { WorkerResources } from '../resources.ts';
import { cancelDelivery, claimDelivery, recordAttempt, type ClaimedDelivery } from './deliveries.ts';
import { disableWebhookEndpoint } from './endpoints.ts';
import { deliveryData, type PageLinks } from './event-pages.ts';
import { nextRetryDelay, parseRetryAfter } from './retry.ts';
import { SecretKeyUnavailableError, type SecretKeyring } from './secrets.ts';
import { postWebhook } from './send.ts';
import { signWebhook, webhookBody } from './signature.ts';
import { hostOf, parseWebhookUrl, resolveTarget, RESOLVE_TIMEOUT_MS, TargetRefusedError, type Lookup } from './targets.ts';

/** Past the request timeout, how long a lease lasts before the attempt's worker is presumed dead. */
export const LEASE_MARGIN_MS = 5_000;
/** A job may fire this much before its delivery's due time (clocks of hosts differ). */
const DUE_TOLERANCE_MS = 1_000;

export type DeliveryDeps = Pick<WorkerResources, 'sql' | 'log' | 'now'> & {
  keyring: SecretKeyring;
  retryDelaysMs: readonly number[];
  timeoutMs: number;
  /** WEBHOOK_ALLOW_PRIVATE_TARGETS: development and tests only. */
  allowPrivate: boolean;
  /** Signs the next_url of prices.updated deliveries (SIGNING_KEY, PUBLIC_BASE_URL). */
  pageLinks: PageLinks;
  lookup?: Lookup;
  /** An extra trusted certificate authority (tests with a local TLS receiver). */
  ca?: string;
  random?: () => number;
};

export type AttemptResult =
  | { kind: 'skipped' }
  | { kind: 'cancelled' }
  | { kind: 'succeeded'; attempt: number }
  | { kind: 'retry'; attempt: number; delayMs: number }
  | { kind: 'failed'; attempt: number; endpointDisabled: boolean };

type Exchange = { responseStatus: number | null; error: string | null; durationMs: number | null; retryAfterMs: number | null };

function openSecret(deps: DeliveryDeps, delivery: ClaimedDelivery): string | { error: string } {
  try {
    return deps.keyring.open(delivery.endpoint_id, delivery.secret_ciphertext!, delivery.secret_key_id!);
  } catch (error) {
    const reason = error instanceof SecretKeyUnavailableError ? `key ${error.keyId} is not configured` : 'it does not decrypt under its key';
    deps.log.error({ delivery_id: delivery.id, endpoint_id: delivery.endpoint_id, secret_key_id: delivery.secret_key_id }, `webhook signing secret cannot be opened: ${reason}`);
    return { error: `the endpoint's signing secret cannot be decrypted (${reason}); the operator must restore the key` };
  }
}

/** Checks the target again on the address actually dialled, signs, and POSTs (DESIGN 8). */
async function exchange(deps: DeliveryDeps, delivery: ClaimedDelivery, secret: string): Promise<Exchange> {
  const started = performance.now();
  let url: URL;
  let address;
  try {
    url = parseWebhookUrl(delivery.url, { allowPrivate: deps.allowPrivate });
    address = await resolveTarget(url, { allowPrivate: deps.allowPrivate, lookup: deps.lookup, resolveTimeoutMs: Math.min(RESOLVE_TIMEOUT_MS, deps.timeoutMs) });
  } catch (error) {
    if (!(error instanceof TargetRefusedError)) throw error;
    return { responseStatus: null, error: `refused: ${error.message}`, durationMs: Math.round(performance.now() - started), retryAfterMs: null };
  }
  const data = deliveryData(delivery.event_type, delivery.event_id, delivery.payload, deps.pageLinks, deps.now());
  const body = webhookBody({ id: delivery.event_id, type: delivery.event_type, createdAt: delivery.event_created_at, data });
  const headers = signWebhook(secret, delivery.event_id, Math.floor(deps.now().getTime() / 1000), body);
  // Resolution and the exchange share one budget, so an attempt never outlives its lease.
  const remainingMs = Math.max(1, deps.timeoutMs - Math.round(performance.now() - started));
  const result = await postWebhook({ url, address, headers, body, timeoutMs: remainingMs, ca: deps.ca });
  if (result.kind === 'error') {
    // Timeouts are reported against the whole budget the attempt had.
    const error = result.error.startsWith('timed out') ? `timed out after ${deps.timeoutMs} ms` : result.error;
    return { responseStatus: null, error, durationMs: result.durationMs, retryAfterMs: null };
  }
  const status = result.status;
  const error =
    status >= 200 && status < 300
      ? null
      : status >= 300 && status < 400
        ? `HTTP ${status}: redirects are not followed`
        : `HTTP ${status}`;
  const retryAfterMs = status === 429 || status === 503 ? parseRetryAfter(result.retryAfter, deps.now()) : null;
  return { responseStatus: status, error, durationMs: result.durationMs, retryAfterMs };
}

/**
 * One attempt of one delivery: claim it in Postgres (or do nothing if it is not due or someone else
 * has it), send it, record the attempt, and say when the next one is due. 2xx succeeds; 410 fails
 * the delivery and disables the endpoint; anything else (3xx, 4xx, 5xx, timeouts, refused targets)
 * is retried on the schedule, no sooner than a 429/503's Retry-After; after the last attempt the
 * delivery fails. The caller enqueues the retry.
 */
export async function attemptDelivery(deps: DeliveryDeps, deliveryId: string): Promise<AttemptResult> {
  const startedAt = deps.now();
  const claimed = await claimDelivery(deps.sql, deliveryId, {
    now: startedAt,
    dueBy: new Date(startedAt.getTime() + DUE_TOLERANCE_MS),
    leaseUntil: new Date(startedAt.getTime() + deps.timeoutMs + LEASE_MARGIN_MS),
  });
  if (!claimed) return { kind: 'skipped' };
  if (!claimed.endpoint_live || !claimed.secret_ciphertext || !claimed.secret_key_id) {
    await cancelDelivery(deps.sql, claimed.id, 'the endpoint was deleted or disabled', deps.now());
    return { kind: 'cancelled' };
  }

  const secret = openSecret(deps, claimed);
  const outcome: Exchange = typeof secret === 'string' ? await exchange(deps, claimed, secret) : { responseStatus: null, error: secret.error, durationMs: null, retryAfterMs: null };
  const succeeded = outcome.error === null;
  const gone = outcome.responseStatus === 410;
  const delayMs = succeeded || gone ? null : nextRetryDelay(deps.retryDelaysMs, claimed.attempt, outcome.retryAfterMs, deps.random);
  const finishedAt = deps.now();
  const nextAttemptAt = delayMs === null ? null : new Date(finishedAt.getTime() + delayMs);

  let endpointDisabled = false;
  await deps.sql.begin(async (tx) => {
    await recordAttempt(tx, {
      deliveryId: claimed.id,
      attempt: claimed.attempt,
      startedAt,
      durationMs: outcome.durationMs,
      outcome: succeeded ? 'succeeded' : 'failed',
      responseStatus: outcome.responseStatus,
      error: outcome.error,
      nextAttemptAt,
      finishedAt,
    });
    if (!gone) return;
    const workspaceId = await disableWebhookEndpoint(tx, claimed.endpoint_id, 'the receiver answered 410 Gone', finishedAt);
    if (!workspaceId) return;
    endpointDisabled = true;
    deps.log.info({ endpoint_id: claimed.endpoint_id, workspace_id: workspaceId, delivery_id: claimed.id }, 'webhook endpoint disabled: the receiver answered 410 Gone');
    await insertAuditEvent(tx, {
      workspaceId,
      eventType: 'webhook_endpoint.disabled',
      resourceType: 'webhook_endpoint',
      resourceId: claimed.endpoint_id,
      outcome: 'recorded',
      actor: { type: 'system', id: 'webhooks' },
      occurredAt: finishedAt,
      metadata: { reason: 'gone', response_status: 410, delivery_id: claimed.id },
    });
  });

  // Ids, host, status and timing only: never the secret, the signature, or the URL's path and query.
  deps.log.debug(
    {
      delivery_id: claimed.id,
      endpoint_id: claimed.endpoint_id,
      host: URL.canParse(claimed.url) ? hostOf(new URL(claimed.url)) : null,
      attempt: claimed.attempt,
      response_status: outcome.responseStatus,
      duration_ms: outcome.durationMs,
      error: outcome.error,
      next_in_ms: delayMs,
    },
    'webhook delivery attempt',
  );
  if (succeeded) return { kind: 'succeeded', attempt: claimed.attempt };
  if (delayMs !== null) return { kind: 'retry', attempt: claimed.attempt, delayMs };
  return { kind: 'failed', attempt: claimed.attempt, endpointDisabled };
}
