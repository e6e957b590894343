import type { EventType } from '../events/outbox.ts';
import type { Queryable } from '../platform/db.ts';

/** An endpoint as clients see it: never its secret, sealed or not. */
export type WebhookEndpoint = {
  id: string;
  url: string;
  description: string | null;
  event_types: EventType[];
  /** docs/design.md §15: false once disabled (by PATCH, a 410 Gone, or five days of failed attempts) until re-enabled. */
  enabled: boolean;
  status: 'enabled' | 'disabled';
  disabled_reason: string | null;
  disabled_at: string | null;
  /** After a rotation: until when deliveries also carry a signature made with the previous signing key (null when they do not). */
  rotation_overlap_ends_at: string | null;
  created_at: string;
  updated_at: string | null;
};

type EndpointRow = {
  id: string;
  url: string;
  description: string | null;
  event_types: EventType[];
  created_at: Date;
  disabled_at: Date | null;
  disabled_reason: string | null;
  rotation_overlap_ends_at: Date | null;
  updated_at: Date | null;
  created_at_text: string;
};

export type EndpointPosition = { created_at: string; id: string };

const publicColumns = (db: Queryable) => db`
  id, url, description, event_types, created_at, disabled_at, disabled_reason, updated_at,
  case when previous_secret_expires_at > now() then previous_secret_expires_at end as rotation_overlap_ends_at,
  to_char(created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as created_at_text`;

function toEndpoint(row: EndpointRow): WebhookEndpoint {
  return {
    id: row.id,
    url: row.url,
    description: row.description,
    event_types: row.event_types,
    enabled: row.disabled_at === null,
    status: row.disabled_at ? 'disabled' : 'enabled',
    disabled_reason: row.disabled_reason,
    disabled_at: row.disabled_at?.toISOString() ?? null,
    rotation_overlap_ends_at: row.rotation_overlap_ends_at?.toISOString() ?? null,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at?.toISOString() ?? null,
  };
}

/** docs/design.md §8: live (not deleted) endpoints a workspace may have, so fan-out stays proportionate. */
export const MAX_ENDPOINTS_PER_WORKSPACE = 20;

/**
 * Locks the workspace's row for the rest of the transaction (creates of one workspace queue here;
 * NO KEY UPDATE still lets other transactions insert rows that reference the workspace) and counts
 * its live endpoints, disabled ones included: they stay listed until deleted.
 */
export async function lockAndCountLiveEndpoints(db: Queryable, workspaceId: string): Promise<number> {
  await db`select 1 from workspaces where id = ${workspaceId} for no key update`;
  const [row] = await db<{ count: number }[]>`
    select count(*)::int as count from webhook_endpoints where workspace_id = ${workspaceId} and deleted_at is null`;
  return row!.count;
}

export async function insertWebhookEndpoint(
  db: Queryable,
  endpoint: {
    id: string;
    workspaceId: string;
    url: string;
    description: string | null;
    eventTypes: EventType[];
    secretCiphertext: Buffer;
    secretKeyId: string;
    createdAt: Date;
  },
): Promise<WebhookEndpoint> {
  const [row] = await db<EndpointRow[]>`
    insert into webhook_endpoints (id, workspace_id, url, description, event_types, secret_ciphertext, secret_key_id, created_at)
    values (${endpoint.id}, ${endpoint.workspaceId}, ${endpoint.url}, ${endpoint.description}, ${endpoint.eventTypes},
            ${endpoint.secretCiphertext}, ${endpoint.secretKeyId}, ${endpoint.createdAt})
    returning ${publicColumns(db)}`;
  return toEndpoint(row!);
}

/** A live (not deleted) endpoint of the workspace; another workspace's id finds nothing. */
export async function findWebhookEndpoint(db: Queryable, workspaceId: string, id: string): Promise<WebhookEndpoint | null> {
  const [row] = await db<EndpointRow[]>`
    select ${publicColumns(db)} from webhook_endpoints
    where id = ${id} and workspace_id = ${workspaceId} and deleted_at is null`;
  return row ? toEndpoint(row) : null;
}

/** Newest first, keyset on (created_at, id); one row more than asked means another page. */
export async function listWebhookEndpoints(
  db: Queryable,
  workspaceId: string,
  after: EndpointPosition | null,
  limit: number,
): Promise<{ endpoints: WebhookEndpoint[]; next: EndpointPosition | null }> {
  const rows = await db<EndpointRow[]>`
    select ${publicColumns(db)} from webhook_endpoints
    where workspace_id = ${workspaceId} and deleted_at is null
      ${after ? db`and (created_at, id) < (${after.created_at}::timestamptz, ${after.id}::uuid)` : db``}
    order by created_at desc, id desc
    limit ${limit + 1}`;
  const page = rows.slice(0, limit);
  const last = page[page.length - 1];
  return { endpoints: page.map(toEndpoint), next: rows.length > limit && last ? { created_at: last.created_at_text, id: last.id } : null };
}

/**
 * Deletes an endpoint: its secret is destroyed and deliveries not yet made are cancelled. The row
 * stays (deleted) so its delivery history keeps its owner until the sweeper's retention drops it.
 */
export async function deleteWebhookEndpoint(db: Queryable, workspaceId: string, id: string, now: Date): Promise<WebhookEndpoint | null> {
  const [row] = await db<EndpointRow[]>`
    update webhook_endpoints
    set deleted_at = ${now}, secret_ciphertext = null, secret_key_id = null,
        previous_secret_ciphertext = null, previous_secret_key_id = null, previous_secret_expires_at = null
    where id = ${id} and workspace_id = ${workspaceId} and deleted_at is null
    returning ${publicColumns(db)}`;
  if (!row) return null;
  await cancelUnsentDeliveries(db, id, now, 'the endpoint was deleted');
  return toEndpoint(row);
}

/** After a 410 Gone: no more deliveries to it. Returns its workspace when this call disabled it. */
export async function disableWebhookEndpoint(db: Queryable, id: string, reason: string, now: Date): Promise<string | null> {
  const [row] = await db<{ workspace_id: string }[]>`
    update webhook_endpoints set disabled_at = ${now}, disabled_reason = ${reason}
    where id = ${id} and disabled_at is null and deleted_at is null
    returning workspace_id`;
  if (!row) return null;
  await cancelUnsentDeliveries(db, id, now, `the endpoint was disabled: ${reason}`);
  return row.workspace_id;
}

/** Pending deliveries of an endpoint become cancelled; one being attempted right now finishes as it may. */
async function cancelUnsentDeliveries(db: Queryable, endpointId: string, now: Date, reason: string): Promise<void> {
  await db`
    update webhook_deliveries set state = 'cancelled', next_attempt_at = null, settled_at = ${now}, last_error = ${reason}
    where endpoint_id = ${endpointId} and state = 'pending'`;
}

export type EndpointChanges = { url?: string; eventTypes?: EventType[]; description?: string | null; enabled?: boolean };

/** The reason PATCH {enabled: false} records. */
export const DISABLED_BY_REQUEST = 'disabled by request (PATCH enabled: false)';

/**
 * PATCH (docs/design.md §15): applies the given fields to a live endpoint of the workspace, or null when it
 * has none with this id. Disabling cancels its pending deliveries (as a 410 Gone does); enabling
 * clears the reason and the run of failures, so the five days count again from the next failure.
 * Returns the endpoint before and after, so the caller can audit what changed.
 */
export async function updateWebhookEndpoint(
  db: Queryable,
  workspaceId: string,
  id: string,
  changes: EndpointChanges,
  now: Date,
): Promise<{ before: WebhookEndpoint; after: WebhookEndpoint } | null> {
  const [current] = await db<EndpointRow[]>`
    select ${publicColumns(db)} from webhook_endpoints
    where id = ${id} and workspace_id = ${workspaceId} and deleted_at is null
    for update`;
  if (!current) return null;
  const before = toEndpoint(current);
  const disabling = changes.enabled === false && before.enabled;
  const enabling = changes.enabled === true && !before.enabled;
  const [row] = await db<EndpointRow[]>`
    update webhook_endpoints set
      updated_at = ${now}
      ${changes.url !== undefined ? db`, url = ${changes.url}` : db``}
      ${changes.eventTypes !== undefined ? db`, event_types = ${changes.eventTypes}::text[]` : db``}
      ${changes.description !== undefined ? db`, description = ${changes.description}` : db``}
      ${disabling ? db`, disabled_at = ${now}, disabled_reason = ${DISABLED_BY_REQUEST}` : db``}
      ${enabling ? db`, disabled_at = null, disabled_reason = null, failing_since = null` : db``}
    where id = ${id}
    returning ${publicColumns(db)}`;
  if (disabling) await cancelUnsentDeliveries(db, id, now, `the endpoint was disabled: ${DISABLED_BY_REQUEST}`);
  return { before, after: toEndpoint(row!) };
}

/**
 * Rotation (docs/design.md §15): the current secret becomes the previous one, valid for signatures until
 * `previousExpiresAt` (replacing any earlier previous secret), and `sealed` becomes current. The
 * previous ciphertext moves as it is: it stays sealed under the key that sealed it.
 */
export async function rotateSealedSecret(
  db: Queryable,
  workspaceId: string,
  id: string,
  sealed: { ciphertext: Buffer; keyId: string },
  previousExpiresAt: Date,
  now: Date,
): Promise<WebhookEndpoint | null> {
  const [row] = await db<EndpointRow[]>`
    update webhook_endpoints set
      previous_secret_ciphertext = secret_ciphertext, previous_secret_key_id = secret_key_id,
      previous_secret_expires_at = ${previousExpiresAt},
      secret_ciphertext = ${sealed.ciphertext}, secret_key_id = ${sealed.keyId}, updated_at = ${now}
    where id = ${id} and workspace_id = ${workspaceId} and deleted_at is null
    returning ${publicColumns(db)}`;
  return row ? toEndpoint(row) : null;
}

/** Previous secrets whose overlap has passed are destroyed (the sweeper): nothing signs with them any more. */
export async function dropExpiredPreviousSecrets(db: Queryable, now: Date): Promise<number> {
  const rows = await db`
    update webhook_endpoints set previous_secret_ciphertext = null, previous_secret_key_id = null, previous_secret_expires_at = null
    where previous_secret_expires_at <= ${now}
    returning 1`;
  return rows.length;
}

/** The run of failed attempts after which an endpoint is disabled (docs/design.md §15). */
export const DISABLE_AFTER_FAILING_MS = 5 * 86_400_000;
export const FAILING_DISABLED_REASON = 'every delivery attempt failed for 5 days';

export type SealedSecret = {
  id: string;
  workspace_id: string;
  secret_ciphertext: Buffer;
  secret_key_id: string;
  previous_secret_ciphertext: Buffer | null;
  previous_secret_key_id: string | null;
};

/**
 * Live endpoints with a secret (current or previous) sealed under another key than `keyId` (for
 * rewrapping), a batch at a time.
 */
export async function findSecretsNotUnderKey(db: Queryable, keyId: string, afterId: string | null, limit: number): Promise<SealedSecret[]> {
  return db<SealedSecret[]>`
    select id, workspace_id, secret_ciphertext, secret_key_id, previous_secret_ciphertext, previous_secret_key_id from webhook_endpoints
    where deleted_at is null and (secret_key_id <> ${keyId} or previous_secret_key_id <> ${keyId})
      ${afterId ? db`and id > ${afterId}` : db``}
    order by id
    limit ${limit}`;
}

/**
 * Replaces the sealed secrets, only if they are still the ones that were read (a concurrent rewrap
 * or rotation wins). `previous` null leaves no previous secret (there was none).
 */
export async function replaceSealedSecret(
  db: Queryable,
  read: Pick<SealedSecret, 'id' | 'secret_key_id' | 'previous_secret_key_id' | 'secret_ciphertext'>,
  sealed: { ciphertext: Buffer; keyId: string },
  previous: { ciphertext: Buffer; keyId: string } | null,
): Promise<boolean> {
  const rows = await db`
    update webhook_endpoints
    set secret_ciphertext = ${sealed.ciphertext}, secret_key_id = ${sealed.keyId},
        previous_secret_ciphertext = ${previous?.ciphertext ?? null}, previous_secret_key_id = ${previous?.keyId ?? null}
    where id = ${read.id} and secret_key_id = ${read.secret_key_id} and secret_ciphertext = ${read.secret_ciphertext}
      and previous_secret_key_id is not distinct from ${read.previous_secret_key_id} and deleted_at is null
    returning 1`;
  return rows.length === 1;
}
