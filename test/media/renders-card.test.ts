import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser } from 'puppeteer-core';
import sharp from 'sharp';
import { generateCatalog } from '../../shared/catalog/generate.ts';
import { syncCatalog } from '../../shared/catalog/repository.ts';
import { enqueue, type JobName } from '../../shared/jobs/queues.ts';
import { generateItemFiles } from '../../shared/media/generate-item-files.ts';
import { itemImages, stickerImageUrl } from '../../shared/media/images/item-images.ts';
import { buildItemCard } from '../../shared/media/item-card.ts';
import type { RenderJson } from '../../shared/media/renders-model.ts';
import { cardLayout, type Rect } from '../../shared/media/viewer/card.ts';
import type { ItemCard } from '../../shared/media/viewer/contract.ts';
import { createLogger } from '../../shared/platform/logger.ts';
import type { PoolContext } from '../../workers/pool.ts';
import type { RenderEngine } from '../../workers/render/engine.ts';
import { createRenderEngine, renderHandlers } from '../../workers/render/index.ts';
import { serveInChromium } from '../browser.ts';
import { expectedColourOf, type Rgb, startImageFake } from '../fakes/images/server.ts';
import { createTestApp, type TestApp, testConfig, workspaceWithKey } from '../helpers.ts';
import { cubeGlb, SCENE_BODY, sceneOf } from './renders-fixtures.ts';

/**
 * docs/design.md §18 item cards: renders and viewer sessions of a definition whose model is a generated
 * stand-in draw the item card, with images from the local image fake through the image cache. The
 * PNGs are checked by pixels: the item image's colours where it is drawn, a sticker's at its slot, the
 * background elsewhere. Real Postgres, Redis and Chromium; the render pool's real handlers in process.
 */
const AK47 = 7;
const REDLINE = 282;
const fake = startImageFake();
const blobDir = mkdtempSync(join(tmpdir(), 'renders-card-'));
const itemDir = mkdtempSync(join(tmpdir(), 'renders-card-items-'));
const config = {
  BLOB_DIR: blobDir,
  ITEM_FILES_DIR: itemDir,
  PUBLIC_BASE_URL: 'https://renders.example.test',
  RENDER_PAGES: '1',
  STEAM_IMAGE_URL: fake.url,
  ITEM_ASSETS_URL: fake.url,
};
const t: TestApp = createTestApp({ config });
const workerConfig = testConfig(config);
const log = createLogger({ level: 'silent', name: 'renders-card-test' });

let engine: RenderEngine;
let invoke: (name: JobName, payload: unknown) => Promise<Record<string, unknown>>;
let browser: Browser | undefined;
let origin = '';
let stopBrowser: (() => Promise<void>) | undefined;

const STICKERS = [
  { slot: 0, sticker_id: 4 },
  { slot: 2, sticker_id: 76 },
];
const REDLINE_ITEM = {
  item: { family: 'weapon', definition_index: AK47 },
  state: { paint_index: REDLINE, paint_seed: 661, wear: 0.2153, stattrak: { value: 1337 }, name_tag: 'Showcase', stickers: STICKERS },
};
const BACKGROUND: Rgb = [0x20, 0x30, 0x40];

beforeAll(async () => {
  // Stand-ins only: the AK-47's model is generated, so it is drawn as a card. The AWP's is "real".
  await generateItemFiles(itemDir, { ids: { model: [AK47], paint: [], sticker: [], charm: [] } });
  writeFileSync(join(itemDir, 'models', '9.glb'), cubeGlb());
  // Always the whole catalog: the database is shared with the other suites of a run, and some leave a
  // smaller catalog of their own behind.
  await syncCatalog(t.deps.sql, generateCatalog());
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
}, 120_000);

afterAll(async () => {
  await engine?.close();
  await stopBrowser?.();
  await t.close();
  await fake.stop();
  rmSync(blobDir, { recursive: true, force: true });
  rmSync(itemDir, { recursive: true, force: true });
});

let idempotency = 0;
async function requestRender(key: string, sceneId: string, output: Record<string, unknown>, item: unknown = REDLINE_ITEM): Promise<RenderJson> {
  const response = await t.request('/v2/renders', {
    method: 'POST',
    headers: { 'x-api-key': key, 'idempotency-key': `card-${Date.now()}-${(idempotency += 1)}` },
    json: { item, scene_id: sceneId, output },
  });
  expect(response.status).toBe(202);
  return (await response.json()) as RenderJson;
}

async function readRender(key: string, renderId: string): Promise<RenderJson> {
  return (await (await t.request(`/v2/renders/${renderId}`, { headers: { 'x-api-key': key } })).json()) as RenderJson;
}

async function renderedPixels(render: RenderJson): Promise<{ bytes: Buffer; data: Buffer; width: number; channels: number }> {
  const url = new URL(render.image!.url);
  const bytes = Buffer.from(await (await t.request(`${url.pathname}${url.search}`)).arrayBuffer());
  const { data, info } = await sharp(bytes).raw().toBuffer({ resolveWithObject: true });
  return { bytes, data, width: info.width, channels: info.channels };
}

function pixelAt(image: { data: Buffer; width: number; channels: number }, x: number, y: number): Rgb {
  const at = (Math.round(y) * image.width + Math.round(x)) * image.channels;
  return [image.data[at]!, image.data[at + 1]!, image.data[at + 2]!];
}

const near = (actual: Rgb, expected: Rgb, tolerance = 18) =>
  Math.abs(actual[0] - expected[0]) + Math.abs(actual[1] - expected[1]) + Math.abs(actual[2] - expected[2]) <= tolerance;

/** The item image's colours: the body fills the top two thirds of its visible part, the band the rest (test/fakes/images). */
function expectItemImage(image: { data: Buffer; width: number; channels: number }, area: Rect, upstream: string) {
  const colours = expectedColourOf(upstream);
  const cx = area.x + area.width / 2;
  const body = pixelAt(image, cx, area.y + area.height * 0.3);
  const band = pixelAt(image, cx, area.y + area.height * 0.88);
  // Each pixel next to its verdict, so a failure shows the colour found.
  expect({ body, bodyIsPrimary: near(body, colours.primary), band, bandIsSecondary: near(band, colours.secondary) }).toEqual({
    body,
    bodyIsPrimary: true,
    band,
    bandIsSecondary: true,
  });
}

async function itemImageUrl(wear: number): Promise<string> {
  const card = await cardOf(REDLINE_ITEM);
  const catalogId = new URL(card.image!, 'http://x').pathname.split('/').pop()!;
  const [image] = await itemImages(t.deps.sql, workerConfig, [{ catalog_id: catalogId, version: null, wear }]);
  return image!.url;
}

const cardOf = (item: typeof REDLINE_ITEM): Promise<ItemCard> => buildItemCard({ sql: t.deps.sql, config: workerConfig }, item, { imageSize: 512 });

describe('item cards (docs/design.md §18)', () => {
  test('an AK-47 | Redline with two stickers, a name tag and StatTrak renders as a card: its image, its stickers at their slots, the background elsewhere', async () => {
    const { workspace, key } = await workspaceWithKey(t, { tier: 'pro' });
    const scene = await sceneOf(t.deps.sql, workspace.id, { ...SCENE_BODY, chrome: { ...SCENE_BODY.chrome, watermark: 'cs2 showcase' } });
    const render = await requestRender(key, scene.document.scene_id, { width: 512, height: 384, format: 'png', background: '#203040' });
    expect(render.mode).toBe('card');
    const started = performance.now();
    expect(await invoke('renders.render', { render_id: render.render_id })).toMatchObject({ state: 'succeeded' });
    const done = await readRender(key, render.render_id);
    expect(done).toMatchObject({ state: 'succeeded', mode: 'card', image: { width: 512, height: 384, format: 'png' } });
    const image = await renderedPixels(done);
    writeFileSync(join(tmpdir(), 'card-render.png'), image.bytes);
    console.info(`card drawn in ${Math.round(performance.now() - started)} ms; ${join(tmpdir(), 'card-render.png')}`);

    const card = await cardOf(REDLINE_ITEM);
    expect(card).toMatchObject({
      name: 'AK-47 | Redline',
      exterior: 'Field-Tested',
      stattrak: 1337,
      name_tag: 'Showcase',
      rarity: { name: 'Classified', colour: '#d32ce6' },
    });
    const layout = cardLayout(card, 512, 384);
    expectItemImage(image, layout.imageArea, await itemImageUrl(0.2153));
    // Each sticker's colours at its slot (the body of the fake's picture is above the middle).
    STICKERS.forEach((sticker, index) => {
      const rect = layout.stickers[index]!;
      const colour = expectedColourOf(stickerImageUrl(workerConfig, sticker.sticker_id)!).primary;
      const found = pixelAt(image, rect.x + rect.width / 2, rect.y + rect.height / 2 - 3);
      expect({ sticker: sticker.sticker_id, found, near: near(found, colour) }).toEqual({ sticker: sticker.sticker_id, found, near: true });
    });
    // Slot 2 is right of slot 0.
    expect(layout.stickers[1]!.x).toBeGreaterThan(layout.stickers[0]!.x + layout.stickers[0]!.width);
    // The background: the corners and the margin beside the item.
    for (const [x, y] of [
      [1, 1],
      [510, 1],
      [1, 382],
      [510, 382],
      [6, layout.imageArea.y + layout.imageArea.height / 2],
    ] as const) {
      expect({ x, y, colour: pixelAt(image, x, y) }).toEqual({ x, y, colour: BACKGROUND });
    }
    // The rarity colour: the panel's accent stripe.
    expect(near(pixelAt(image, layout.panel.x + 2, layout.panel.y + layout.panel.height / 2), [0xd3, 0x2c, 0xe6], 24)).toBe(true);
    // Text was drawn in the panel (name, exterior, counter, float): many light pixels there.
    let light = 0;
    for (let y = Math.round(layout.panel.y); y < layout.panel.y + layout.panel.height; y += 1) {
      for (let x = Math.round(layout.panel.x); x < layout.panel.x + layout.panel.width; x += 1)
        if (pixelAt(image, x, y).every((value) => value > 200)) light += 1;
    }
    expect(light).toBeGreaterThan(400);
  }, 60_000);

  test('a transparent output keeps alpha outside the card; a real model is drawn in 3D; GET /v2/status says card, real and stand-in counts', async () => {
    const { workspace, key } = await workspaceWithKey(t, { tier: 'pro' });
    const scene = await sceneOf(t.deps.sql, workspace.id);
    const render = await requestRender(
      key,
      scene.document.scene_id,
      { width: 256, height: 192, format: 'png', background: 'transparent' },
      { ...REDLINE_ITEM, state: { ...REDLINE_ITEM.state, stickers: [] } },
    );
    expect(await invoke('renders.render', { render_id: render.render_id })).toMatchObject({ state: 'succeeded' });
    const image = await renderedPixels(await readRender(key, render.render_id));
    expect(image.channels).toBe(4);
    expect(image.data[3]).toBe(0); // the corner
    const awp = await requestRender(
      key,
      scene.document.scene_id,
      { width: 128, height: 128, format: 'png', background: 'transparent' },
      { item: { family: 'weapon', definition_index: 9 }, state: {} },
    );
    expect(awp.mode).toBe('3d');

    const status = (await (await t.request('/v2/status')).json()) as { components: { media: { renders: unknown } } };
    expect(status.components.media.renders).toEqual({ mode: 'mixed', real_models: 1, stand_in_models: 1 });
    rmSync(join(itemDir, 'models', '9.glb'));
    const cards = (await (await t.request('/v2/status')).json()) as { components: { media: { renders: unknown } } };
    expect(cards.components.media.renders).toEqual({ mode: 'card', real_models: 0, stand_in_models: 1 });
  }, 60_000);

  test('an item whose image is unreachable fails with item_image_unavailable after its attempts, promptly, and the pool keeps drawing', async () => {
    const { workspace, key } = await workspaceWithKey(t, { tier: 'pro' });
    const scene = await sceneOf(t.deps.sql, workspace.id);
    // Another wear (a heavy variant of cs2-lib's image) so the fault touches no other test's image.
    const worn = { ...REDLINE_ITEM, state: { ...REDLINE_ITEM.state, wear: 0.69, stickers: [] } };
    const upstream = await itemImageUrl(0.69);
    fake.fault(upstream, 'error');
    try {
      const render = await requestRender(key, scene.document.scene_id, { width: 200, height: 150, format: 'png', background: 'transparent' }, worn);
      const started = performance.now();
      let outcome: Record<string, unknown> = {};
      for (let attempt = 0; attempt < workerConfig.RENDER_MAX_ATTEMPTS; attempt += 1) outcome = await invoke('renders.render', { render_id: render.render_id });
      expect(outcome).toMatchObject({ state: 'failed' });
      expect(performance.now() - started).toBeLessThan(20_000);
      expect(await readRender(key, render.render_id)).toMatchObject({ state: 'failed', mode: 'card', error: { code: 'item_image_unavailable' } });
    } finally {
      fake.fault(upstream, null);
    }
    const next = await requestRender(
      key,
      scene.document.scene_id,
      { width: 200, height: 150, format: 'png', background: '#203040' },
      { ...REDLINE_ITEM, state: { ...REDLINE_ITEM.state, stickers: [] } },
    );
    expect(await invoke('renders.render', { render_id: next.render_id })).toMatchObject({ state: 'succeeded' });
  }, 60_000);

  test('a viewer session of a definition without a real model shows the card, everything from the API origin, viewerReady once drawn', async () => {
    ({ origin, browser, close: stopBrowser } = await serveInChromium(t, 'card-viewer'));
    const owner = await workspaceWithKey(t, { scopes: ['media:write'] });
    const scene = await sceneOf(t.deps.sql, owner.workspace.id, {
      ...SCENE_BODY,
      presentation: { ...SCENE_BODY.presentation, background: { type: 'gradient', value: '#1f2630,#0b0e12' } },
      chrome: { showControls: true, allowFullscreen: true, watermark: 'cs2 showcase' },
    });
    const charmed = { ...REDLINE_ITEM, state: { ...REDLINE_ITEM.state, charms: [{ slot: 0, charm_id: 1 }] } };
    const response = await t.request('/v2/viewer/sessions', {
      method: 'POST',
      headers: owner.keyHeaders,
      json: { item: charmed, scene_id: scene.document.scene_id },
    });
    expect(response.status).toBe(201);
    const receipt = (await response.json()) as { url: string; mode: string };
    expect(receipt.mode).toBe('card');

    const page = await browser!.newPage();
    try {
      const consoleErrors: string[] = [];
      const offOrigin: string[] = [];
      page.on('console', (message) => {
        if (message.type() === 'error') consoleErrors.push(message.text());
      });
      page.on('request', (request) => {
        if (!request.url().startsWith(origin) && !request.url().startsWith('data:')) offOrigin.push(request.url());
      });
      await page.setViewport({ width: 1024, height: 768 });
      const started = performance.now();
      await page.goto(`${origin}${new URL(receipt.url).pathname}`, { waitUntil: 'load' });
      await page.waitForFunction(
        () => (globalThis as { viewerReady?: boolean }).viewerReady === true || (globalThis as { viewerError?: string }).viewerError !== undefined,
        { timeout: 20_000, polling: 50 },
      );
      const readyMs = Math.round(performance.now() - started);
      expect(await page.evaluate(() => (globalThis as { viewerError?: string }).viewerError ?? null)).toBeNull();
      expect(consoleErrors).toEqual([]);
      expect(offOrigin).toEqual([]);
      const shot = Buffer.from(await page.screenshot({ type: 'png' }));
      writeFileSync(join(tmpdir(), 'card-viewer.png'), shot);
      console.info(`viewer card ready after ${readyMs} ms; ${join(tmpdir(), 'card-viewer.png')}`);
      const { data, info } = await sharp(shot).raw().toBuffer({ resolveWithObject: true });
      const image = { data, width: info.width, channels: info.channels };
      const card = await buildItemCard({ sql: t.deps.sql, config: workerConfig }, charmed, { imageSize: 1024 });
      expectItemImage(image, cardLayout(card, 1024, 768, 0.04).imageArea, await itemImageUrl(0.2153));
      // The gradient's top colour at the top edge.
      expect(near(pixelAt(image, 2, 1), [0x1f, 0x26, 0x30], 6)).toBe(true);
    } finally {
      await page.close();
    }
  }, 60_000);
});
