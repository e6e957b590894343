import { hostname } from 'node:os';
import { removeBlobs } from '../../shared/platform/blob-store.ts';
import { exportBlobDirectory, exportBlobKey, type AuditExportRow } from '../../shared/audit/exports-model.ts';
import {
  auditExportFilesPastRetention,
  leaseAuditExport,
  markAuditExportFileDeleted,
  queuedAuditExports,
  renewAuditExportLease,
} from '../../shared/audit/exports-repository.ts';
import { auditExportJobId, completeAuditExport, expireAuditExportLeases, releaseFailedAuditExport } from '../../shared/audit/exports-service.ts';
import { writeAuditExportFile } from '../../shared/audit/exports-file.ts';
import { newId } from '../../shared/util/ids.ts';
import { handle, type PoolContext, type PoolDefinition } from '../pool.ts';

/**
 * The `exports` pool (DESIGN 7): `audit_export.run` leases one job and streams its file;
 * `audit_export.sweep` (scheduled) returns expired leases to `queued` (or `failed` on the last
 * attempt), re-enqueues queued jobs whose BullMQ job went missing, and deletes files past retention.
 */
const SWEEP_BATCH = 500;

class LeaseLostError extends Error {
  constructor() {
    super('the export lease was lost');
  }
}

/** Settings read once per pool from config. */
function settings(config: PoolContext['config']) {
  return {
    leaseMs: config.EXPORT_LEASE_SECONDS * 1000,
    // Three heartbeats per lease: one late or failed renewal never loses a healthy worker its job.
    heartbeatMs: Math.max(200, Math.floor((config.EXPORT_LEASE_SECONDS * 1000) / 3)),
    maxAttempts: config.EXPORT_MAX_ATTEMPTS,
    retentionMs: config.EXPORT_RETENTION_HOURS * 3_600_000,
    blobRoot: config.BLOB_DIR,
  };
}

/**
 * Keeps the lease alive while the file is written. Aborts the write when the lease is gone: taken
 * by another worker, or not renewed before it ran out (this process cannot prove it still holds it).
 */
function startHeartbeat(context: PoolContext, row: AuditExportRow, token: string, leaseMs: number, everyMs: number) {
  const { sql, log, now } = context;
  const controller = new AbortController();
  let leasedUntil = row.leased_until!.getTime();
  let busy = false;
  const timer = setInterval(() => {
    if (busy) return;
    busy = true;
    renewAuditExportLease(sql, { exportId: row.id, token, now: now(), leaseMs })
      .then((until) => {
        if (until) leasedUntil = until.getTime();
        else controller.abort(new LeaseLostError());
      })
      .catch((error: Error) => {
        log.warn({ export_id: row.id, err: error.message }, 'could not renew export lease');
        if (now().getTime() >= leasedUntil) controller.abort(new LeaseLostError());
      })
      .finally(() => {
        busy = false;
      });
  }, everyMs);
  return {
    signal: controller.signal,
    /** Renews once more and throws if the lease is no longer ours (called right before the rename). */
    async confirm() {
      const until = await renewAuditExportLease(sql, { exportId: row.id, token, now: now(), leaseMs });
      if (!until) throw new LeaseLostError();
    },
    stop: () => clearInterval(timer),
  };
}

async function runExport(context: PoolContext, exportId: string): Promise<Record<string, unknown>> {
  const { sql, log, now, config } = context;
  const { leaseMs, heartbeatMs, maxAttempts, retentionMs, blobRoot } = settings(config);
  const token = newId();
  const row = await leaseAuditExport(sql, { exportId, token, leasedBy: `${hostname()}:${process.pid}`, now: now(), leaseMs, maxAttempts });
  // Finished, held by a live worker, or out of attempts (the sweeper fails it): nothing to do here.
  if (!row) return { export_id: exportId, leased: false };
  const exportLog = log.child({ export_id: row.id, attempt: row.attempts });
  exportLog.info('export leased');
  const started = performance.now();
  const key = exportBlobKey(row, token);
  const heartbeat = startHeartbeat(context, row, token, leaseMs, heartbeatMs);
  try {
    // Leftovers of earlier attempts: their leases have ended, so their files can never be committed.
    await removeBlobs(blobRoot, exportBlobDirectory(row));
    const written = await writeAuditExportFile(
      sql,
      blobRoot,
      key,
      { workspaceId: row.workspace_id, from: row.range_from, to: row.range_to },
      { signal: heartbeat.signal, beforeCommit: () => heartbeat.confirm() },
    );
    heartbeat.stop();
    const completed = await completeAuditExport(sql, { exportId: row.id, token, now: now(), ...written, blobKey: key, retentionMs });
    if (!completed) throw new LeaseLostError();
    exportLog.info({ event_count: written.eventCount, bytes: written.bytes, ms: Math.round(performance.now() - started) }, 'export completed');
    return { export_id: row.id, state: 'completed', event_count: written.eventCount, bytes: written.bytes };
  } catch (error) {
    heartbeat.stop();
    // Our file is never the one a client gets: remove it (another worker's lives under its own name).
    await removeBlobs(blobRoot, key).catch((cleanupError: Error) =>
      exportLog.warn({ err: cleanupError.message }, 'could not remove an unfinished export file; the next attempt or the sweeper will'),
    );
    if (error instanceof LeaseLostError || heartbeat.signal.reason instanceof LeaseLostError) {
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
  const expired = await expireAuditExportLeases(sql, { now: at, maxAttempts });
  // A job that failed for good keeps nothing on disk (the dead worker's temp file, if any).
  for (const row of expired.failed) await removeBlobs(blobRoot, exportBlobDirectory(row));
  // Every queued job needs its BullMQ job: the API enqueues after commit and may have died between.
  let enqueued = 0;
  for (const row of await queuedAuditExports(sql, SWEEP_BATCH)) {
    const jobId = auditExportJobId(row);
    if ((await queue.getJobState(jobId)) !== 'unknown') continue;
    await enqueue('audit_export.run', { export_id: row.id }, { jobId });
    enqueued += 1;
  }
  let filesDeleted = 0;
  for (const row of await auditExportFilesPastRetention(sql, at, SWEEP_BATCH)) {
    await removeBlobs(blobRoot, exportBlobDirectory(row));
    if (await markAuditExportFileDeleted(sql, row.id, row.blob_key!, at)) filesDeleted += 1;
  }
  const result = { leases_requeued: expired.requeued.length, leases_failed: expired.failed.length, jobs_enqueued: enqueued, files_deleted: filesDeleted };
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
  handlers: (context) => [
    handle('audit_export.run', ({ export_id }) => runExport(context, export_id)),
    handle('audit_export.sweep', () => sweep(context)),
  ],
};
