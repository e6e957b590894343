import { afterAll, describe, expect, test } from 'bun:test';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { signImageUrl } from '../../shared/media/renders-download.ts';
import type { RenderJson } from '../../shared/media/renders-model.ts';
import { createTestApp, errorOf, type TestApp, testClock, workspaceWithKey } from '../helpers.ts';
import { ITEM, itemFilesDir, sceneOf } from './renders-fixtures.ts';

/**
 * POST /v2/renders and GET /v2/renders/{id} through the API (docs/design.md §10) against real Postgres and
 * Redis: every status code, the identical-request rule, idempotency, availability, the signed image
 * URL and workspace isolation. test/media/renders-worker.test.ts draws the images.
 */
const itemDir = itemFilesDir();
const blobDir = mkdtempSync(join(tmpdir(), 'renders-api-'));
const clock = testClock();
const config = { ITEM_FILES_DIR: itemDir, BLOB_DIR: blobDir, PUBLIC_BASE_URL: 'https://renders.example.test' };
const t: TestApp = createTestApp({ config, now: clock.now });
const noChromium = createTestApp({ config: { ...config, CHROMIUM_PATH: '/nonexistent/chromium' } });
const emptyDir = mkdtempSync(join(tmpdir(), 'renders-no-items-'));
const noItemFiles = createTestApp({ config: { ...config, ITEM_FILES_DIR: emptyDir } });
afterAll(async () => {
  await Promise.all([t.close(), noChromium.close(), noItemFiles.close()]);
  for (const dir of [itemDir, blobDir, emptyDir]) rmSync(dir, { recursive: true, force: true });
});

const OUTPUT = { width: 512, height: 384, format: 'png', background: 'transparent' };
let counter = 0;
const idem = () => `renders-${Date.now()}-${(counter += 1)}`;

async function post(app: TestApp, key: string, body: Record<string, unknown>, idempotencyKey: string | null = idem()) {
  const headers: Record<string, string> = { 'x-api-key': key };
  if (idempotencyKey) headers['idempotency-key'] = idempotencyKey;
  return app.request('/v2/renders', { method: 'POST', headers, json: body });
}

async function setup(app: TestApp = t) {
  // pro: a render costs 20 units, and free's 120 a minute would run out within one test.
  const owner = await workspaceWithKey(app, { tier: 'pro' });
  const scene = await sceneOf(app.deps.sql, owner.workspace.id);
  return { ...owner, scene, body: { item: ITEM, scene_id: scene.document.scene_id, output: OUTPUT } };
}

describe('POST /v2/renders', () => {
  test('202 with the receipt naming the exact scene revision and ETag, render.requested audited, a job enqueued', async () => {
    const { key, scene, body, workspace } = await setup();
    const response = await post(t, key, body);
    expect(response.status).toBe(202);
    const render = (await response.json()) as RenderJson;
    // The fixture's model is a real glTF (not a generated stand-in): drawn in 3D.
    expect(render).toMatchObject({
      state: 'queued',
      item: ITEM,
      output: OUTPUT,
      mode: '3d',
      scene: { scene_id: scene.document.scene_id, revision: 1, etag: scene.etag },
    });
    expect(render.image).toBeUndefined();
    const [audit] = await t.deps
      .sql`select outcome from audit_events where workspace_id = ${workspace.id} and event_type = 'render.requested' and resource_id = ${render.render_id}`;
    expect(audit).toEqual({ outcome: 'accepted' });
    expect(await t.deps.queues.render.getJobState(`render-${render.render_id}-0`)).not.toBe('unknown');
  });

  test('the same item, scene revision and output answers 200 with the existing render, whatever the key order', async () => {
    const { key, body } = await setup();
    const first = (await (await post(t, key, body)).json()) as RenderJson;
    const reordered = {
      output: { background: 'transparent', format: 'png', height: 384, width: 512 },
      scene_id: body.scene_id,
      scene_revision: 1,
      item: { state: { wear: 0.15, paint_seed: 321, paint_index: 44 }, item: ITEM.item, rarity: 6 },
    };
    const again = await post(t, key, reordered);
    expect(again.status).toBe(200);
    expect(((await again.json()) as RenderJson).render_id).toBe(first.render_id);
    // A different output is a different render.
    const other = await post(t, key, { ...body, output: { ...OUTPUT, format: 'webp' } });
    expect(other.status).toBe(202);
  });

  test('a failed render does not block a new identical request', async () => {
    const { key, body } = await setup();
    const first = (await (await post(t, key, body)).json()) as RenderJson;
    await t.deps.sql`update renders set state = 'failed', error_code = 'render_failed', error_message = 'x' where render_id = ${first.render_id}`;
    const again = await post(t, key, body);
    expect(again.status).toBe(202);
    expect(((await again.json()) as RenderJson).render_id).not.toBe(first.render_id);
  });

  test('idempotency: the same key and body replays with 200, another body is 409, no key is 400', async () => {
    const { key, body } = await setup();
    const idempotencyKey = idem();
    const first = await post(t, key, body, idempotencyKey);
    expect(first.status).toBe(202);
    const replay = await post(t, key, body, idempotencyKey);
    expect(replay.status).toBe(200);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(await replay.json()).toEqual(await first.json());
    const reused = await post(t, key, { ...body, output: { ...OUTPUT, width: 256 } }, idempotencyKey);
    expect(reused.status).toBe(409);
    expect((await errorOf(reused)).code).toBe('idempotency_key_reused');
    expect((await errorOf(await post(t, key, body, null))).code).toBe('idempotency_key_required');
  });

  test('400 invalid_item and invalid_output name the field', async () => {
    const { key, body } = await setup();
    const unknownDefinition = await post(t, key, { ...body, item: { item: { family: 'weapon', definition_index: 99999 }, state: {} } });
    expect(unknownDefinition.status).toBe(400);
    expect((await errorOf(unknownDefinition)).code).toBe('invalid_item');
    const badPaint = await post(t, key, { ...body, item: { ...ITEM, state: { paint_index: 999999 } } });
    expect((await errorOf(badPaint)).code).toBe('invalid_item');
    for (const output of [
      { ...OUTPUT, width: 63 },
      { ...OUTPUT, height: 2049 },
      { ...OUTPUT, format: 'jpeg' },
      { ...OUTPUT, background: 'red' },
      { ...OUTPUT, extra: 1 },
      null,
    ]) {
      const response = await post(t, key, { ...body, output });
      expect(response.status).toBe(400);
      const error = await errorOf(response);
      expect(error.code).toBe('invalid_output');
      if (output) expect(error.details?.[0]?.field).toStartWith('body.output');
    }
  });

  test('401 without a key, 403 without media:write', async () => {
    const { body } = await setup();
    const anonymous = await t.request('/v2/renders', { method: 'POST', headers: { 'idempotency-key': idem() }, json: body });
    expect(anonymous.status).toBe(401);
    const reader = await workspaceWithKey(t, { scopes: ['media:read'] });
    const scene = await sceneOf(t.deps.sql, reader.workspace.id);
    const forbidden = await post(t, reader.key, { ...body, scene_id: scene.document.scene_id });
    expect(forbidden.status).toBe(403);
  });

  test('404 scene_not_found (also another workspace’s scene), revision_not_found; a definition without a model is a card', async () => {
    const { key, body } = await setup();
    const other = await setup();
    expect((await errorOf(await post(t, key, { ...body, scene_id: crypto.randomUUID() }))).code).toBe('scene_not_found');
    const foreign = await post(t, key, { ...body, scene_id: other.scene.document.scene_id });
    expect(foreign.status).toBe(404);
    expect((await errorOf(foreign)).code).toBe('scene_not_found');
    const revision = await post(t, key, { ...body, scene_revision: 7 });
    expect(revision.status).toBe(404);
    expect((await errorOf(revision)).code).toBe('revision_not_found');
    // docs/design.md §18: the M4A4 (definition 16) is a real item without a model in this ITEM_FILES_DIR: an item card.
    const noModel = await post(t, key, { ...body, item: { item: { family: 'weapon', definition_index: 16 }, state: {} } });
    expect(noModel.status).toBe(202);
    expect(((await noModel.json()) as RenderJson).mode).toBe('card');
  });

  test('503 renderer_unavailable without Chromium; without item files every render is a card', async () => {
    const a = await setup(noChromium);
    const response = await post(noChromium, a.key, a.body);
    expect(response.status).toBe(503);
    expect((await errorOf(response)).code).toBe('renderer_unavailable');
    const b = await setup(noItemFiles);
    const card = await post(noItemFiles, b.key, b.body);
    expect(card.status).toBe(202);
    expect(((await card.json()) as RenderJson).mode).toBe('card');
  });
});

describe('GET /v2/renders/{render_id}', () => {
  /** A render made to look finished, with a file in the blob store (the worker suite renders real ones). */
  async function succeeded() {
    const owner = await setup();
    const render = (await (await post(t, owner.key, owner.body)).json()) as RenderJson;
    const key = `renders/${owner.workspace.id}/${render.render_id}.png`;
    mkdirSync(join(blobDir, 'renders', owner.workspace.id), { recursive: true });
    writeFileSync(join(blobDir, key), 'png bytes');
    await t.deps
      .sql`update renders set state = 'succeeded', blob_key = ${key}, bytes = 9, sha256 = 'abc', completed_at = now() where render_id = ${render.render_id}`;
    return { ...owner, render };
  }

  test('queued, then succeeded with a new 5-minute signed URL on each read that works without a key', async () => {
    const { key, render } = await succeeded();
    const first = (await (await t.request(`/v2/renders/${render.render_id}`, { headers: { 'x-api-key': key } })).json()) as RenderJson;
    expect(first).toMatchObject({ state: 'succeeded', image: { width: 512, height: 384, format: 'png', bytes: 9, sha256: 'abc' } });
    expect(first.image!.url).toStartWith(`https://renders.example.test/v2/renders/${render.render_id}/image?`);
    expect(Date.parse(first.image!.expires_at) - clock.now().getTime()).toBeLessThanOrEqual(300_000);
    clock.advance(1_500);
    const second = (await (await t.request(`/v2/renders/${render.render_id}`, { headers: { 'x-api-key': key } })).json()) as RenderJson;
    expect(second.image!.url).not.toBe(first.image!.url);
    const url = new URL(second.image!.url);
    const image = await t.request(`${url.pathname}${url.search}`);
    expect(image.status).toBe(200);
    expect(image.headers.get('content-type')).toBe('image/png');
    expect(await image.text()).toBe('png bytes');
  });

  test('a tampered or expired image URL is 403', async () => {
    const { render } = await succeeded();
    const signed = new URL(signImageUrl('https://x.test', t.deps.config.SIGNING_KEY!, render.render_id, clock.now()).url);
    const tampered = new URLSearchParams(signed.search);
    tampered.set('expires', String(Number(tampered.get('expires')) + 60));
    const edited = await t.request(`${signed.pathname}?${tampered}`);
    expect(edited.status).toBe(403);
    expect((await errorOf(edited)).code).toBe('invalid_download_url');
    const otherRender = await t.request(`/v2/renders/${crypto.randomUUID()}/image${signed.search}`);
    expect(otherRender.status).toBe(403);
    const old = new URL(signImageUrl('https://x.test', t.deps.config.SIGNING_KEY!, render.render_id, new Date(clock.now().getTime() - 600_000)).url);
    const expired = await t.request(`${old.pathname}${old.search}`);
    expect(expired.status).toBe(403);
    expect((await errorOf(expired)).code).toBe('download_url_expired');
  });

  test('failed renders carry their error; another workspace’s render is 404; media:read suffices', async () => {
    const owner = await setup();
    const render = (await (await post(t, owner.key, owner.body)).json()) as RenderJson;
    await t.deps
      .sql`update renders set state = 'failed', error_code = 'render_failed', error_message = 'The item could not be drawn.' where render_id = ${render.render_id}`;
    const failed = (await (await t.request(`/v2/renders/${render.render_id}`, { headers: { 'x-api-key': owner.key } })).json()) as RenderJson;
    expect(failed).toMatchObject({ state: 'failed', error: { code: 'render_failed', message: 'The item could not be drawn.' } });
    const stranger = await workspaceWithKey(t, { scopes: ['media:read'] });
    const foreign = await t.request(`/v2/renders/${render.render_id}`, { headers: { 'x-api-key': stranger.key } });
    expect(foreign.status).toBe(404);
    const missing = await t.request(`/v2/renders/${crypto.randomUUID()}`, { headers: { 'x-api-key': stranger.key } });
    expect(missing.status).toBe(404);
    expect((await t.request(`/v2/renders/not-a-uuid`, { headers: { 'x-api-key': stranger.key } })).status).toBe(400);
  });
});
