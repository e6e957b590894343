import { hostname } from 'node:os';
import { writeAuditExportFile } from '../../shared/audit/exports-file.ts';
import { exportBlobDirectory, exportBlobKey } from '../../shared/audit/exports-model.ts';
import {
  auditExportFilesPastRetention,
  leaseAuditExport,
  markAuditExportFileDeleted,
  queuedAuditExports,
  renewAuditExportLease,
} from '../../shared/audit/exports-repository.ts';
import { auditExportJobId, completeAuditExport, expireAuditExportLeases, releaseFailedAuditExport } from '../../shared/audit/exports-service.ts';
import { removeBlobs } from '../../shared/platform/blob-store.ts';
import { newId } from '../../shared/util/ids.ts';
import { holdLease, LeaseLostError, lostLease, sweepLeases } from '../lease.ts';
import { handle, type PoolContext, type PoolDefinition } from '../pool.ts';

/**
 * The `exports` pool (docs/design.md §7): `audit_export.run` leases one job and streams its file;
 * `audit_export.sweep` (scheduled) returns expired leases to `queued` (or `failed` on the last
 * attempt), re-enqueues queued jobs whose BullMQ job went missing, and deletes files past retention.
 */
const SWEEP_BATCH = 500;

/** Settings read once per pool from config. */
function settings(config: PoolContext['config']) {
  return {
    leaseMs: config.EXPORT_LEASE_SECONDS * 1000,
    maxAttempts: config.EXPORT_MAX_ATTEMPTS,
    retentionMs: config.EXPORT_RETENTION_HOURS * 3_600_000,
    blobRoot: config.BLOB_DIR,
  };
}

async function runExport(context: PoolContext, exportId: string): Promise<Record<string, unknown>> {
  const { sql, log, now, config } = context;
  const { leaseMs, maxAttempts, retentionMs, blobRoot } = settings(config);
  const token = newId();
  const row = await leaseAuditExport(sql, { exportId, token, leasedBy: `${hostname()}:${process.pid}`, now: now(), leaseMs, maxAttempts });
  // Finished, held by a live worker, or out of attempts (the sweeper fails it): nothing to do here.
  if (!row) return { export_id: exportId, leased: false };
  const exportLog = log.child({ export_id: row.id, attempt: row.attempts });
  exportLog.info('export leased');
  const started = performance.now();
  const key = exportBlobKey(row, token);
  // Renewed while the file is written; the write is aborted once the lease is lost (workers/lease.ts).
  const lease = holdLease({
    what: 'export',
    leasedUntil: row.leased_until!,
    leaseMs,
    renew: () => renewAuditExportLease(sql, { exportId: row.id, token, now: now(), leaseMs }),
    now,
    log: exportLog,
  });
  try {
    // Leftovers of earlier attempts: their leases have ended, so their files can never be committed.
    await removeBlobs(blobRoot, exportBlobDirectory(row));
    const written = await writeAuditExportFile(
      sql,
      blobRoot,
      key,
      { workspaceId: row.workspace_id, from: row.range_from, to: row.range_to },
      { signal: lease.signal, beforeCommit: () => lease.confirm() },
    );
    lease.stop();
    const completed = await completeAuditExport(sql, { exportId: row.id, token, now: now(), ...written, blobKey: key, retentionMs });
    if (!completed) throw new LeaseLostError('export');
    exportLog.info({ event_count: written.eventCount, bytes: written.bytes, ms: Math.round(performance.now() - started) }, 'export completed');
    return { export_id: row.id, state: 'completed', event_count: written.eventCount, bytes: written.bytes };
  } catch (error) {
    lease.stop();
    // Our file is never the one a client gets: remove it (another worker's lives under its own name).
    await removeBlobs(blobRoot, key).catch((cleanupError: Error) =>
      exportLog.warn({ err: cleanupError.message }, 'could not remove an unfinished export file; the next attempt or the sweeper will'),
    );
    if (lostLease(error, lease)) {
      exportLog.warn('export lease lost; another worker or the sweeper has the job');
      return { export_id: row.id, leased: false };
    }
    exportLog.error({ err: error }, 'export attempt failed');
    const released = await releaseFailedAuditExport(sql, {
      exportId: row.id,
      token,
      now: now(),
      maxAttempts,
      reason: `Attempt ${row.attempts} of ${maxAttempts} could not write the export file.`,
    });
    return { export_id: row.id, state: released?.state ?? 'unknown' };
  }
}

async function sweep(context: PoolContext): Promise<Record<string, number>> {
  const { sql, log, now, config, queue, enqueue } = context;
  const { maxAttempts, blobRoot } = settings(config);
  const at = now();
  const swept = await sweepLeases(queue, {
    expire: () => expireAuditExportLeases(sql, { now: at, maxAttempts }),
    queued: () => queuedAuditExports(sql, SWEEP_BATCH),
    jobId: auditExportJobId,
    enqueue: (row, jobId) => enqueue('audit_export.run', { export_id: row.id }, { jobId }),
  });
  // A job that failed for good keeps nothing on disk (the dead worker's temp file, if any).
  for (const row of swept.failed) await removeBlobs(blobRoot, exportBlobDirectory(row));
  let filesDeleted = 0;
  for (const row of await auditExportFilesPastRetention(sql, at, SWEEP_BATCH)) {
    await removeBlobs(blobRoot, exportBlobDirectory(row));
    if (await markAuditExportFileDeleted(sql, row.id, row.blob_key!, at)) filesDeleted += 1;
  }
  const result = { leases_requeued: swept.requeued.length, leases_failed: swept.failed.length, jobs_enqueued: swept.enqueued, files_deleted: filesDeleted };
  if (Object.values(result).some((value) => value > 0)) log.info(result, 'export sweep');
  return result;
}

export const exportsPool: PoolDefinition = {
  pool: 'exports',
  schedules: (config) => [{ id: 'exports-sweep', job: 'audit_export.sweep', everyMs: config.EXPORT_SWEEP_SECONDS * 1000 }],
  // One job at a time, so a process's memory is one export's (scale out with processes). A sweep may
  // wait behind an export; a dead worker's job still comes back without it, as BullMQ redelivers the
  // stalled job and the handler takes over a lease that has run out.
  concurrency: 1,
  handlers: (context) => [handle('audit_export.run', ({ export_id }) => runExport(context, export_id)), handle('audit_export.sweep', () => sweep(context))],
};
