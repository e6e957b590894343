import { insertAuditEvent } from '../audit/events.ts';
import type { WorkerResources } from '../platform/resources.ts';
import { type ClaimedDelivery, cancelDelivery, claimDeliveries, type NewAttempt, recordAttempts } from './deliveries.ts';
import { DISABLE_AFTER_FAILING_MS, disableWebhookEndpoint, FAILING_DISABLED_REASON } from './endpoints.ts';
import { deliveryData, type PageLinks } from './event-pages.ts';
import { nextRetryDelay, parseRetryAfter } from './retry.ts';
import { type SecretKeyring, SecretKeyUnavailableError } from './secrets.ts';
import { postWebhook } from './send.ts';
import { signWebhook, webhookBody } from './signature.ts';
import { hostOf, type Lookup, parseWebhookUrl, RESOLVE_TIMEOUT_MS, type ResolvedAddress, resolveTarget, TargetRefusedError } from './targets.ts';

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

/**
 * Opened signing secrets for a minute, keyed by endpoint and by the sealed bytes' iv and tag (unique
 * per seal): a rotation or rewrap changes them, so a stale secret is never used, and a deleted
 * endpoint's claim carries no ciphertext at all. Saves an AES-GCM open per delivery of a busy endpoint.
 */
const SECRET_CACHE_MS = 60_000;
const SECRET_CACHE_MAX = 1_000;
// Per keyring: what one set of keys opened says nothing about another.
const openedSecretsByKeyring = new WeakMap<SecretKeyring, Map<string, { secret: string; until: number }>>();

function openCached(deps: DeliveryDeps, endpointId: string, ciphertext: Buffer, keyId: string): string {
  let openedSecrets = openedSecretsByKeyring.get(deps.keyring);
  if (!openedSecrets) openedSecretsByKeyring.set(deps.keyring, (openedSecrets = new Map()));
  const key = `${endpointId}/${keyId}/${ciphertext.toString('base64', 0, 28)}`;
  const at = Date.now();
  const cached = openedSecrets.get(key);
  if (cached && cached.until > at) return cached.secret;
  const secret = deps.keyring.open(endpointId, ciphertext, keyId);
  if (openedSecrets.size >= SECRET_CACHE_MAX) openedSecrets.clear();
  openedSecrets.set(key, { secret, until: at + SECRET_CACHE_MS });
  return secret;
}

/**
 * The secrets to sign with: the current one, then, during a rotation's 24 h overlap, the previous
 * one (docs/design.md §15). A previous secret that cannot be opened is left out (logged): the current
 * signature still verifies.
 */
function openSecrets(deps: DeliveryDeps, delivery: ClaimedDelivery): string[] | { error: string } {
  let current: string;
  try {
    current = openCached(deps, delivery.endpoint_id, delivery.secret_ciphertext!, delivery.secret_key_id!);
  } catch (error) {
    const reason = error instanceof SecretKeyUnavailableError ? `key ${error.keyId} is not configured` : 'it does not decrypt under its key';
    deps.log.error(
      { delivery_id: delivery.id, endpoint_id: delivery.endpoint_id, secret_key_id: delivery.secret_key_id },
      `webhook signing secret cannot be opened: ${reason}`,
    );
    return { error: `the endpoint's signing secret cannot be decrypted (${reason}); the operator must restore the key` };
  }
  if (!delivery.previous_secret_ciphertext || !delivery.previous_secret_key_id || !delivery.previous_secret_expires_at) return [current];
  if (delivery.previous_secret_expires_at.getTime() <= deps.now().getTime()) return [current];
  try {
    return [current, openCached(deps, delivery.endpoint_id, delivery.previous_secret_ciphertext, delivery.previous_secret_key_id)];
  } catch {
    deps.log.error(
      { delivery_id: delivery.id, endpoint_id: delivery.endpoint_id, secret_key_id: delivery.previous_secret_key_id },
      'previous webhook signing secret cannot be opened; signing with the current one only',
    );
    return [current];
  }
}

/** Checks the target again on the address actually dialled, signs, and POSTs (docs/design.md §8). */
async function exchange(deps: DeliveryDeps, delivery: ClaimedDelivery, secrets: readonly string[]): Promise<Exchange> {
  const started = performance.now();
  let url: URL;
  let address: ResolvedAddress;
  try {
    url = parseWebhookUrl(delivery.url, { allowPrivate: deps.allowPrivate });
    address = await resolveTarget(url, {
      allowPrivate: deps.allowPrivate,
      lookup: deps.lookup,
      resolveTimeoutMs: Math.min(RESOLVE_TIMEOUT_MS, deps.timeoutMs),
    });
  } catch (error) {
    if (!(error instanceof TargetRefusedError)) throw error;
    return { responseStatus: null, error: `refused: ${error.message}`, durationMs: Math.round(performance.now() - started), retryAfterMs: null };
  }
  const data = deliveryData(delivery.event_type, delivery.event_id, delivery.payload, deps.pageLinks, deps.now());
  const body = webhookBody({ id: delivery.event_id, type: delivery.event_type, createdAt: delivery.event_created_at, data });
  const headers = signWebhook(secrets, delivery.event_id, Math.floor(deps.now().getTime() / 1000), body);
  // Resolution and the exchange share one budget, so an attempt never outlives its lease.
  const remainingMs = Math.max(1, deps.timeoutMs - Math.round(performance.now() - started));
  const result = await postWebhook({ url, address, headers, body, timeoutMs: remainingMs, ca: deps.ca });
  if (result.kind === 'error') {
    // Timeouts are reported against the whole budget the attempt had.
    const error = result.error.startsWith('timed out') ? `timed out after ${deps.timeoutMs} ms` : result.error;
    return { responseStatus: null, error, durationMs: result.durationMs, retryAfterMs: null };
  }
  const status = result.status;
  const error = status >= 200 && status < 300 ? null : status >= 300 && status < 400 ? `HTTP ${status}: redirects are not followed` : `HTTP ${status}`;
  const retryAfterMs = status === 429 || status === 503 ? parseRetryAfter(result.retryAfter, deps.now()) : null;
  return { responseStatus: status, error, durationMs: result.durationMs, retryAfterMs };
}

type Attempted = {
  claimed: ClaimedDelivery;
  record: NewAttempt;
  outcome: Exchange;
  delayMs: number | null;
  disableFor: { reason: string; metadata: Record<string, unknown> } | null;
};

/** Sends one claimed delivery and decides what follows (nothing is written yet). */
async function send(deps: DeliveryDeps, claimed: ClaimedDelivery, startedAt: Date): Promise<Attempted> {
  const secrets = openSecrets(deps, claimed);
  const outcome: Exchange = Array.isArray(secrets)
    ? await exchange(deps, claimed, secrets)
    : { responseStatus: null, error: (secrets as { error: string }).error, durationMs: null, retryAfterMs: null };
  const succeeded = outcome.error === null;
  const gone = outcome.responseStatus === 410;
  const finishedAt = deps.now();
  // A manual attempt (POST …/retry) is outside the schedule: if it fails, the delivery returns to the
  // scheduled retry it pre-empted, or fails again when the schedule was over.
  const delayMs =
    succeeded || gone
      ? null
      : claimed.manual
        ? claimed.resume_attempt_at === null
          ? null
          : Math.max(0, claimed.resume_attempt_at.getTime() - finishedAt.getTime())
        : nextRetryDelay(deps.retryDelaysMs, claimed.scheduled_attempts, outcome.retryAfterMs, deps.random);
  const record: NewAttempt = {
    deliveryId: claimed.id,
    endpointId: claimed.endpoint_id,
    attempt: claimed.attempt,
    manual: claimed.manual,
    startedAt,
    durationMs: outcome.durationMs,
    outcome: succeeded ? 'succeeded' : 'failed',
    responseStatus: outcome.responseStatus,
    error: outcome.error,
    nextAttemptAt: delayMs === null ? null : new Date(finishedAt.getTime() + delayMs),
    finishedAt,
  };
  // docs/design.md §8: 410 Gone disables at once; docs/design.md §15: so does a failure ending five days in which every
  // attempt failed (the run's start as the claim read it; one starting meanwhile counts from the next).
  const failingFor = claimed.failing_since ? finishedAt.getTime() - claimed.failing_since.getTime() : 0;
  const disableFor = gone
    ? { reason: 'the receiver answered 410 Gone', metadata: { reason: 'gone', response_status: 410 } }
    : !succeeded && failingFor >= DISABLE_AFTER_FAILING_MS
      ? { reason: FAILING_DISABLED_REASON, metadata: { reason: 'failing', failing_since: claimed.failing_since!.toISOString() } }
      : null;
  return { claimed, record, outcome, delayMs, disableFor };
}

/** Records an attempt that disables its endpoint, in one transaction with the disabling and its audit event. */
async function recordDisabling(deps: DeliveryDeps, attempted: Attempted): Promise<boolean> {
  const { claimed, record, disableFor } = attempted;
  return deps.sql.begin(async (tx) => {
    await recordAttempts(tx, [record]);
    const workspaceId = await disableWebhookEndpoint(tx, claimed.endpoint_id, disableFor!.reason, record.finishedAt);
    if (!workspaceId) return false;
    deps.log.info({ endpoint_id: claimed.endpoint_id, workspace_id: workspaceId, delivery_id: claimed.id }, `webhook endpoint disabled: ${disableFor!.reason}`);
    await insertAuditEvent(tx, {
      workspaceId,
      eventType: 'webhook_endpoint.disabled',
      resourceType: 'webhook_endpoint',
      resourceId: claimed.endpoint_id,
      outcome: 'recorded',
      actor: { type: 'system', id: 'webhooks' },
      occurredAt: record.finishedAt,
      metadata: { ...disableFor!.metadata, delivery_id: claimed.id },
    });
    return true;
  });
}

function resultOf(deps: DeliveryDeps, attempted: Attempted, endpointDisabled: boolean): AttemptResult {
  const { claimed, outcome, delayMs } = attempted;
  // Ids, host, status and timing only: never the secret, the signature, or the URL's path and query.
  if (deps.log.isLevelEnabled('debug')) {
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
  }
  if (attempted.record.outcome === 'succeeded') return { kind: 'succeeded', attempt: claimed.attempt };
  // Disabling cancelled the retry this attempt had scheduled.
  if (delayMs !== null && !endpointDisabled) return { kind: 'retry', attempt: claimed.attempt, delayMs };
  return { kind: 'failed', attempt: claimed.attempt, endpointDisabled };
}

/**
 * One attempt of each of these deliveries: claim them in Postgres in one statement (those not due,
 * or held by someone else, are `skipped`), send them concurrently, and record every attempt in one
 * statement, saying when each next one is due. 2xx succeeds; 410 fails the delivery and disables
 * the endpoint; anything else (3xx, 4xx, 5xx, timeouts, refused targets) is retried on the schedule,
 * no sooner than a 429/503's Retry-After; after the last attempt the delivery fails. A failure that
 * ends five days of nothing but failures disables the endpoint (docs/design.md §15). Attempts that disable
 * an endpoint are recorded each in its own transaction with the disabling. The caller enqueues the
 * retries. Results are in the order of `deliveryIds`.
 */
export async function attemptDeliveries(deps: DeliveryDeps, deliveryIds: readonly string[]): Promise<AttemptResult[]> {
  const startedAt = deps.now();
  const claimed = await claimDeliveries(deps.sql, deliveryIds, {
    now: startedAt,
    dueBy: new Date(startedAt.getTime() + DUE_TOLERANCE_MS),
    leaseUntil: new Date(startedAt.getTime() + deps.timeoutMs + LEASE_MARGIN_MS),
  });
  const results = new Map<string, AttemptResult>();
  const sendable: ClaimedDelivery[] = [];
  for (const delivery of claimed) {
    if (delivery.endpoint_live && delivery.secret_ciphertext && delivery.secret_key_id) sendable.push(delivery);
    else {
      await cancelDelivery(deps.sql, delivery.id, 'the endpoint was deleted or disabled', deps.now());
      results.set(delivery.id, { kind: 'cancelled' });
    }
  }
  const settled = await Promise.allSettled(sendable.map((delivery) => send(deps, delivery, startedAt)));
  const attempted = settled.flatMap((one) => (one.status === 'fulfilled' ? [one.value] : []));
  const plain = attempted.filter((one) => !one.disableFor);
  if (plain.length > 0)
    await recordAttempts(
      deps.sql,
      plain.map((one) => one.record),
    );
  for (const one of plain) results.set(one.claimed.id, resultOf(deps, one, false));
  for (const one of attempted.filter((candidate) => candidate.disableFor)) results.set(one.claimed.id, resultOf(deps, one, await recordDisabling(deps, one)));
  // An unexpected failure is the job's: its delivery stays leased, and the sweeper returns it to pending.
  const failure = settled.find((one) => one.status === 'rejected');
  if (failure) throw failure.reason;
  return deliveryIds.map((id) => results.get(id) ?? { kind: 'skipped' });
}

/** One attempt of one delivery (see attemptDeliveries). */
export async function attemptDelivery(deps: DeliveryDeps, deliveryId: string): Promise<AttemptResult> {
  const [result] = await attemptDeliveries(deps, [deliveryId]);
  return result!;
}
