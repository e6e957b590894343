import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import { enqueue, type JobName } from '../../shared/jobs/queues.ts';
import type { RenderJson } from '../../shared/media/renders-model.ts';
import { createLogger } from '../../shared/platform/logger.ts';
import type { PoolContext } from '../../workers/pool.ts';
import type { RenderEngine } from '../../workers/render/engine.ts';
import { createRenderEngine, renderHandlers, renderPool } from '../../workers/render/index.ts';
import { createTestApp, eventually, type TestApp, testConfig, workspaceWithKey } from '../helpers.ts';
import { ITEM, itemFilesDir, sceneOf } from './renders-fixtures.ts';

/**
 * The `render` pool's real handlers in this process against real Postgres, Redis, Chromium and a
 * scratch BLOB_DIR / ITEM_FILES_DIR, renders created through the API: images of the requested size
 * and format with real alpha, a retried job that never stores a second image, a killed browser that
 * is replaced, and the render.completed outbox and audit rows.
 */
const blobDir = mkdtempSync(join(tmpdir(), 'renders-worker-'));
const itemDir = itemFilesDir();
const config = { BLOB_DIR: blobDir, ITEM_FILES_DIR: itemDir, PUBLIC_BASE_URL: 'https://renders.example.test', RENDER_PAGES: '2' };
const t: TestApp = createTestApp({ config });
const log = createLogger({ level: 'silent', name: 'renders-worker-test' });

let engine: RenderEngine;
let invoke: (name: JobName, payload: unknown) => Promise<Record<string, unknown>>;

beforeAll(async () => {
  const workerConfig = testConfig(config);
  const queue = t.deps.queues.render;
  const context: PoolContext = {
    config: workerConfig,
    sql: t.deps.sql,
    redis: t.deps.redis,
    log,
    now: () => new Date(),
    queue,
    enqueue: (name, payload, options) => enqueue(queue, name, payload, options),
  };
  engine = createRenderEngine(context);
  const handlers = new Map(renderHandlers(context, engine));
  invoke = (name, payload) =>
    handlers.get(name)!(payload as never, { jobId: undefined, attempt: 1, scheduledAt: new Date() }) as Promise<Record<string, unknown>>;
  await engine.warm();
}, 60_000);

afterAll(async () => {
  await engine?.close();
  await t.close();
  rmSync(blobDir, { recursive: true, force: true });
  rmSync(itemDir, { recursive: true, force: true });
});

let idempotency = 0;
async function requestRender(key: string, sceneId: string, output: Record<string, unknown>, item: unknown = ITEM): Promise<RenderJson> {
  const response = await t.request('/v2/renders', {
    method: 'POST',
    headers: { 'x-api-key': key, 'idempotency-key': `worker-${Date.now()}-${(idempotency += 1)}` },
    json: { item, scene_id: sceneId, output },
  });
  expect(response.status).toBe(202);
  return (await response.json()) as RenderJson;
}

async function readRender(key: string, renderId: string): Promise<RenderJson> {
  return (await (await t.request(`/v2/renders/${renderId}`, { headers: { 'x-api-key': key } })).json()) as RenderJson;
}

/** The stored image through its signed URL (the app answers it in process). */
async function fetchImage(render: RenderJson): Promise<{ response: Response; bytes: Buffer }> {
  const url = new URL(render.image!.url);
  const response = await t.request(`${url.pathname}${url.search}`);
  return { response, bytes: Buffer.from(await response.arrayBuffer()) };
}

describe('render pool', () => {
  test('renders a PNG of exactly the requested size with a real alpha channel when transparent', async () => {
    const { workspace, key } = await workspaceWithKey(t);
    const scene = await sceneOf(t.deps.sql, workspace.id);
    const render = await requestRender(key, scene.document.scene_id, { width: 512, height: 384, format: 'png', background: 'transparent' });
    expect(await invoke('renders.render', { render_id: render.render_id })).toMatchObject({ state: 'succeeded' });

    const done = await readRender(key, render.render_id);
    expect(done.state).toBe('succeeded');
    expect(done.image).toMatchObject({ width: 512, height: 384, format: 'png' });
    const { response, bytes } = await fetchImage(done);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('image/png');
    expect(bytes.length).toBe(done.image!.bytes);
    expect(new Bun.CryptoHasher('sha256').update(bytes).digest('hex')).toBe(done.image!.sha256);
    const metadata = await sharp(bytes).metadata();
    expect(metadata).toMatchObject({ format: 'png', width: 512, height: 384, channels: 4, hasAlpha: true, space: 'srgb' });
    const { data, info } = await sharp(bytes).raw().toBuffer({ resolveWithObject: true });
    // The corner is background: fully transparent. The centre is the item: opaque.
    expect(data[3]).toBe(0);
    const centre = ((info.height >> 1) * info.width + (info.width >> 1)) * 4;
    expect(data[centre + 3]).toBeGreaterThan(200);
  }, 60_000);

  test('renders WebP, opaque on a colour background', async () => {
    const { workspace, key } = await workspaceWithKey(t);
    const scene = await sceneOf(t.deps.sql, workspace.id);
    const render = await requestRender(key, scene.document.scene_id, { width: 200, height: 120, format: 'webp', background: '#FF0000' });
    await invoke('renders.render', { render_id: render.render_id });
    const done = await readRender(key, render.render_id);
    expect(done.image).toMatchObject({ width: 200, height: 120, format: 'webp' });
    const { response, bytes } = await fetchImage(done);
    expect(response.headers.get('content-type')).toBe('image/webp');
    const metadata = await sharp(bytes).metadata();
    expect(metadata).toMatchObject({ format: 'webp', width: 200, height: 120, hasAlpha: false });
    const { data } = await sharp(bytes).raw().toBuffer({ resolveWithObject: true });
    expect(data[0]).toBeGreaterThan(230); // the corner is the requested red
    expect(data[1]).toBeLessThan(25);
  }, 60_000);

  test('a retried job never stores a second image, and render.completed is in the outbox and the audit log', async () => {
    const { workspace, key } = await workspaceWithKey(t);
    const scene = await sceneOf(t.deps.sql, workspace.id);
    const render = await requestRender(key, scene.document.scene_id, { width: 96, height: 96, format: 'png', background: 'transparent' });
    // An attempt whose worker died after writing the image but before committing: its lease runs out.
    await invoke('renders.render', { render_id: render.render_id });
    await t.deps
      .sql`update renders set state = 'rendering', lease_token = gen_random_uuid(), lease_until = now() - interval '1 second', blob_key = null where render_id = ${render.render_id}`;
    expect(await invoke('renders.sweep', {})).toMatchObject({ leases_requeued: 1 });
    expect(await invoke('renders.render', { render_id: render.render_id })).toMatchObject({ state: 'succeeded' });
    // The job delivered again after success finds nothing to do.
    expect(await invoke('renders.render', { render_id: render.render_id })).toMatchObject({ leased: false });
    expect(readdirSync(join(blobDir, 'renders', workspace.id))).toEqual([`${render.render_id}.png`]);

    const [row] = await t.deps.sql<{ attempts: number }[]>`select attempts from renders where render_id = ${render.render_id}`;
    expect(row!.attempts).toBe(2);
    const outbox = await t.deps.sql<{ event_type: string; payload: Record<string, unknown> }[]>`
      select event_type, payload from event_outbox where workspace_id = ${workspace.id} and event_type like 'render.%'`;
    // One completion recorded per commit: the sweep returned the row to queued before the second.
    expect(outbox.map((event) => event.event_type)).toEqual(['render.completed', 'render.completed']);
    expect(outbox[1]!.payload).toMatchObject({ render_id: render.render_id, state: 'succeeded', image: { width: 96, height: 96, format: 'png' } });
    expect(JSON.stringify(outbox[1]!.payload)).not.toContain('signature=');
    const audit = await t.deps.sql<{ event_type: string; outcome: string }[]>`
      select event_type, outcome from audit_events where workspace_id = ${workspace.id} and resource_id = ${render.render_id} order by occurred_at, event_type`;
    expect(audit[0]).toEqual({ event_type: 'render.requested', outcome: 'accepted' });
    expect(audit.slice(1).every((event) => event.event_type === 'render.completed' && event.outcome === 'succeeded')).toBe(true);
  }, 60_000);

  test('a killed browser is replaced and the render retried on the new one', async () => {
    const { workspace, key } = await workspaceWithKey(t);
    const scene = await sceneOf(t.deps.sql, workspace.id);
    const render = await requestRender(key, scene.document.scene_id, { width: 128, height: 128, format: 'png', background: 'transparent' });
    const launches = engine.launches;
    const pid = await engine.browserPid();
    const running = invoke('renders.render', { render_id: render.render_id });
    process.kill(pid!, 'SIGKILL');
    expect(await running).toMatchObject({ state: 'succeeded' });
    expect(engine.launches).toBe(launches + 1);
    expect(await engine.browserPid()).not.toBe(pid);
    expect((await readRender(key, render.render_id)).state).toBe('succeeded');
  }, 60_000);

  test('a definition without a model fails the render at once with render.failed', async () => {
    const { workspace, key } = await workspaceWithKey(t);
    const scene = await sceneOf(t.deps.sql, workspace.id);
    const render = await requestRender(key, scene.document.scene_id, { width: 64, height: 64, format: 'png', background: 'transparent' });
    // The model disappears between the request and the render (files replaced by an operator).
    await t.deps.sql`update renders set item = jsonb_set(item, '{item,definition_index}', '1') where render_id = ${render.render_id}`;
    expect(await invoke('renders.render', { render_id: render.render_id })).toMatchObject({ state: 'failed' });
    const failed = await readRender(key, render.render_id);
    expect(failed).toMatchObject({ state: 'failed', error: { code: 'renderer_item_not_found' } });
    expect(failed.image).toBeUndefined();
    const outbox = await eventually(async () => {
      const rows = await t.deps.sql`select 1 from event_outbox where workspace_id = ${workspace.id} and event_type = 'render.failed'`;
      return rows.length === 1 ? rows : undefined;
    });
    expect(outbox.length).toBe(1);
    expect(existsSync(join(blobDir, 'renders', workspace.id))).toBe(false);
  }, 60_000);
});

test('a render process takes more jobs at once than it has pages, so every page can be busy while a sweep runs (RENDER_PAGES 1 to 16)', () => {
  const concurrency = renderPool.concurrency as (config: ReturnType<typeof testConfig>) => number;
  for (const pages of [1, 4, 8, 16]) {
    const inFlight = concurrency(testConfig({ RENDER_PAGES: String(pages) }));
    expect({ pages, enough: inFlight > pages }).toEqual({ pages, enough: true });
  }
  expect(concurrency(testConfig({ RENDER_PAGES: '16' }))).toBe(32);
});
