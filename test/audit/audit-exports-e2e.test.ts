import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AuditEvent } from '../../shared/audit/events.ts';
import type { AuditExportJob } from '../../shared/audit/exports-model.ts';
import { createTestApp, eventually, workspaceWithKey } from '../helpers.ts';
import { expectedExportIds, insertGeneratedAuditEvents } from './audit-exports-fixtures.ts';

// End to end over real processes: the API (in this process) creates jobs; `exports` worker processes
// (`bun workers/main.ts exports`) lease and write them. Short leases and sweeps, so a killed worker's
// job comes back within seconds. The queue prefix and blob directory are this suite's own.
const root = join(import.meta.dir, '..', '..');
const blobDir = mkdtempSync(join(tmpdir(), 'audit-exports-e2e-'));
const queuePrefix = `${process.env.QUEUE_PREFIX ?? 'test'}x${Math.random().toString(36).slice(2, 8)}`;
const settings = { QUEUE_PREFIX: queuePrefix, BLOB_DIR: blobDir, EXPORT_LEASE_SECONDS: '2', EXPORT_SWEEP_SECONDS: '1', EXPORT_MAX_ATTEMPTS: '3' };
const t = createTestApp({ config: settings });
const workers = new Set<ReturnType<typeof Bun.spawn>>();

function spawnWorker() {
  const child = Bun.spawn(['bun', 'workers/main.ts', 'exports'], {
    cwd: root,
    env: { ...process.env, LOG_LEVEL: 'warn', ...settings },
    stdout: 'ignore',
    stderr: 'inherit',
  });
  workers.add(child);
  return child;
}

/** Both workers have booted once each has a heartbeat row. */
async function waitForWorkers(pids: number[]) {
  await eventually(
    async () => {
      const rows = await t.deps.sql`select 1 from worker_heartbeats where pool = 'exports' and pid in ${t.deps.sql(pids)}`;
      return rows.length === pids.length ? true : undefined;
    },
    30_000,
    50,
  );
}

beforeAll(async () => {
  await t.deps.ready();
  const pids = [spawnWorker().pid, spawnWorker().pid];
  await waitForWorkers(pids);
}, 60_000);

afterAll(async () => {
  for (const child of workers) child.kill('SIGTERM');
  await Promise.all([...workers].map((child) => Promise.race([child.exited, Bun.sleep(15_000).then(() => child.kill('SIGKILL'))])));
  // Queue keys of this suite's prefix, so nothing is left in the shared Redis.
  let cursor = '0';
  do {
    const [next, keys] = await t.deps.redis.scan(cursor, 'MATCH', `${queuePrefix}:*`, 'COUNT', 1000);
    cursor = next;
    if (keys.length > 0) await t.deps.redis.del(...keys);
  } while (cursor !== '0');
  await t.close();
  rmSync(blobDir, { recursive: true, force: true });
});

async function createExport(key: string, range: { from: Date; to: Date }): Promise<AuditExportJob> {
  const response = await t.request('/v2/audit/exports', {
    method: 'POST',
    headers: { 'x-api-key': key, 'idempotency-key': crypto.randomUUID() },
    json: { from: range.from.toISOString(), to: range.to.toISOString() },
  });
  if (response.status !== 201) throw new Error(`export creation failed: ${response.status} ${await response.text()}`);
  return (await response.json()) as AuditExportJob;
}

async function readJob(key: string, id: string): Promise<AuditExportJob> {
  return (await (await t.request(`/v2/audit/exports/${id}`, { headers: { 'x-api-key': key } })).json()) as AuditExportJob;
}

const completed = (key: string, id: string, timeoutMs = 60_000) =>
  eventually(
    async () => {
      const job = await readJob(key, id);
      if (job.state === 'failed') throw new Error(`export ${id} failed: ${job.failure_reason}`);
      return job.state === 'completed' ? job : undefined;
    },
    timeoutMs,
    50,
  );

/** Downloads through the signed URL (no API key) and checks size and digest against the job. */
async function download(job: AuditExportJob): Promise<AuditEvent[]> {
  const url = new URL(job.download_url!);
  const response = await t.request(`${url.pathname}${url.search}`);
  expect(response.status).toBe(200);
  const bytes = new Uint8Array(await response.arrayBuffer());
  expect(bytes.length).toBe(job.bytes!);
  expect(createHash('sha256').update(bytes).digest('hex')).toBe(job.sha256!);
  const text = new TextDecoder().decode(Bun.gunzipSync(bytes));
  return text
    .split('\n')
    .filter((line) => line.length > 0)
    .map((line) => JSON.parse(line) as AuditEvent);
}

const exportDirectory = (workspaceId: string, exportId: string) => join(blobDir, 'audit-exports', workspaceId, exportId);

describe('exports worker processes', () => {
  test('two workers never lease the same job, even when every job is delivered to both', async () => {
    const ws = await workspaceWithKey(t, { tier: 'pro' });
    const range = { from: new Date('2021-05-01T00:00:00Z'), to: new Date('2021-05-02T00:00:00Z') };
    await insertGeneratedAuditEvents(t.deps.sql, { workspaceId: ws.workspace.id, ...range, count: 5_000 });
    const jobs = [];
    for (let index = 0; index < 8; index += 1) jobs.push(await createExport(ws.key, range));
    // Duplicate deliveries: extra BullMQ jobs for every export, so both processes race for each row.
    for (const job of jobs) {
      for (let copy = 0; copy < 3; copy += 1) {
        await t.deps.queues.exports.add(
          'audit_export.run',
          { export_id: job.export_id },
          { jobId: `duplicate-${job.export_id}-${copy}`, removeOnComplete: true, removeOnFail: true },
        );
      }
    }
    const expected = await expectedExportIds(t.deps.sql, { workspaceId: ws.workspace.id, ...range });
    expect(expected).toHaveLength(5_000);

    for (const job of jobs) {
      const done = await completed(ws.key, job.export_id);
      // One lease ever taken: the only attempt.
      expect(done.attempts).toBe(1);
      expect(done.event_count).toBe(5_000);
      expect(readdirSync(exportDirectory(ws.workspace.id, job.export_id))).toHaveLength(1);
    }
    const [counts] = await t.deps.sql<{ completed: number; outbox: number }[]>`
      select (select count(*)::int from audit_events where workspace_id = ${ws.workspace.id} and event_type = 'audit_export.completed') as completed,
             (select count(*)::int from event_outbox where workspace_id = ${ws.workspace.id} and event_type = 'audit_export.completed') as outbox`;
    expect(counts).toEqual({ completed: jobs.length, outbox: jobs.length });
    expect((await download(await readJob(ws.key, jobs[0]!.export_id))).map((event) => event.id)).toEqual(expected);
  }, 120_000);

  test('a worker killed mid-export (SIGKILL) leaves exactly one completed file once its lease expires', async () => {
    const ws = await workspaceWithKey(t, { tier: 'pro' });
    const range = { from: new Date('2021-06-01T00:00:00Z'), to: new Date('2021-06-20T00:00:00Z') };
    const count = 200_000;
    await insertGeneratedAuditEvents(t.deps.sql, { workspaceId: ws.workspace.id, ...range, count });
    const job = await createExport(ws.key, range);
    const directory = exportDirectory(ws.workspace.id, job.export_id);

    // Mid-export: leased, and the holder's temp file already has bytes in it.
    const holder = await eventually(
      async () => {
        const [row] = await t.deps.sql<{ leased_by: string | null; lease_token: string | null }[]>`
        select leased_by, lease_token from audit_exports where id = ${job.export_id} and state = 'leased'`;
        if (!row?.leased_by || !row.lease_token) return undefined;
        const temp = join(directory, `${row.lease_token}.ndjson.gz.tmp`);
        if (!existsSync(temp) || Bun.file(temp).size === 0) return undefined;
        return Number(row.leased_by.split(':').at(-1));
      },
      30_000,
      5,
    );
    const victim = [...workers].find((child) => child.pid === holder);
    expect(victim).toBeDefined();
    victim!.kill('SIGKILL');
    await victim!.exited;
    workers.delete(victim!);
    const replacement = spawnWorker();

    const done = await completed(ws.key, job.export_id, 90_000);
    expect(done.attempts).toBe(2);
    expect(done.event_count).toBe(count);
    // The dead worker's temp file is gone; the winner's file is the only one, and the one the job names.
    expect(readdirSync(directory)).toEqual([expect.stringMatching(/^[0-9a-f-]{36}\.ndjson\.gz$/)]);
    const [row] = await t.deps.sql<{ blob_key: string }[]>`select blob_key from audit_exports where id = ${job.export_id}`;
    expect(row!.blob_key).toBe(`audit-exports/${ws.workspace.id}/${job.export_id}/${readdirSync(directory)[0]}`);

    const lines = await download(done);
    expect(lines.map((event) => event.id)).toEqual(await expectedExportIds(t.deps.sql, { workspaceId: ws.workspace.id, ...range }));
    for (const line of lines) {
      expect(line.metadata.password).toBe('[REDACTED]');
      expect((line.metadata.nested as Record<string, unknown>).token).toBe('[REDACTED]');
    }
    expect(lines.some((line) => line.event_type !== 'bulk.generated')).toBe(false);

    const [events] = await t.deps.sql<{ completed: number; failed: number }[]>`
      select count(*) filter (where event_type = 'audit_export.completed')::int as completed,
             count(*) filter (where event_type = 'audit_export.failed')::int as failed
      from audit_events where workspace_id = ${ws.workspace.id} and resource_id = ${job.export_id}`;
    expect(events).toEqual({ completed: 1, failed: 0 });
    await waitForWorkers([replacement.pid]);
  }, 150_000);
});
