import { type ErrorDetail, errors } from '../http/errors.ts';
import type { SignedUrl } from '../http/signed-url.ts';

/**
 * Audit export jobs (docs/interface.md §2.3 / §3 / §8, docs/design.md §7): the stored row, the job's JSON shape and the range
 * rule. The row is the system of record (exports-repository.ts); a BullMQ job only wakes an
 * `exports` worker, which must win the row's lease before it writes anything (exports-service.ts).
 */
export const AUDIT_EXPORT_STATES = ['queued', 'leased', 'completed', 'failed'] as const;
export type AuditExportState = (typeof AUDIT_EXPORT_STATES)[number];

// docs/interface.md §8: an export covers at most 32 days, entirely in the past.
export const AUDIT_EXPORT_MAX_RANGE_DAYS = 32;
const DAY_MS = 86_400_000;

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

export type AuditExportPosition = { created_at: string; id: string };

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

const iso = (value: Date | null) => (value ? value.toISOString() : null);
const count = (value: bigint | null) => (value === null ? null : Number(value));

/** A completed job whose file is still kept: the only kind that gets a download URL. */
export function isDownloadable(row: AuditExportRow, now: Date): boolean {
  return row.state === 'completed' && row.blob_key !== null && row.expires_at !== null && row.expires_at > now;
}

export function toAuditExportJob(row: AuditExportRow, download: SignedUrl | null): AuditExportJob {
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

/** The payload of `audit_export.completed` (audit event metadata adds `attempts`; outbox as is). */
export function completedEventPayload(row: AuditExportRow): Record<string, unknown> {
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

/** The payload of `audit_export.failed`, in the audit log and the outbox alike. */
export function failedEventPayload(row: AuditExportRow): Record<string, unknown> {
  return {
    export_id: row.id,
    state: row.state,
    from: row.range_from.toISOString(),
    to: row.range_to.toISOString(),
    attempts: row.attempts,
    failure_reason: row.failure_reason,
    failed_at: iso(row.failed_at),
  };
}

/** docs/interface.md §8: `from` < `to`, `to` not in the future, at most 32 days. Throws a 400 naming each problem. */
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

// Blob layout: every attempt of an export writes under the export's own directory, to a file named
// by its lease token, so a stale worker can never overwrite or delete the winner's file.

export function exportBlobDirectory(row: Pick<AuditExportRow, 'workspace_id' | 'id'>): string {
  return `audit-exports/${row.workspace_id}/${row.id}`;
}

export function exportBlobKey(row: Pick<AuditExportRow, 'workspace_id' | 'id'>, leaseToken: string): string {
  return `${exportBlobDirectory(row)}/${leaseToken}.ndjson.gz`;
}
