/**
 * Audit export benchmark: `bun scripts/dev.ts exec bun bench/delivery-exports.ts`.
 *
 * In a scratch database (`<dev db>_bench_<pid>`, dropped afterwards): one workspace with 1 000 000
 * audit events over 30 days, generated set-based (generate_series; every event's metadata carries
 * secrets the export must redact), and one export job of that range created by the API's own
 * function (row + audit event in one transaction). A real exports worker process
 * (`bun workers/main.ts exports`, its own QUEUE_PREFIX and a temporary BLOB_DIR) boots first; then
 * the job is enqueued and the clock starts. Measured: enqueue → row `completed` (polled every
 * 20 ms), the worker's own lease → completion time, and its peak RSS (VmHWM, plus VmRSS sampled every
 * 50 ms). The file is then streamed back (gunzip, line count, SHA-256) and checked against the job.
 *
 * Targets: the export under 30 s, the worker's peak RSS under 200 MB.
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { createGunzip } from 'node:zlib';
import { Queue } from 'bullmq';
import type { AuditExportRow } from '../shared/audit/exports-model.ts';
import { createAuditExport, enqueueAuditExport } from '../shared/audit/exports-service.ts';
import { queueName } from '../shared/jobs/queues.ts';
import { blobPath } from '../shared/platform/blob-store.ts';
import { createSql } from '../shared/platform/db.ts';
import { migrate } from '../shared/platform/migrate.ts';
import { createWorkerRedis } from '../shared/platform/redis.ts';
import { newId } from '../shared/util/ids.ts';
import { insertGeneratedAuditEvents } from '../test/audit/audit-exports-fixtures.ts';
import {
  exitedEarly,
  onCleanup,
  printChecks,
  removeQueueKeysAtCleanup,
  repoRoot,
  reportQuietness,
  rssOf,
  runBench,
  say,
  scratchDatabase,
  sleep,
  spawnBun,
  stopChild,
  table,
  untrack,
} from './lib.ts';

const TARGETS = { wallS: 30, peakRssMb: 200 };
const EVENTS = 1_000_000;
const RANGE = { from: new Date('2024-01-01T00:00:00Z'), to: new Date('2024-01-31T00:00:00Z') };
const BOOT_TIMEOUT_MS = 30_000;
const EXPORT_TIMEOUT_MS = 180_000;

const secs = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
const mib = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MiB`;

/** Reads the stored file back as a stream: its digest, its size, and its lines (uncompressed bytes too). */
async function readBack(path: string): Promise<{ sha256: string; bytes: number; lines: number; ndjsonBytes: number; redacted: boolean }> {
  const hash = createHash('sha256');
  let bytes = 0;
  const file = createReadStream(path);
  file.on('data', (chunk) => {
    hash.update(chunk as Buffer);
    bytes += (chunk as Buffer).length;
  });
  const gunzip = file.pipe(createGunzip());
  let ndjsonBytes = 0;
  gunzip.on('data', (chunk: Buffer) => (ndjsonBytes += chunk.length));
  let lines = 0;
  let redacted = true;
  for await (const line of createInterface({ input: gunzip, crlfDelay: Number.POSITIVE_INFINITY })) {
    if (line.length === 0) continue;
    lines += 1;
    // Spot-check redaction on a sample (parsing a million lines would measure the checker, not the export).
    if (lines % 10_000 === 1) redacted &&= (JSON.parse(line) as { metadata: { password?: string } }).metadata.password === '[REDACTED]';
  }
  return { sha256: hash.digest('hex'), bytes, lines, ndjsonBytes, redacted };
}

export async function benchExports(): Promise<[string, boolean, string][]> {
  const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

  // 1. Scratch database, one workspace, a million events.
  const db = await scratchDatabase('exports');
  const sql = createSql(db.url, { max: 4, application: 'bench-exports' });
  onCleanup(() => sql.end({ timeout: 5 }).catch(() => undefined));
  await migrate(sql, join(repoRoot, 'sql'));
  const workspaceId = newId();
  await sql`insert into workspaces (id, name, tier) values (${workspaceId}, 'bench exports', 'enterprise')`;
  const generateStarted = performance.now();
  await insertGeneratedAuditEvents(sql, { workspaceId, ...RANGE, count: EVENTS });
  await sql`analyze audit_events`;
  say(`generated ${EVENTS} audit events (plus one either side of the range) in ${secs(performance.now() - generateStarted)}`);
  const job = await createAuditExport(sql, {
    workspaceId,
    ...RANGE,
    actor: { type: 'admin', id: null },
    requestId: null,
    now: new Date(),
  });

  // 2. One real exports worker, booted before the clock starts.
  const blobDir = await mkdtemp(join(tmpdir(), 'bench-exports-'));
  onCleanup(() => rm(blobDir, { recursive: true, force: true }));
  const queuePrefix = `bench${process.pid}x`;
  removeQueueKeysAtCleanup(redisUrl, queuePrefix);
  await reportQuietness();
  let bootedAt: number | undefined;
  let exportLine: Record<string, unknown> | undefined;
  const problems: string[] = [];
  const worker = spawnBun(
    ['workers/main.ts', 'exports'],
    { DATABASE_URL: db.url, REDIS_URL: redisUrl, QUEUE_PREFIX: queuePrefix, BLOB_DIR: blobDir, LOG_LEVEL: 'info' },
    (line) => {
      try {
        const record = JSON.parse(line) as Record<string, unknown>;
        if (record.msg === 'pool started') bootedAt ??= performance.now();
        if (record.msg === 'export completed') exportLine = record;
        if (typeof record.level === 'number' && record.level >= 40) problems.push(line);
      } catch {
        if (line.trim()) problems.push(line);
      }
    },
  );
  say(`exports worker pid ${worker.proc.pid} (QUEUE_PREFIX ${queuePrefix}, BLOB_DIR ${blobDir})`);
  const bootDeadline = performance.now() + BOOT_TIMEOUT_MS;
  while (bootedAt === undefined) {
    if (exitedEarly(worker)) throw new Error(`the exports worker exited before it started:\n${worker.output.last.join('\n')}`);
    if (performance.now() > bootDeadline) throw new Error(`the exports worker did not start within ${BOOT_TIMEOUT_MS / 1000} s`);
    await sleep(20);
  }
  const bootRss = await rssOf(worker.proc.pid);

  const samples: number[] = [];
  let sampling = true;
  const sampler = (async () => {
    while (sampling && !exitedEarly(worker)) {
      try {
        samples.push((await rssOf(worker.proc.pid)).rss);
      } catch {
        // between exit and reap
      }
      await sleep(50);
    }
  })();

  // 3. Enqueue (as the API does after commit) and wait for the row to complete.
  const connection = createWorkerRedis(redisUrl, 'bench-exports');
  const queue = new Queue(queueName('exports'), { connection, prefix: queuePrefix });
  const started = performance.now();
  await enqueueAuditExport(queue, job);
  await queue.close();
  connection.disconnect();
  let done: AuditExportRow | undefined;
  const deadline = started + EXPORT_TIMEOUT_MS;
  while (performance.now() < deadline) {
    if (exitedEarly(worker)) throw new Error(`the exports worker exited mid-export:\n${worker.output.last.join('\n')}`);
    const [row] = await sql<AuditExportRow[]>`select * from audit_exports where id = ${job.id}`;
    if (row?.state === 'completed' || row?.state === 'failed') {
      done = row;
      break;
    }
    await sleep(20);
  }
  const wallMs = performance.now() - started;
  sampling = false;
  await sampler;
  if (!done) throw new Error(`the export did not finish within ${EXPORT_TIMEOUT_MS / 1000} s:\n${worker.output.last.join('\n')}`);
  if (done.state !== 'completed') throw new Error(`the export failed: ${done.failure_reason}\n${worker.output.last.join('\n')}`);
  const memory = await rssOf(worker.proc.pid);
  await stopChild(worker.proc);
  untrack(worker.proc);

  // 4. Read the file back and compare with the job.
  const readStarted = performance.now();
  const file = await readBack(blobPath(blobDir, done.blob_key!));
  const readMs = performance.now() - readStarted;
  // Released now, not only at cleanup: a caller may run other benchmarks in this process next.
  await sql.end({ timeout: 5 });
  const eventCount = Number(done.event_count);
  const intact = file.lines === EVENTS && eventCount === EVENTS && file.sha256 === done.sha256 && file.bytes === Number(done.bytes) && file.redacted;
  const workerMs = typeof exportLine?.ms === 'number' ? exportLine.ms : null;
  const peakMb = Math.max(memory.peak, ...samples);

  process.stdout.write('\n');
  process.stdout.write(
    `${table([
      ['audit export, 1 job', 'value'],
      ['events in the range (file lines)', `${eventCount} (${file.lines})`],
      ['NDJSON, uncompressed', mib(file.ndjsonBytes)],
      ['NDJSON.gz stored (bytes, sha256 checked)', `${mib(file.bytes)} (${((file.bytes / Math.max(1, file.ndjsonBytes)) * 100).toFixed(1)} %)`],
      ['wall: enqueue → row completed', secs(wallMs)],
      ['worker: lease → completed (its log)', workerMs === null ? 'n/a' : secs(workerMs)],
      ['events/s (wall)', ((eventCount * 1000) / wallMs).toFixed(0)],
      ['NDJSON MiB/s (wall)', (file.ndjsonBytes / 1024 / 1024 / (wallMs / 1000)).toFixed(1)],
      ['worker peak RSS (VmHWM)', `${memory.peak.toFixed(1)} MB`],
      [
        'worker RSS: after boot / max of 50 ms samples / at the end',
        `${bootRss.rss.toFixed(1)} / ${Math.max(0, ...samples).toFixed(1)} / ${memory.rss.toFixed(1)} MB`,
      ],
      ['read back in the bench (gunzip + sha256 + lines)', secs(readMs)],
    ])}\n\n`,
  );
  if (problems.length > 0) say(`warning: the worker logged ${problems.length} warning/error line(s); the last ones:\n${problems.slice(-5).join('\n')}`);

  return [
    [`export of ${EVENTS} events < ${TARGETS.wallS} s`, wallMs < TARGETS.wallS * 1000, secs(wallMs)],
    [`exports worker peak RSS < ${TARGETS.peakRssMb} MB`, peakMb < TARGETS.peakRssMb, `${peakMb.toFixed(1)} MB`],
    [
      'file = the range, redacted, bytes and sha256 as the job says',
      intact,
      `${file.lines} lines, sha256 ${file.sha256 === done.sha256 ? 'matches' : 'differs'}`,
    ],
  ];
}

if (import.meta.main) await runBench(async () => printChecks(await benchExports()));
