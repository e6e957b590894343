import type { Queryable } from '../platform/db.ts';
import type { AuditActor } from './events.ts';
import type { AuditExportPosition, AuditExportRow, AuditExportState } from './exports-model.ts';

/**
 * The `audit_exports` table, one function per query. The guarded updates (state and lease token in
 * the `where`) make every transition exclusive; exports-service.ts wraps those that record events.
 */
const COLUMNS = `id, workspace_id, state, range_from, range_to, created_at, updated_at, attempts, lease_token, leased_by,
  leased_until, completed_at, failed_at, event_count, bytes, sha256, blob_key, expires_at, failure_reason,
  to_char(created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as created_at_text`;

export async function insertAuditExport(
  db: Queryable,
  input: { id: string; workspaceId: string; from: Date; to: Date; actor: AuditActor; now: Date },
): Promise<AuditExportRow> {
  const [row] = await db<AuditExportRow[]>`
    insert into audit_exports (id, workspace_id, state, range_from, range_to, requested_by_type, requested_by_id, created_at, updated_at)
    values (${input.id}, ${input.workspaceId}, 'queued', ${input.from}, ${input.to}, ${input.actor.type}, ${input.actor.id}, ${input.now}, ${input.now})
    returning ${db.unsafe(COLUMNS)}`;
  return row!;
}

/** A workspace's job; another workspace's id is simply not found (docs/interface.md §7). */
export async function findAuditExport(db: Queryable, workspaceId: string, exportId: string): Promise<AuditExportRow | null> {
  const [row] = await db<AuditExportRow[]>`
    select ${db.unsafe(COLUMNS)} from audit_exports where id = ${exportId} and workspace_id = ${workspaceId}`;
  return row ?? null;
}

/** For the public download route, which has no workspace: the signature already names the job. */
export async function findAuditExportById(db: Queryable, exportId: string): Promise<AuditExportRow | null> {
  const [row] = await db<AuditExportRow[]>`select ${db.unsafe(COLUMNS)} from audit_exports where id = ${exportId}`;
  return row ?? null;
}

/** One page, newest first, keyset on (created_at, id); one row more than asked tells of a next page. */
export async function listAuditExports(
  db: Queryable,
  workspaceId: string,
  filters: { state?: AuditExportState },
  after: AuditExportPosition | null,
  limit: number,
): Promise<{ rows: AuditExportRow[]; next: AuditExportPosition | null }> {
  const rows = await db<AuditExportRow[]>`
    select ${db.unsafe(COLUMNS)} from audit_exports
    where workspace_id = ${workspaceId}
      ${filters.state ? db`and state = ${filters.state}` : db``}
      ${after ? db`and (created_at, id) < (${after.created_at}::timestamptz, ${after.id}::uuid)` : db``}
    order by created_at desc, id desc
    limit ${limit + 1}`;
  const page = rows.slice(0, limit);
  const last = page[page.length - 1];
  return { rows: page, next: rows.length > limit && last ? { created_at: last.created_at_text, id: last.id } : null };
}

/**
 * Takes the lease of a queued job, or of a leased one whose lease ran out, if attempts remain.
 * The guarded update makes it exclusive: of any number of workers, one gets the row.
 */
export async function leaseAuditExport(
  db: Queryable,
  input: { exportId: string; token: string; leasedBy: string; now: Date; leaseMs: number; maxAttempts: number },
): Promise<AuditExportRow | null> {
  const [row] = await db<AuditExportRow[]>`
    update audit_exports
    set state = 'leased', attempts = attempts + 1, lease_token = ${input.token}, leased_by = ${input.leasedBy},
        leased_until = ${new Date(input.now.getTime() + input.leaseMs)}, updated_at = ${input.now}
    where id = ${input.exportId} and attempts < ${input.maxAttempts}
      and (state = 'queued' or (state = 'leased' and leased_until <= ${input.now}))
    returning ${db.unsafe(COLUMNS)}`;
  return row ?? null;
}

/** The heartbeat: extends the lease while this token still holds it; null means it was lost. */
export async function renewAuditExportLease(db: Queryable, input: { exportId: string; token: string; now: Date; leaseMs: number }): Promise<Date | null> {
  const [row] = await db<{ leased_until: Date }[]>`
    update audit_exports set leased_until = ${new Date(input.now.getTime() + input.leaseMs)}
    where id = ${input.exportId} and state = 'leased' and lease_token = ${input.token}
    returning leased_until`;
  return row?.leased_until ?? null;
}

/** Marks the job completed if this token still holds the lease; null: the lease was lost. */
export async function markAuditExportCompleted(
  db: Queryable,
  input: { exportId: string; token: string; now: Date; eventCount: number; bytes: number; sha256: string; blobKey: string; retentionMs: number },
): Promise<AuditExportRow | null> {
  const [row] = await db<AuditExportRow[]>`
    update audit_exports
    set state = 'completed', completed_at = ${input.now}, updated_at = ${input.now}, event_count = ${input.eventCount},
        bytes = ${input.bytes}, sha256 = ${input.sha256}, blob_key = ${input.blobKey},
        expires_at = ${new Date(input.now.getTime() + input.retentionMs)},
        lease_token = null, leased_by = null, leased_until = null
    where id = ${input.exportId} and state = 'leased' and lease_token = ${input.token}
    returning ${db.unsafe(COLUMNS)}`;
  return row ?? null;
}

/**
 * Gives up this token's lease after a failed attempt: back to `queued` while attempts remain, else
 * `failed` with `reason`. Null when this token no longer held the lease.
 */
export async function releaseAuditExportLease(
  db: Queryable,
  input: { exportId: string; token: string; now: Date; maxAttempts: number; reason: string },
): Promise<AuditExportRow | null> {
  const [row] = await db<AuditExportRow[]>`
    update audit_exports
    set state = case when attempts >= ${input.maxAttempts} then 'failed' else 'queued' end,
        failed_at = case when attempts >= ${input.maxAttempts} then ${input.now}::timestamptz end,
        failure_reason = case when attempts >= ${input.maxAttempts} then ${input.reason} end,
        lease_token = null, leased_by = null, leased_until = null, updated_at = ${input.now}
    where id = ${input.exportId} and state = 'leased' and lease_token = ${input.token}
    returning ${db.unsafe(COLUMNS)}`;
  return row ?? null;
}

/** Leases that ran out with attempts left go back to `queued`. */
export async function requeueExpiredAuditExportLeases(db: Queryable, input: { now: Date; maxAttempts: number }): Promise<AuditExportRow[]> {
  const rows = await db<AuditExportRow[]>`
    update audit_exports
    set state = 'queued', lease_token = null, leased_by = null, leased_until = null, updated_at = ${input.now}
    where state = 'leased' and leased_until <= ${input.now} and attempts < ${input.maxAttempts}
    returning ${db.unsafe(COLUMNS)}`;
  return [...rows];
}

/** Leases that ran out on the last attempt: the job fails. */
export async function failExpiredAuditExportLeases(db: Queryable, input: { now: Date; maxAttempts: number }): Promise<AuditExportRow[]> {
  const rows = await db<AuditExportRow[]>`
    update audit_exports
    set state = 'failed', failed_at = ${input.now}, lease_token = null, leased_by = null, leased_until = null, updated_at = ${input.now},
        failure_reason = 'The worker holding the export stopped responding on the last of ' || attempts || ' attempts.'
    where state = 'leased' and leased_until <= ${input.now} and attempts >= ${input.maxAttempts}
    returning ${db.unsafe(COLUMNS)}`;
  return [...rows];
}

/** Queued jobs, oldest first, for the sweeper to check that each has its BullMQ job. */
export async function queuedAuditExports(db: Queryable, limit: number): Promise<Pick<AuditExportRow, 'id' | 'attempts'>[]> {
  return db<Pick<AuditExportRow, 'id' | 'attempts'>[]>`
    select id, attempts from audit_exports where state = 'queued' order by created_at, id limit ${limit}`;
}

/** Completed jobs whose file is past its retention and still on disk. */
export async function auditExportFilesPastRetention(
  db: Queryable,
  now: Date,
  limit: number,
): Promise<Pick<AuditExportRow, 'id' | 'workspace_id' | 'blob_key'>[]> {
  return db<Pick<AuditExportRow, 'id' | 'workspace_id' | 'blob_key'>[]>`
    select id, workspace_id, blob_key from audit_exports
    where blob_key is not null and expires_at <= ${now}
    order by expires_at limit ${limit}`;
}

/** Records that the file is gone; the job stays `completed` but never gets a URL again. */
export async function markAuditExportFileDeleted(db: Queryable, exportId: string, blobKey: string, now: Date): Promise<boolean> {
  const rows = await db`
    update audit_exports set blob_key = null, file_deleted_at = ${now}, updated_at = ${now}
    where id = ${exportId} and blob_key = ${blobKey}
    returning 1`;
  return rows.length === 1;
}
