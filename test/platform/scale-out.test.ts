import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../../scripts/services.ts';
import { catalogIdFor } from '../../shared/catalog/identity.ts';
import { createSql, type Sql } from '../../shared/platform/db.ts';
import { insertGeneratedAuditEvents } from '../audit/audit-exports-fixtures.ts';
import { type MarketSimulator, startMarketSimulator } from '../fakes/simulator/server.ts';
import { createTestApp, eventually, sharedImageFake, workspaceWithKey } from '../helpers.ts';
import { ITEM, SCENE_BODY, sceneOf } from '../media/renders-fixtures.ts';
import { type PrivateRedis, startPrivateRedis } from '../private-redis.ts';
import { type ReceivedRequest, removeQueueKeys, retireEndpoints, startReceiver, uniquePath, WEBHOOK_KEY_A } from '../webhooks/webhooks-fixtures.ts';

/**
 * Issue 13, scale-out and faults, over real processes against one Postgres and one Redis:
 *  - two API processes and two processes of every worker pool: each ingest tick runs once, every
 *    webhook event reaches every subscribed endpoint once, every export and render is produced once;
 *  - a render worker SIGKILLed mid-render: another worker finishes it with one stored image;
 *  - Redis restarted (without its data) while the API serves: metered endpoints answer 503
 *    usage_unavailable and recover without a restart, no Postgres record is lost, and queued work
 *    resumes (the job schedulers, and with them the sweepers, are restored on reconnect).
 * (A worker SIGKILLed mid-export and mid-delivery: test/audit/audit-exports-e2e.test.ts, test/webhooks/webhooks-e2e.test.ts.)
 */
const root = join(import.meta.dir, '..', '..');
const POOLS = ['ingest', 'index', 'render', 'exports', 'webhooks', 'maintenance'] as const;
const SOURCES = ['skinport', 'steam', 'csfloat'] as const;
const ITEMS = 30;
const INGEST_TICKS = 5;

const sql: Sql = createSql(process.env.DATABASE_URL!, { max: 3 });
const t = createTestApp();
const receiver = startReceiver();
const blobDir = mkdtempSync(join(tmpdir(), 'scale-out-blobs-'));
const queuePrefixes: string[] = [];
const privateRedis: PrivateRedis[] = [];
/** Workspaces with endpoints, retired at the end (a later suite must not deliver to this file's receiver). */
const workspaces: string[] = [];
let simulator: MarketSimulator;
let names: string[] = [];

/** `drained`: both output streams read to their end (a process may exit before its last lines are read). */
type Proc = { name: string; child: ReturnType<typeof Bun.spawn>; lines: string[]; drained: Promise<unknown> };
const processes: Proc[] = [];

function spawn(name: string, args: string[], env: Record<string, string>): Proc {
  const child = Bun.spawn([process.execPath, ...args], { cwd: root, env: { ...process.env, ...env }, stdout: 'pipe', stderr: 'pipe' });
  const lines: string[] = [];
  const readers = [child.stdout, child.stderr].map((stream) =>
    (async () => {
      const decoder = new TextDecoder();
      let buffer = '';
      for await (const chunk of stream as ReadableStream<Uint8Array>) {
        buffer += decoder.decode(chunk, { stream: true });
        const parts = buffer.split('\n');
        buffer = parts.pop()!;
        lines.push(...parts);
      }
      if (buffer) lines.push(buffer);
    })().catch(() => undefined),
  );
  const proc: Proc = { name, child, lines, drained: Promise.all(readers) };
  processes.push(proc);
  return proc;
}

const alive = (proc: Proc) => proc.child.exitCode === null && proc.child.signalCode === null;
const logged = (proc: Proc, message: string) => proc.lines.filter((line) => line.includes(`"msg":"${message}"`));

async function stop(procs: Proc[], signal: 'SIGTERM' | 'SIGKILL' = 'SIGTERM'): Promise<void> {
  for (const proc of procs) if (alive(proc)) proc.child.kill(signal);
  await Promise.all(procs.map((proc) => Promise.race([proc.child.exited, Bun.sleep(15_000).then(() => proc.child.kill('SIGKILL'))])));
  // What a process logged before it exited is counted: read its output to the end (bounded, as a
  // grandchild such as Chromium may hold a pipe open).
  await Promise.all(procs.map((proc) => Promise.race([proc.drained, Bun.sleep(5_000)])));
}

async function answers(url: string): Promise<boolean> {
  try {
    await (await fetch(url, { signal: AbortSignal.timeout(1_000) })).arrayBuffer();
    return true;
  } catch {
    return false;
  }
}

/** Every process a test spawns shares these: the simulator's sources, short leases and sweeps, a receiver on loopback. */
function baseEnv(queuePrefix: string, redisUrl: string): Record<string, string> {
  return {
    REDIS_URL: redisUrl,
    QUEUE_PREFIX: queuePrefix,
    BLOB_DIR: blobDir,
    LOG_LEVEL: 'info',
    SOURCES: SOURCES.join(','),
    // docs/design.md §14: the always-on fx source reads the simulator too (never the real ECB from a test).
    FX_URL: `${simulator.url}/fx`,
    ...Object.fromEntries(
      SOURCES.flatMap((source) => [
        [`SOURCE_${source.toUpperCase()}_URL`, `${simulator.url}/${source}`],
        [`SOURCE_${source.toUpperCase()}_INTERVAL_SECONDS`, '2'],
      ]),
    ),
    WEBHOOK_SECRET_KEY: WEBHOOK_KEY_A,
    WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
    WEBHOOK_RETRY_DELAYS_MS: '0,500,500,500',
    WEBHOOK_TIMEOUT_MS: '3000',
    EXPORT_LEASE_SECONDS: '3',
    EXPORT_SWEEP_SECONDS: '1',
    RENDER_LEASE_SECONDS: '3',
    RENDER_SWEEP_SECONDS: '1',
    RENDER_PAGES: '1',
    // docs/design.md §18: renders without real 3D files draw a card from the item's image: the test process's
    // image fake serves it (never the real CDN from a test).
    STEAM_IMAGE_URL: sharedImageFake().url,
    ITEM_ASSETS_URL: sharedImageFake().url,
  };
}

async function startApi(env: Record<string, string>): Promise<{ proc: Proc; url: string }> {
  const port = await freePort();
  const proc = spawn(`api:${port}`, ['api/main.ts'], { ...env, PORT: String(port) });
  const url = `http://127.0.0.1:${port}`;
  await eventually(async () => ((await answers(`${url}/v2/health`)) ? true : undefined), 30_000, 100);
  return { proc, url };
}

function startWorker(pool: string, env: Record<string, string>): Proc {
  return spawn(`${pool}#${processes.filter((proc) => proc.name.startsWith(`${pool}#`)).length + 1}`, ['workers/main.ts', pool], env);
}

async function booted(workers: Proc[]): Promise<void> {
  await eventually(
    async () => {
      const dead = workers.find((worker) => !alive(worker));
      if (dead) throw new Error(`${dead.name} exited:\n${dead.lines.slice(-10).join('\n')}`);
      return workers.every((worker) => logged(worker, 'pool started').length > 0) ? true : undefined;
    },
    60_000,
    100,
  );
}

async function post(url: string, key: string, body: unknown): Promise<Response> {
  return fetch(url, {
    method: 'POST',
    headers: { 'x-api-key': key, 'content-type': 'application/json', 'idempotency-key': crypto.randomUUID() },
    body: JSON.stringify(body),
  });
}

async function json<T>(response: Response, status: number): Promise<T> {
  const text = await response.text();
  if (response.status !== status) throw new Error(`expected ${status}, got ${response.status}: ${text}`);
  return JSON.parse(text) as T;
}

type ExportJob = { export_id: string; state: string; attempts: number; event_count: number | null };
type RenderJob = { render_id: string; state: string };

const exportFiles = (workspaceId: string, exportId: string) => {
  const directory = join(blobDir, 'audit-exports', workspaceId, exportId);
  return existsSync(directory) ? readdirSync(directory) : [];
};
const renderFiles = (workspaceId: string) => {
  const directory = join(blobDir, 'renders', workspaceId);
  return existsSync(directory) ? readdirSync(directory) : [];
};

async function auditCount(workspaceId: string, resourceId: string, eventType: string): Promise<number> {
  const [row] = await sql<{ count: number }[]>`
    select count(*)::int as count from audit_events where workspace_id = ${workspaceId} and resource_id = ${resourceId} and event_type = ${eventType}`;
  return row!.count;
}

beforeAll(async () => {
  // A small market of our own: the simulator prices these names, the catalog knows them.
  const tag = crypto.randomUUID().slice(0, 8);
  names = Array.from({ length: ITEMS }, (_, index) => `Sticker | Scale Out ${tag} ${index}`);
  await sql`
    insert into catalog_items (catalog_id, market_hash_name, type)
    select catalog_id, name, 'sticker' from unnest(${names.map(catalogIdFor)}::text[], ${names}::text[]) as item (catalog_id, name)`;
  simulator = startMarketSimulator({ items: names.map((name) => ({ market_hash_name: name, phases: [] })), bucketSeconds: 2 });
});

afterAll(async () => {
  await stop(processes);
  await Promise.all(privateRedis.map((redis) => redis.kill()));
  await simulator?.stop();
  await retireEndpoints(sql, workspaces);
  await receiver.stop();
  for (const prefix of queuePrefixes) await removeQueueKeys(t.deps.config.REDIS_URL, prefix).catch(() => undefined);
  rmSync(blobDir, { recursive: true, force: true });
  await sql.end({ timeout: 5 });
  await t.close();
});

describe('scale-out: two API processes and two processes of every pool on one Postgres and one Redis', () => {
  let env: Record<string, string>;
  let apis: { proc: Proc; url: string }[] = [];
  const workers: Record<string, Proc[]> = {};
  let ws: Awaited<ReturnType<typeof workspaceWithKey>>;

  beforeAll(async () => {
    const prefix = `scale${process.pid}`;
    queuePrefixes.push(prefix);
    env = baseEnv(prefix, t.deps.config.REDIS_URL);
    ws = await workspaceWithKey(t, { tier: 'pro', scopes: ['webhooks:read', 'webhooks:write', 'audit:read', 'audit:export', 'media:write'] });
    workspaces.push(ws.workspace.id);
    apis = await Promise.all([startApi(env), startApi(env)]);
  }, 60_000);

  test('each ingest tick runs once, every event reaches every subscribed endpoint once, every export and render is produced once', async () => {
    // Endpoints first (each receives events newer than itself), one through each API.
    const pricePath = uniquePath('scale-prices');
    const workspacePath = uniquePath('scale-workspace');
    const priceHook = await json<{ id: string }>(
      await post(`${apis[0]!.url}/v2/webhooks`, ws.key, { url: receiver.url(pricePath), event_types: ['price.updated', 'prices.updated'] }),
      201,
    );
    const workspaceHook = await json<{ id: string }>(
      await post(`${apis[1]!.url}/v2/webhooks`, ws.key, {
        url: receiver.url(workspacePath),
        event_types: ['prices.updated', 'audit_export.completed', 'render.completed'],
      }),
      201,
    );
    const startedAt = new Date();

    for (const pool of POOLS) workers[pool] = [startWorker(pool, env), startWorker(pool, env)];
    await booted(Object.values(workers).flat());

    // Exports and a render, requested through both APIs while ingest runs.
    const range = { from: new Date('2021-03-01T00:00:00Z'), to: new Date('2021-03-02T00:00:00Z') };
    await insertGeneratedAuditEvents(sql, { workspaceId: ws.workspace.id, ...range, count: 2_000 });
    const exports = await Promise.all(
      [0, 1, 2, 3].map(async (index) => {
        const from = new Date(range.from.getTime() + index * 3_600_000);
        const api = apis[index % 2]!;
        return json<ExportJob>(await post(`${api.url}/v2/audit/exports`, ws.key, { from: from.toISOString(), to: range.to.toISOString() }), 201);
      }),
    );
    const scene = await sceneOf(sql, ws.workspace.id, SCENE_BODY);
    const render = await json<RenderJob>(
      await post(`${apis[1]!.url}/v2/renders`, ws.key, {
        item: ITEM,
        scene_id: scene.document.scene_id,
        output: { width: 96, height: 64, format: 'png', background: 'transparent' },
      }),
      202,
    );

    // INGEST_TICKS successful runs of every source, then the ingest pool stops so the event set is final.
    await eventually(
      async () => {
        const rows = await sql<{ source: string; count: number }[]>`
        select source, count(*)::int as count from ingest_runs where started_at >= ${startedAt} and status = 'succeeded' group by source`;
        return SOURCES.every((source) => (rows.find((row) => row.source === source)?.count ?? 0) >= INGEST_TICKS) ? true : undefined;
      },
      90_000,
      200,
    );
    await stop(workers.ingest!);

    // Ingest: one run per (source, tick) and each tick's job executed by exactly one worker (price runs
    // only: skinport's sales reader records its runs in ingest_runs too, and logs `sales read done`).
    const runs = await sql<{ source: string; slot: string; status: string }[]>`
      select source, slot::text, status from ingest_runs
      where started_at >= ${startedAt} and source in ${sql([...SOURCES])} order by source, slot`;
    const claimedTwice = workers.ingest!.flatMap((worker) => logged(worker, 'run already claimed by another worker'));
    expect(claimedTwice).toEqual([]);
    const done = workers.ingest!.map((worker) => logged(worker, 'ingest run done').length);
    expect(done.reduce((sum, count) => sum + count, 0)).toBe(runs.filter((run) => run.status === 'succeeded').length);
    for (const source of SOURCES) {
      const slots = runs.filter((run) => run.source === source).map((run) => run.slot);
      expect(new Set(slots).size).toBe(slots.length);
    }

    // Exports and the render: each completed once, one file each, one completion audited.
    const finished = await eventually(
      async () => {
        const jobs = await Promise.all(
          exports.map(async (job) => json<ExportJob>(await fetch(`${apis[0]!.url}/v2/audit/exports/${job.export_id}`, { headers: ws.keyHeaders }), 200)),
        );
        return jobs.every((job) => job.state === 'completed') ? jobs : undefined;
      },
      60_000,
      200,
    );
    for (const job of finished) {
      expect(exportFiles(ws.workspace.id, job.export_id)).toEqual([expect.stringMatching(/^[0-9a-f-]{36}\.ndjson\.gz$/)]);
      expect(await auditCount(ws.workspace.id, job.export_id, 'audit_export.completed')).toBe(1);
      expect(job.attempts).toBe(1);
    }
    const rendered = await eventually(
      async () => {
        const job = await json<RenderJob>(await fetch(`${apis[0]!.url}/v2/renders/${render.render_id}`, { headers: ws.keyHeaders }), 200);
        return job.state === 'succeeded' ? job : undefined;
      },
      90_000,
      200,
    );
    expect(rendered.state).toBe('succeeded');
    expect(renderFiles(ws.workspace.id)).toEqual([`${render.render_id}.png`]);
    expect(await auditCount(ws.workspace.id, render.render_id, 'render.completed')).toBe(1);

    // Webhooks: every event since the endpoints existed, of a type each subscribes to, reached it once.
    const expectedFor = async (types: string[]) =>
      (
        await sql<{ id: string }[]>`
          select id from event_outbox
          where created_at >= ${startedAt} and event_type = any(${types}::text[]) and (workspace_id is null or workspace_id = ${ws.workspace.id})`
      ).map((row) => row.id);
    const priceEvents = await expectedFor(['price.updated', 'prices.updated']);
    const workspaceEvents = await expectedFor(['prices.updated', 'audit_export.completed', 'render.completed']);
    expect(priceEvents.length).toBeGreaterThan(0);
    const receivedIds = (path: string) => receiver.received(path).map((request: ReceivedRequest) => request.headers['webhook-id']!);
    await eventually(
      async () => {
        const got = (path: string, ids: string[]) => ids.every((id) => receivedIds(path).includes(id));
        return got(pricePath, priceEvents) && got(workspacePath, workspaceEvents) ? true : undefined;
      },
      60_000,
      200,
    );
    const duplicates = (path: string) => receivedIds(path).length - new Set(receivedIds(path)).size;
    expect(duplicates(pricePath)).toBe(0);
    expect(duplicates(workspacePath)).toBe(0);
    const deliveryRows = await sql<{ endpoint_id: string; state: string; count: number }[]>`
      select endpoint_id, state, count(*)::int as count from webhook_deliveries
      where endpoint_id in (${priceHook.id}, ${workspaceHook.id}) group by endpoint_id, state`;
    expect(deliveryRows.every((row) => row.state === 'succeeded')).toBe(true);

    process.stdout.write(
      `[scale-out] ${runs.length} ingest runs (${SOURCES.map((source) => `${source} ${runs.filter((run) => run.source === source).length}`).join(', ')}), ` +
        `${done.join(' + ')} by the two ingest workers, none claimed twice; ${priceEvents.length} events for one endpoint and ${workspaceEvents.length} for the other, ` +
        `${receiver.received(pricePath).length + receiver.received(workspacePath).length} requests received, 0 duplicates; ` +
        `${finished.length} exports and 1 render, one file and one completion each\n`,
    );
  }, 240_000);

  test('a render worker SIGKILLed mid-render: another worker finishes it, with one stored image and one completion', async () => {
    await stop(workers.render!);
    const victim = startWorker('render', env);
    await booted([victim]);
    const scene = await sceneOf(sql, ws.workspace.id, SCENE_BODY);
    const render = await json<RenderJob>(
      await post(`${apis[0]!.url}/v2/renders`, ws.key, {
        item: ITEM,
        scene_id: scene.document.scene_id,
        output: { width: 80, height: 80, format: 'png', background: 'transparent' },
      }),
      202,
    );
    // Leased by the only render worker, which is still launching Chromium for its first render.
    await eventually(
      async () => {
        const [row] = await sql<{ state: string }[]>`select state from renders where render_id = ${render.render_id}`;
        return row?.state === 'rendering' ? true : undefined;
      },
      30_000,
      5,
    );
    const descendants = childPids(victim.child.pid);
    victim.child.kill('SIGKILL');
    await victim.child.exited;
    for (const pid of descendants) killQuietly(pid);

    const rescuer = startWorker('render', env);
    await booted([rescuer]);
    await eventually(
      async () => {
        const [row] = await sql<{ state: string }[]>`select state from renders where render_id = ${render.render_id}`;
        return row?.state === 'succeeded' ? true : undefined;
      },
      60_000,
      100,
    );
    const [row] = await sql<{ attempts: number; blob_key: string }[]>`select attempts, blob_key from renders where render_id = ${render.render_id}`;
    expect(row!.attempts).toBe(2);
    expect(renderFiles(ws.workspace.id).filter((file) => file.startsWith(render.render_id))).toEqual([`${render.render_id}.png`]);
    expect(renderFiles(ws.workspace.id).some((file) => file.includes('.tmp'))).toBe(false);
    expect(await auditCount(ws.workspace.id, render.render_id, 'render.completed')).toBe(1);
  }, 120_000);
});

/** Direct children (and theirs) of a process, from /proc: Chromium outlives a SIGKILLed worker. */
function childPids(root: number): number[] {
  const parents = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      parents.set(Number(entry), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      // gone meanwhile
    }
  }
  const found: number[] = [];
  const queue = [root];
  while (queue.length > 0) {
    const parent = queue.shift()!;
    for (const [pid, ppid] of parents) {
      if (ppid === parent) {
        found.push(pid);
        queue.push(pid);
      }
    }
  }
  return found;
}

function killQuietly(pid: number): void {
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // already gone
  }
}

describe('faults: Redis restarted without its data while the API serves', () => {
  test('metered calls answer 503 usage_unavailable and recover without a restart; no Postgres record is lost; queued jobs resume', async () => {
    const redis = await startPrivateRedis();
    privateRedis.push(redis);
    const prefix = `redisfault${process.pid}`;
    const env = { ...baseEnv(prefix, redis.url), SOURCES: 'skinport' };
    const ws = await workspaceWithKey(t, { tier: 'pro', scopes: ['webhooks:write', 'audit:read', 'audit:export'] });
    workspaces.push(ws.workspace.id);
    const api = await startApi(env);
    const pools = ['ingest', 'exports', 'webhooks', 'maintenance'].map((pool) => startWorker(pool, env));
    await booted(pools);
    const me = () => fetch(`${api.url}/v2/me`, { headers: ws.keyHeaders, signal: AbortSignal.timeout(5_000) });
    expect((await me()).status).toBe(200);
    const path = uniquePath('redis-fault');
    await json(await post(`${api.url}/v2/webhooks`, ws.key, { url: receiver.url(path), event_types: ['audit_export.completed'] }), 201);

    // A long export holds the only exports worker; a second one waits behind it in Redis.
    const range = { from: new Date('2021-05-01T00:00:00Z'), to: new Date('2021-05-10T00:00:00Z') };
    await insertGeneratedAuditEvents(sql, { workspaceId: ws.workspace.id, ...range, count: 300_000 });
    const long = await json<ExportJob>(await post(`${api.url}/v2/audit/exports`, ws.key, { from: range.from.toISOString(), to: range.to.toISOString() }), 201);
    await eventually(
      async () => {
        const [row] = await sql<{ state: string }[]>`select state from audit_exports where id = ${long.export_id}`;
        return row?.state === 'leased' ? true : undefined;
      },
      30_000,
      5,
    );
    const queued = await json<ExportJob>(
      await post(`${api.url}/v2/audit/exports`, ws.key, { from: range.from.toISOString(), to: '2021-05-02T00:00:00Z' }),
      201,
    );

    // Redis dies and comes back empty (no persistence, like the default local Redis).
    await redis.kill();
    const outageStartedAt = Date.now();
    const during = await me();
    expect(during.status).toBe(503);
    expect(((await during.json()) as { error: { code: string } }).error.code).toBe('usage_unavailable');
    expect(Date.now() - outageStartedAt).toBeLessThan(3_000);
    // Public and Postgres-only paths keep working: a new account is a Postgres record.
    expect((await fetch(`${api.url}/v2/meta/scopes`)).status).toBe(200);
    const email = `redis-outage-${crypto.randomUUID()}@example.com`;
    const account = await fetch(`${api.url}/v1/accounts`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email, password: 'correct horse battery staple' }),
    });
    expect(account.status).toBe(201);

    await redis.restart();
    const restartedAt = new Date();
    // The API recovers by itself.
    await eventually(async () => ((await me()).status === 200 ? true : undefined), 30_000, 200);

    // Both exports complete exactly once: the queued one's job was lost with Redis and is re-enqueued by the sweeper.
    for (const job of [long, queued]) {
      await eventually(
        async () => {
          const [row] = await sql<{ state: string }[]>`select state from audit_exports where id = ${job.export_id}`;
          return row?.state === 'completed' ? true : undefined;
        },
        90_000,
        200,
      );
      expect(exportFiles(ws.workspace.id, job.export_id)).toEqual([expect.stringMatching(/^[0-9a-f-]{36}\.ndjson\.gz$/)]);
      expect(await auditCount(ws.workspace.id, job.export_id, 'audit_export.completed')).toBe(1);
    }
    // Their completion events reach the endpoint once Redis is back; ingest runs again on its schedule.
    await eventually(async () => (new Set(receiver.received(path).map((request) => request.headers['webhook-id'])).size >= 2 ? true : undefined), 30_000, 200);
    await eventually(
      async () => {
        const [row] = await sql<
          { count: number }[]
        >`select count(*)::int as count from ingest_runs where source = 'skinport' and started_at > ${restartedAt} and status = 'succeeded'`;
        return row!.count > 0 ? true : undefined;
      },
      30_000,
      200,
    ).catch(async (error: Error) => {
      // Seen once in a sharded run, not reproduced since: what the ingest pool did, for the next time.
      const runs = await sql<{ status: string; error: string | null; started_at: Date }[]>`
        select status, error, started_at from ingest_runs where source = 'skinport' and started_at > ${restartedAt} order by started_at`;
      throw new Error(
        `${error.message}: no skinport run succeeded after Redis came back at ${restartedAt.toISOString()}; runs since: ${JSON.stringify(runs)}; ` +
          `the ingest pool's last lines:\n${pools[0]!.lines.slice(-40).join('\n')}`,
      );
    });
    const [stored] = await sql<{ count: number }[]>`select count(*)::int as count from accounts where email = ${email}`;
    expect(stored!.count).toBe(1);
    expect(pools.every(alive)).toBe(true);
    expect(pools.some((worker) => logged(worker, 'redis reconnected: job schedulers restored').length > 0)).toBe(true);
    await stop([api.proc, ...pools]);
  }, 240_000);
});
