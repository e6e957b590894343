import type { Queue } from 'bullmq';
import type { Queryable, Sql } from '../db.ts';
import { errors, type ErrorDetail } from '../errors.ts';
import { insertOutboxEvent } from '../events/outbox.ts';
import { newId } from '../ids.ts';
import { JOBS, parseJobPayload } from '../queues.ts';
import { insertAuditEvent, type AuditActor } from './events.ts';

/**
 * Audit export jobs (spec 2.3 / 3 / 8, DESIGN 7): the repository of `audit_exports` and the job's
 * JSON shape. The row is the system of record; a BullMQ job only wakes an `exports` worker, which
 * must win the row's lease before it writes anything.
 */
export const AUDIT_EXPORT_STATES = ['queued', 'leased', 'completed', 'failed'] as const;
export type AuditExportState = (typeof AUDIT_EXPORT_STATES)[number];

// spec 8: an export covers at most 32 days, entirely in the past.
export const AUDIT_EXPORT_MAX_RANGE_DAYS = 32;
const DAY_MS = 86_400_000;

const SYSTEM: AuditActor = { type: 'system', id: null };

export type AuditExportRow = {
  id: string;
  workspace_id: string;
  state: AuditExportState;
  range_from: Date;
  range_to: Date;
  created_at: Date;
  updated_at: Date;
  attempts: number;
  lease_token: string | null;
  leased_by: string | null;
  leased_until: Date | null;
  completed_at: Date | null;
  failed_at: Date | null;
  event_count: bigint | null;
  bytes: bigint | null;
  sha256: string | null;
  blob_key: string | null;
  expires_at: Date | null;
  failure_reason: string | null;
  /** created_at with microseconds, for cursor positions. */
  created_at_text: string;
};

/** The job as clients see it: every field always present (null when it does not apply yet). */
export type AuditExportJob = {
  export_id: string;
  state: AuditExportState;
  from: string;
  to: string;
  created_at: string;
  updated_at: string;
  attempts: number;
  leased_until: string | null;
  completed_at: string | null;
  failed_at: string | null;
  event_count: number | null;
  bytes: number | null;
  sha256: string | null;
  expires_at: string | null;
  download_url: string | null;
  download_url_expires_at: string | null;
  failure_reason: string | null;
};

export type SignedDownload = { url: string; expiresAt: Date };

const iso = (value: Date | null) => (value ? value.toISOString() : null);
const count = (value: bigint | null) => (value === null ? null : Number(value));

/** A completed job whose file is still kept: the only kind that gets a download URL. */
export function isDownloadable(row: AuditExportRow, now: Date): boolean {
  return row.state === 'completed' && row.blob_key !== null && row.expires_at !== null && row.expires_at > now;
}

export function toAuditExportJob(row: AuditExportRow, download: SignedDownload | null): AuditExportJob {
  return {
    export_id: row.id,
    state: row.state,
    from: row.range_from.toISOString(),
    to: row.range_to.toISOString(),
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
    attempts: row.attempts,
    leased_until: row.state === 'leased' ? iso(row.leased_until) : null,
    completed_at: iso(row.completed_at),
    failed_at: iso(row.failed_at),
    event_count: count(row.event_count),
    bytes: count(row.bytes),
    sha256: row.sha256,
    expires_at: iso(row.expires_at),
    download_url: download?.url ?? null,
    download_url_expires_at: download ? download.expiresAt.toISOString() : null,
    failure_reason: row.failure_reason,
  };
}

/** spec 8: `from` < `to`, `to` not in the future, at most 32 days. Throws a 400 naming each problem. */
export function checkExportRange(from: Date, to: Date, now: Date): void {
  const details: ErrorDetail[] = [];
  if (from >= to) details.push({ field: 'body.from', message: 'must be before to' });
  if (to > now) details.push({ field: 'body.to', message: 'must not be in the future' });
  if (to.getTime() - from.getTime() > AUDIT_EXPORT_MAX_RANGE_DAYS * DAY_MS) {
    details.push({ field: 'body.to', message: `the range may span at most ${AUDIT_EXPORT_MAX_RANGE_DAYS} days` });
  }
  if (details.length > 0) {
    throw errors.invalidRequest(
      `The export range is invalid: \`from\` (inclusive) must be before \`to\` (exclusive), \`to\` not in the future, at most ${AUDIT_EXPORT_MAX_RANGE_DAYS} days apart.`,
      details,
    );
  }
}

// ---------------------------------------------------------------------------------------------
// Blob layout: every attempt of an export writes under the export's own directory, to a file named
// by its lease token, so a stale worker can never overwrite or delete the winner's file.

export function exportBlobDirectory(row: Pick<AuditExportRow, 'workspace_id' | 'id'>): string {
  return `audit-exports/${row.workspace_id}/${row.id}`;
}

export function exportBlobKey(row: Pick<AuditExportRow, 'workspace_id' | 'id'>, leaseToken: string): string {
  return `${exportBlobDirectory(row)}/${leaseToken}.ndjson.gz`;
}

// ---------------------------------------------------------------------------------------------
// Queue: one BullMQ job per attempt (`attempts` leases taken so far), so a re-enqueue after an
// expired lease never collides with the dead worker's job still sitting in Redis.

export function auditExportJobId(row: Pick<AuditExportRow, 'id' | 'attempts'>): string {
  return `audit-export-${row.id}-${row.attempts}`;
}

/** From the API, after the row committed (STYLE: write the row first, enqueue after commit). */
export async function enqueueAuditExport(queue: Queue, row: Pick<AuditExportRow, 'id' | 'attempts'>): Promise<void> {
  const name = 'audit_export.run';
  await queue.add(name, parseJobPayload(name, { export_id: row.id }), { ...JOBS[name].options, jobId: auditExportJobId(row) });
}

// ---------------------------------------------------------------------------------------------
// Queries

const COLUMNS = `id, workspace_id, state, range_from, range_to, created_at, updated_at, attempts, lease_token, leased_by,
  leased_until, completed_at, failed_at, event_count, bytes, sha256, blob_key, expires_at, failure_reason,
  to_char(created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as created_at_text`;

/** Creates a queued job and its `audit_export.requested` event in one transaction (DESIGN 7). */
export async function createAuditExport(
  sql: Sql,
  input: { workspaceId: string; from: Date; to: Date; actor: AuditActor; requestId: string | null; now: Date },
): Promise<AuditExportRow> {
  return sql.begin(async (tx) => {
    const id = newId();
    const [row] = await tx<AuditExportRow[]>`
      insert into audit_exports (id, workspace_id, state, range_from, range_to, requested_by_type, requested_by_id, created_at, updated_at)
      values (${id}, ${input.workspaceId}, 'queued', ${input.from}, ${input.to}, ${input.actor.type}, ${input.actor.id}, ${input.now}, ${input.now})
      returning ${tx.unsafe(COLUMNS)}`;
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
    return row!;
  });
}

/** A workspace's job; another workspace's id is simply not found (spec 7). */
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

export type AuditExportPosition = { created_at: string; id: string };

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
export async function renewAuditExportLease(
  db: Queryable,
  input: { exportId: string; token: string; now: Date; leaseMs: number },
): Promise<Date | null> {
  const [row] = await db<{ leased_until: Date }[]>`
    update audit_exports set leased_until = ${new Date(input.now.getTime() + input.leaseMs)}
    where id = ${input.exportId} and state = 'leased' and lease_token = ${input.token}
    returning leased_until`;
  return row?.leased_until ?? null;
}

function completedPayload(row: AuditExportRow): Record<string, unknown> {
  return {
    export_id: row.id,
    state: row.state,
    from: row.range_from.toISOString(),
    to: row.range_to.toISOString(),
    event_count: count(row.event_count),
    bytes: count(row.bytes),
    sha256: row.sha256,
    completed_at: iso(row.completed_at),
    expires_at: iso(row.expires_at),
  };
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
    const [row] = await tx<AuditExportRow[]>`
      update audit_exports
      set state = 'completed', completed_at = ${input.now}, updated_at = ${input.now}, event_count = ${input.eventCount},
          bytes = ${input.bytes}, sha256 = ${input.sha256}, blob_key = ${input.blobKey},
          expires_at = ${new Date(input.now.getTime() + input.retentionMs)},
          lease_token = null, leased_by = null, leased_until = null
      where id = ${input.exportId} and state = 'leased' and lease_token = ${input.token}
      returning ${tx.unsafe(COLUMNS)}`;
    if (!row) return null;
    await insertAuditEvent(tx, {
      workspaceId: row.workspace_id,
      eventType: 'audit_export.completed',
      resourceType: 'audit_export',
      resourceId: row.id,
      outcome: 'succeeded',
      actor: SYSTEM,
      metadata: { ...completedPayload(row), attempts: row.attempts },
      occurredAt: input.now,
    });
    await insertOutboxEvent(tx, { type: 'audit_export.completed', workspaceId: row.workspace_id, payload: completedPayload(row), at: input.now });
    return row;
  });
}

async function recordExportFailure(tx: Queryable, row: AuditExportRow, now: Date): Promise<void> {
  const payload = {
    export_id: row.id,
    state: row.state,
    from: row.range_from.toISOString(),
    to: row.range_to.toISOString(),
    attempts: row.attempts,
    failure_reason: row.failure_reason,
    failed_at: iso(row.failed_at),
  };
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
    const [row] = await tx<AuditExportRow[]>`
      update audit_exports
      set state = case when attempts >= ${input.maxAttempts} then 'failed' else 'queued' end,
          failed_at = case when attempts >= ${input.maxAttempts} then ${input.now}::timestamptz end,
          failure_reason = case when attempts >= ${input.maxAttempts} then ${input.reason} end,
          lease_token = null, leased_by = null, leased_until = null, updated_at = ${input.now}
      where id = ${input.exportId} and state = 'leased' and lease_token = ${input.token}
      returning ${tx.unsafe(COLUMNS)}`;
    if (row?.state === 'failed') await recordExportFailure(tx, row, input.now);
    return row ?? null;
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
    const requeued = await tx<AuditExportRow[]>`
      update audit_exports
      set state = 'queued', lease_token = null, leased_by = null, leased_until = null, updated_at = ${input.now}
      where state = 'leased' and leased_until <= ${input.now} and attempts < ${input.maxAttempts}
      returning ${tx.unsafe(COLUMNS)}`;
    const failed = await tx<AuditExportRow[]>`
      update audit_exports
      set state = 'failed', failed_at = ${input.now}, lease_token = null, leased_by = null, leased_until = null, updated_at = ${input.now},
          failure_reason = 'The worker holding the export stopped responding on the last of ' || attempts || ' attempts.'
      where state = 'leased' and leased_until <= ${input.now} and attempts >= ${input.maxAttempts}
      returning ${tx.unsafe(COLUMNS)}`;
    for (const row of failed) await recordExportFailure(tx, row, input.now);
    return { requeued: [...requeued], failed: [...failed] };
  });
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
