import { z } from 'zod';
import type { Queryable } from '../platform/db.ts';
import { newId } from '../util/ids.ts';
import { redactSecrets } from '../util/redact.ts';

// docs/interface.md §2.2 / §8
export const AUDIT_SOURCES = ['platform', 'gameplatform'] as const;
export const AUDIT_OUTCOMES = ['accepted', 'rejected', 'succeeded', 'failed', 'recorded'] as const;
export const AUDIT_NAME_PATTERN = /^[a-z][a-z0-9_.-]{1,79}$/;
export const AUDIT_METADATA_MAX_BYTES = 32 * 1024;

export type AuditSource = (typeof AUDIT_SOURCES)[number];
export type AuditOutcome = (typeof AUDIT_OUTCOMES)[number];
export const AUDIT_ACTOR_TYPES = ['account', 'api_key', 'system', 'admin'] as const;
export type AuditActor = { type: (typeof AUDIT_ACTOR_TYPES)[number]; id: string | null };

export type NewAuditEvent = {
  workspaceId: string;
  source?: AuditSource;
  eventType: string;
  resourceType: string;
  resourceId?: string | null;
  outcome: AuditOutcome;
  actor: AuditActor;
  requestId?: string | null;
  metadata?: Record<string, unknown>;
  occurredAt?: Date;
};

/** An event as the API lists it (and an export writes it, one per line). */
export const auditEventSchema = z.object({
  id: z.uuid(),
  occurred_at: z.string(),
  source: z.enum(AUDIT_SOURCES),
  event_type: z.string().describe('Dotted name of what happened, e.g. `api_key.created`'),
  resource_type: z.string(),
  resource_id: z.string().nullable(),
  outcome: z.enum(AUDIT_OUTCOMES),
  actor: z.object({ type: z.enum(AUDIT_ACTOR_TYPES), id: z.string().nullable().describe('Null for the system') }),
  request_id: z.string().nullable().describe('The X-Request-Id of the request that caused it'),
  metadata: z.record(z.string(), z.unknown()).describe('Event details; secrets are redacted'),
});
export type AuditEvent = z.infer<typeof auditEventSchema>;

export class AuditMetadataTooLargeError extends Error {
  constructor(readonly bytes: number) {
    super(`audit metadata is ${bytes} bytes; the limit is ${AUDIT_METADATA_MAX_BYTES}`);
  }
}

/**
 * Records one event. Call it with the transaction that makes the change (docs/design.md §7). Metadata over
 * 32 KiB is refused, never cut, so a caller learns at once that it is recording too much.
 */
export async function insertAuditEvent(db: Queryable, event: NewAuditEvent): Promise<string> {
  const metadata = event.metadata ?? {};
  const bytes = Buffer.byteLength(JSON.stringify(metadata), 'utf8');
  if (bytes > AUDIT_METADATA_MAX_BYTES) throw new AuditMetadataTooLargeError(bytes);
  if (!AUDIT_NAME_PATTERN.test(event.eventType) || !AUDIT_NAME_PATTERN.test(event.resourceType)) {
    throw new Error(`audit event_type/resource_type must match ${AUDIT_NAME_PATTERN}`);
  }
  const id = newId();
  await db`
    insert into audit_events (id, workspace_id, occurred_at, source, event_type, resource_type, resource_id,
                              outcome, actor_type, actor_id, request_id, metadata)
    values (${id}, ${event.workspaceId}, ${event.occurredAt ?? new Date()}, ${event.source ?? 'platform'},
            ${event.eventType}, ${event.resourceType}, ${event.resourceId ?? null}, ${event.outcome},
            ${event.actor.type}, ${event.actor.id}, ${event.requestId ?? null}, ${db.json(metadata as never)})`;
  return id;
}

export type AuditEventFilters = {
  source?: AuditSource;
  event_type?: string;
  resource_type?: string;
  outcome?: AuditOutcome;
  from?: Date;
  to?: Date;
};

export type AuditEventPosition = { occurred_at: string; id: string };

/** An audit_events row as stored (what the listing and the exports read). */
export type StoredAuditEvent = {
  id: string;
  occurred_at: Date;
  source: AuditSource;
  event_type: string;
  resource_type: string;
  resource_id: string | null;
  outcome: AuditOutcome;
  actor_type: AuditActor['type'];
  actor_id: string | null;
  request_id: string | null;
  metadata: Record<string, unknown>;
};

type AuditEventRow = StoredAuditEvent & { occurred_at_text: string };

/**
 * One page, newest first, keyset on (occurred_at, id). `from` is inclusive and `to` exclusive.
 * Returns one row more than asked when another page exists. Metadata comes back redacted.
 */
export async function listAuditEvents(
  db: Queryable,
  workspaceId: string,
  filters: AuditEventFilters,
  after: AuditEventPosition | null,
  limit: number,
): Promise<{ events: AuditEvent[]; next: AuditEventPosition | null }> {
  const rows = await db<AuditEventRow[]>`
    select id, occurred_at, source, event_type, resource_type, resource_id, outcome, actor_type, actor_id,
           request_id, metadata,
           to_char(occurred_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as occurred_at_text
    from audit_events
    where workspace_id = ${workspaceId}
      ${filters.source ? db`and source = ${filters.source}` : db``}
      ${filters.event_type ? db`and event_type = ${filters.event_type}` : db``}
      ${filters.resource_type ? db`and resource_type = ${filters.resource_type}` : db``}
      ${filters.outcome ? db`and outcome = ${filters.outcome}` : db``}
      ${filters.from ? db`and occurred_at >= ${filters.from}` : db``}
      ${filters.to ? db`and occurred_at < ${filters.to}` : db``}
      ${after ? db`and (occurred_at, id) < (${after.occurred_at}::timestamptz, ${after.id}::uuid)` : db``}
    order by occurred_at desc, id desc
    limit ${limit + 1}`;
  const page = rows.slice(0, limit);
  const last = page[page.length - 1];
  return {
    events: page.map(toAuditEvent),
    // Positions keep microseconds (occurred_at_text) so no two events are skipped or repeated.
    next: rows.length > limit && last ? { occurred_at: last.occurred_at_text, id: last.id } : null,
  };
}

/** The published shape of an event, key for key, metadata redacted (docs/design.md §7). */
export function toAuditEvent(row: StoredAuditEvent): AuditEvent {
  return {
    id: row.id,
    occurred_at: row.occurred_at.toISOString(),
    source: row.source,
    event_type: row.event_type,
    resource_type: row.resource_type,
    resource_id: row.resource_id,
    outcome: row.outcome,
    actor: { type: row.actor_type, id: row.actor_id },
    request_id: row.request_id,
    metadata: redactSecrets(row.metadata) as Record<string, unknown>,
  };
}
