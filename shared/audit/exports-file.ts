import { Readable } from 'node:stream';
import { createGzip } from 'node:zlib';
import { writeBlob } from '../platform/blob-store.ts';
import type { Sql } from '../platform/db.ts';
import { MemoryReleaser } from '../platform/memory.ts';
import { type StoredAuditEvent, toAuditEvent } from './events.ts';

/**
 * The export file: the range's events as NDJSON (one event per line, the same fields and the same
 * redaction as GET /v2/audit/events), oldest first, gzip-compressed, written with constant memory:
 * a server-side cursor reads batches, each batch becomes one text chunk, gzip and the SHA-256 run
 * as streams, and back-pressure from the disk paces the cursor.
 */
// Small batches and one chunk of read-ahead keep the worker's peak RSS low (bench/delivery-exports.ts:
// ~160 MB at 500 rows, ~190-250 MB at 2 000 rows with the default 16 chunks of read-ahead), while a
// million events still take about 5 s.
export const EXPORT_BATCH_ROWS = 500;
const READ_AHEAD_CHUNKS = 1;
const GZIP_LEVEL = 6;

export type ExportRange = { workspaceId: string; from: Date; to: Date };

/**
 * NDJSON chunks of the range's events (`from` inclusive, `to` exclusive), one per cursor batch.
 * One statement, so the file is one consistent snapshot of the log. `counted` sees each batch size.
 */
export async function* auditExportChunks(sql: Sql, range: ExportRange, counted: (events: number) => void): AsyncGenerator<string> {
  const cursor = sql<StoredAuditEvent[]>`
    select id, occurred_at, source, event_type, resource_type, resource_id, outcome, actor_type, actor_id, request_id, metadata
    from audit_events
    where workspace_id = ${range.workspaceId} and occurred_at >= ${range.from} and occurred_at < ${range.to}
    order by occurred_at, id`.cursor(EXPORT_BATCH_ROWS);
  // A million events make ~400 MB of short-lived strings, which JavaScriptCore collects lazily: the
  // worker peaked at ~240-270 MB. Collected when the process has grown by 32 MB (at most every
  // 500 ms), it stays under ~170 MB for ~7 % more time (bench/delivery-exports.ts).
  const memory = new MemoryReleaser({ headroomBytes: 32 * 1024 * 1024, minIntervalMs: 500 });
  for await (const rows of cursor) {
    let chunk = '';
    for (const row of rows) chunk += `${JSON.stringify(toAuditEvent(row))}\n`; // the listing's shape, redacted
    counted(rows.length);
    yield chunk;
    memory.afterWork();
  }
}

export type WrittenExport = { eventCount: number; bytes: number; sha256: string };

/**
 * Writes the range's file to the blob store under `key` (temp file, then rename). `bytes` and
 * `sha256` describe the stored .ndjson.gz exactly as it is served. `beforeCommit` runs before the
 * rename (the worker re-checks its lease there); `signal` aborts the write.
 */
export async function writeAuditExportFile(
  sql: Sql,
  blobRoot: string,
  key: string,
  range: ExportRange,
  options: { signal?: AbortSignal; beforeCommit?: () => Promise<void> } = {},
): Promise<WrittenExport> {
  let eventCount = 0;
  const source = Readable.from(
    auditExportChunks(sql, range, (events) => (eventCount += events)),
    { highWaterMark: READ_AHEAD_CHUNKS },
  );
  const written = await writeBlob(blobRoot, key, source, {
    transforms: [createGzip({ level: GZIP_LEVEL })],
    signal: options.signal,
    beforeCommit: options.beforeCommit,
  });
  return { eventCount, ...written };
}
