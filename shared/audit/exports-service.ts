import { insertOutboxEvent } from '../events/outbox.ts';
import { enqueue, type JobQueues } from '../jobs/queues.ts';
import type { Queryable, Sql } from '../platform/db.ts';
import { newId } from '../util/ids.ts';
import { type AuditActor, insertAuditEvent } from './events.ts';
import { type AuditExportRow, completedEventPayload, failedEventPayload } from './exports-model.ts';
import {
  failExpiredAuditExportLeases,
  insertAuditExport,
  markAuditExportCompleted,
  releaseAuditExportLease,
  requeueExpiredAuditExportLeases,
} from './exports-repository.ts';

/**
 * The export lifecycle (docs/design.md §7): each transition that clients can observe records its audit event
 * (and, when it ends the job, its outbox event) in the same transaction; jobs are enqueued after
 * commit.
 */
const SYSTEM: AuditActor = { type: 'system', id: null };

// Queue: one BullMQ job per attempt (`attempts` leases taken so far), so a re-enqueue after an
// expired lease never collides with the dead worker's job still sitting in Redis.

export function auditExportJobId(row: Pick<AuditExportRow, 'id' | 'attempts'>): string {
  return `audit-export-${row.id}-${row.attempts}`;
}

/** From the API, after the row committed (docs/conventions.md: write the row first, enqueue after commit). */
export async function enqueueAuditExport(queues: JobQueues, row: Pick<AuditExportRow, 'id' | 'attempts'>): Promise<void> {
  await enqueue(queues, 'audit_export.run', { export_id: row.id }, { jobId: auditExportJobId(row) });
}

/** Creates a queued job and its `audit_export.requested` event in one transaction (docs/design.md §7). */
export async function createAuditExport(
  sql: Sql,
  input: { workspaceId: string; from: Date; to: Date; actor: AuditActor; requestId: string | null; now: Date },
): Promise<AuditExportRow> {
  return sql.begin(async (tx) => {
    const id = newId();
    const row = await insertAuditExport(tx, { id, workspaceId: input.workspaceId, from: input.from, to: input.to, actor: input.actor, now: input.now });
    await insertAuditEvent(tx, {
      workspaceId: input.workspaceId,
      eventType: 'audit_export.requested',
      resourceType: 'audit_export',
      resourceId: id,
      outcome: 'accepted',
      actor: input.actor,
      requestId: input.requestId,
      metadata: { from: input.from.toISOString(), to: input.to.toISOString() },
      occurredAt: input.now,
    });
    return row;
  });
}

/**
 * Marks the job completed if this token still holds the lease, with its audit event and its
 * `audit_export.completed` outbox event in the same transaction. Null: the lease was lost.
 */
export async function completeAuditExport(
  sql: Sql,
  input: { exportId: string; token: string; now: Date; eventCount: number; bytes: number; sha256: string; blobKey: string; retentionMs: number },
): Promise<AuditExportRow | null> {
  return sql.begin(async (tx) => {
    const row = await markAuditExportCompleted(tx, input);
    if (!row) return null;
    await insertAuditEvent(tx, {
      workspaceId: row.workspace_id,
      eventType: 'audit_export.completed',
      resourceType: 'audit_export',
      resourceId: row.id,
      outcome: 'succeeded',
      actor: SYSTEM,
      metadata: { ...completedEventPayload(row), attempts: row.attempts },
      occurredAt: input.now,
    });
    await insertOutboxEvent(tx, { type: 'audit_export.completed', workspaceId: row.workspace_id, payload: completedEventPayload(row), at: input.now });
    return row;
  });
}

async function recordExportFailure(tx: Queryable, row: AuditExportRow, now: Date): Promise<void> {
  const payload = failedEventPayload(row);
  await insertAuditEvent(tx, {
    workspaceId: row.workspace_id,
    eventType: 'audit_export.failed',
    resourceType: 'audit_export',
    resourceId: row.id,
    outcome: 'failed',
    actor: SYSTEM,
    metadata: payload,
    occurredAt: now,
  });
  await insertOutboxEvent(tx, { type: 'audit_export.failed', workspaceId: row.workspace_id, payload, at: now });
}

/**
 * After an attempt failed: back to `queued` while attempts remain (the sweeper re-enqueues it),
 * else `failed` with `reason` and its events. Null when this token no longer held the lease.
 */
export async function releaseFailedAuditExport(
  sql: Sql,
  input: { exportId: string; token: string; now: Date; maxAttempts: number; reason: string },
): Promise<AuditExportRow | null> {
  return sql.begin(async (tx) => {
    const row = await releaseAuditExportLease(tx, input);
    if (row?.state === 'failed') await recordExportFailure(tx, row, input.now);
    return row;
  });
}

/**
 * The sweeper's first duty: leases that ran out (their worker died or stalled) go back to `queued`,
 * or to `failed` when that was the last attempt. Concurrent sweepers are safe: each row's update
 * re-checks its condition under the row lock, so no failure is recorded twice.
 */
export async function expireAuditExportLeases(
  sql: Sql,
  input: { now: Date; maxAttempts: number },
): Promise<{ requeued: AuditExportRow[]; failed: AuditExportRow[] }> {
  return sql.begin(async (tx) => {
    const requeued = await requeueExpiredAuditExportLeases(tx, input);
    const failed = await failExpiredAuditExportLeases(tx, input);
    for (const row of failed) await recordExportFailure(tx, row, input.now);
    return { requeued, failed };
  });
}
