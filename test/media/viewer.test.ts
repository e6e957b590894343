import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'puppeteer-core';
import sharp from 'sharp';
import { createScene, updateScene } from '../../shared/media/scenes.ts';
import { parseSceneBody } from '../../shared/media/scenes-model.ts';
import { sha256Hex } from '../../shared/util/crypto.ts';
import { newId } from '../../shared/util/ids.ts';
import { jcsCanonicalize } from '../../shared/util/jcs.ts';
import { serveInChromium } from '../browser.ts';
import { createTestApp, type TestApp, testClock, workspaceWithKey } from '../helpers.ts';

/**
 * Viewer sessions (docs/design.md §10) through the real app, and the page in real headless Chromium over
 * HTTP: every status of POST /v2/viewer/sessions, the 404/410 pages, and a page that draws the item
 * (non-blank, seed-dependent) with no console error and no request leaving the API's origin.
 */

declare const window: { viewerReady?: boolean; viewerError?: string };
declare const document: { querySelector(selector: string): { toDataURL(): string } | null };

const AK47 = 7; // a weapon definition with paints 14 and 44 in cs2-lib
const AWP = 9; // a real definition for which the fixture directory has no model

// ---- item-file fixtures: a small textured box model (GLB) and PNG images --------------------------

/** A box `sx × sy × sz` as a binary glTF with positions, normals and UVs, in one colour. */
function boxGlb(sx: number, sy: number, sz: number, color: [number, number, number, number]): Uint8Array {
  const faces: Array<{ normal: [number, number, number]; corners: Array<[number, number, number]> }> = [
    {
      normal: [0, 0, 1],
      corners: [
        [-1, -1, 1],
        [1, -1, 1],
        [1, 1, 1],
        [-1, 1, 1],
      ],
    },
    {
      normal: [0, 0, -1],
      corners: [
        [1, -1, -1],
        [-1, -1, -1],
        [-1, 1, -1],
        [1, 1, -1],
      ],
    },
    {
      normal: [1, 0, 0],
      corners: [
        [1, -1, 1],
        [1, -1, -1],
        [1, 1, -1],
        [1, 1, 1],
      ],
    },
    {
      normal: [-1, 0, 0],
      corners: [
        [-1, -1, -1],
        [-1, -1, 1],
        [-1, 1, 1],
        [-1, 1, -1],
      ],
    },
    {
      normal: [0, 1, 0],
      corners: [
        [-1, 1, 1],
        [1, 1, 1],
        [1, 1, -1],
        [-1, 1, -1],
      ],
    },
    {
      normal: [0, -1, 0],
      corners: [
        [-1, -1, -1],
        [1, -1, -1],
        [1, -1, 1],
        [-1, -1, 1],
      ],
    },
  ];
  const positions: number[] = [];
  const normals: number[] = [];
  const uvs: number[] = [];
  const indices: number[] = [];
  faces.forEach((face, index) => {
    for (const [x, y, z] of face.corners) positions.push((x * sx) / 2, (y * sy) / 2, (z * sz) / 2);
    for (let corner = 0; corner < 4; corner += 1) normals.push(...face.normal);
    uvs.push(0, 1, 1, 1, 1, 0, 0, 0);
    const base = index * 4;
    indices.push(base, base + 1, base + 2, base, base + 2, base + 3);
  });
  const parts = [new Float32Array(positions), new Float32Array(normals), new Float32Array(uvs), new Uint16Array(indices)];
  const views: Array<{ buffer: number; byteOffset: number; byteLength: number; target: number }> = [];
  let offset = 0;
  for (const [index, part] of parts.entries()) {
    views.push({ buffer: 0, byteOffset: offset, byteLength: part.byteLength, target: index === 3 ? 34963 : 34962 });
    offset += Math.ceil(part.byteLength / 4) * 4;
  }
  const bin = new Uint8Array(offset);
  parts.forEach((part, index) => {
    bin.set(new Uint8Array(part.buffer), views[index]!.byteOffset);
  });
  const json = {
    asset: { version: '2.0' },
    scene: 0,
    scenes: [{ nodes: [0] }],
    nodes: [{ mesh: 0 }],
    meshes: [{ primitives: [{ attributes: { POSITION: 0, NORMAL: 1, TEXCOORD_0: 2 }, indices: 3, material: 0 }] }],
    materials: [{ pbrMetallicRoughness: { baseColorFactor: color, metallicFactor: 0.1, roughnessFactor: 0.6 } }],
    buffers: [{ byteLength: bin.byteLength }],
    bufferViews: views,
    accessors: [
      { bufferView: 0, componentType: 5126, count: 24, type: 'VEC3', min: [-sx / 2, -sy / 2, -sz / 2], max: [sx / 2, sy / 2, sz / 2] },
      { bufferView: 1, componentType: 5126, count: 24, type: 'VEC3' },
      { bufferView: 2, componentType: 5126, count: 24, type: 'VEC2' },
      { bufferView: 3, componentType: 5123, count: 36, type: 'SCALAR' },
    ],
  };
  let jsonBytes = new TextEncoder().encode(JSON.stringify(json));
  const padded = new Uint8Array(Math.ceil(jsonBytes.length / 4) * 4).fill(0x20);
  padded.set(jsonBytes);
  jsonBytes = padded;
  const total = 12 + 8 + jsonBytes.length + 8 + bin.length;
  const glb = new Uint8Array(total);
  const view = new DataView(glb.buffer);
  view.setUint32(0, 0x46546c67, true); // 'glTF'
  view.setUint32(4, 2, true);
  view.setUint32(8, total, true);
  view.setUint32(12, jsonBytes.length, true);
  view.setUint32(16, 0x4e4f534a, true); // 'JSON'
  glb.set(jsonBytes, 20);
  view.setUint32(20 + jsonBytes.length, bin.length, true);
  view.setUint32(24 + jsonBytes.length, 0x004e4942, true); // 'BIN\0'
  glb.set(bin, 28 + jsonBytes.length);
  return glb;
}

/** A PNG whose colours depend on position, so moving or rotating it (a paint seed) changes the picture. */
async function patternPng(size: number, colors: [number, number, number][]): Promise<Buffer> {
  const raw = Buffer.alloc(size * size * 4);
  for (let y = 0; y < size; y += 1) {
    for (let x = 0; x < size; x += 1) {
      const band = Math.floor(((x + 2 * y) / size) * 3) % colors.length;
      const [r, g, b] = colors[band]!;
      const shade = 0.6 + (0.4 * x) / size;
      raw.set([Math.round(r * shade), Math.round(g * shade), Math.round(b * shade), 255], (y * size + x) * 4);
    }
  }
  return sharp(raw, { raw: { width: size, height: size, channels: 4 } })
    .png()
    .toBuffer();
}

async function writeItemFiles(dir: string) {
  for (const folder of ['models', 'paints', 'stickers', 'charms']) mkdirSync(join(dir, folder), { recursive: true });
  writeFileSync(join(dir, 'models', `${AK47}.glb`), boxGlb(2, 0.5, 0.2, [0.5, 0.5, 0.55, 1]));
  writeFileSync(join(dir, 'charms', '1.glb'), boxGlb(0.3, 0.3, 0.3, [0.9, 0.2, 0.2, 1]));
  writeFileSync(
    join(dir, 'paints', '44.png'),
    await patternPng(64, [
      [230, 40, 40],
      [40, 200, 60],
      [40, 80, 230],
    ]),
  );
  writeFileSync(
    join(dir, 'stickers', '1.png'),
    await patternPng(32, [
      [250, 220, 30],
      [20, 20, 20],
    ]),
  );
}

// ---- harness -----------------------------------------------------------------------------------------

let t: TestApp;
let origin: string;
let browser: Browser;
let stopBrowser: (() => Promise<void>) | undefined;
let itemFilesDir: string;
const clock = testClock();

const SCENE_BODY = {
  schema: 3,
  kind: 'service-viewer-scene',
  name: 'Showcase <b>&</b>',
  presentation: {
    background: { type: 'gradient', value: '#20252b,#0b0d10' },
    camera: { preset: 'front', fov: 40 },
    quality: 'interactive',
    lighting: 'studio',
  },
  chrome: { showControls: true, allowFullscreen: true, watermark: 'cs2 showcase' },
};

async function sceneIn(workspaceId: string, body: Record<string, unknown> = SCENE_BODY) {
  return createScene(t.deps.sql, parseSceneBody(body), {
    workspaceId,
    actor: { type: 'system', id: null },
    requestId: 'test',
    now: clock.now(),
  });
}

const item = (state: Record<string, unknown> = {}) => ({
  item: { family: 'weapon', definition_index: AK47 },
  state: { paint_index: 44, paint_seed: 1, wear: 0.1, ...state },
});

type Receipt = { session_id: string; url: string; expires_at: string; item: unknown; scene: { scene_id: string; revision: number; etag: string } };

async function createSession(headers: Record<string, string>, body: unknown): Promise<Response> {
  return t.request('/v2/viewer/sessions', { method: 'POST', headers, json: body });
}

beforeAll(async () => {
  itemFilesDir = mkdtempSync(join(tmpdir(), 'viewer-item-files-'));
  await writeItemFiles(itemFilesDir);
  t = createTestApp({ config: { ITEM_FILES_DIR: itemFilesDir }, now: clock.now });
  ({ origin, browser, close: stopBrowser } = await serveInChromium(t, 'viewer'));
}, 30_000);

afterAll(async () => {
  await stopBrowser?.();
  await t?.close();
  if (itemFilesDir) rmSync(itemFilesDir, { recursive: true, force: true });
});

// ---- POST /v2/viewer/sessions -----------------------------------------------------------------------

describe('POST /v2/viewer/sessions', () => {
  test('201: a page URL on the request origin with a random token stored only as its SHA-256, and the exact scene receipt', async () => {
    const owner = await workspaceWithKey(t, { scopes: ['media:write'] });
    const scene = await sceneIn(owner.workspace.id);
    const response = await createSession(owner.keyHeaders, { item: item(), scene_id: scene.document.scene_id });
    expect(response.status).toBe(201);
    const receipt = (await response.json()) as Receipt;
    const token = receipt.url.slice(`http://localhost/viewer/`.length);
    expect(receipt.url).toBe(`http://localhost/viewer/${token}`);
    expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(receipt.url).not.toContain(owner.key);
    expect(receipt.expires_at).toBe(new Date(clock.now().getTime() + 900_000).toISOString());
    expect(receipt.item).toEqual(item());
    // The ETag computed independently: quoted SHA-256 of the RFC 8785 form of the scene document.
    const etag = `"${sha256Hex(jcsCanonicalize(scene.document))}"`;
    expect(receipt.scene).toEqual({ scene_id: scene.document.scene_id, revision: 1, etag });
    const [row] = await t.deps.sql<
      { token_hash: string; scene_revision: number }[]
    >`select token_hash, scene_revision from viewer_sessions where session_id = ${receipt.session_id}`;
    expect(row).toEqual({ token_hash: sha256Hex(token), scene_revision: 1 });
    const [holding] = await t.deps.sql<
      { count: number }[]
    >`select count(*)::int as count from viewer_sessions where token_hash = ${token} or item::text like ${`%${token}%`}`;
    expect(holding?.count).toBe(0);
  });

  test('the receipt names the revision used: the latest by default, an older one when asked; a decode answer is accepted as the item', async () => {
    const owner = await workspaceWithKey(t, { scopes: ['media:write'] });
    const first = await sceneIn(owner.workspace.id);
    const second = await updateScene(t.deps.sql, first.document.scene_id, first.etag, parseSceneBody({ ...SCENE_BODY, name: 'Second' }), {
      workspaceId: owner.workspace.id,
      actor: { type: 'system', id: null },
      requestId: 'test',
      now: clock.now(),
    });
    const latest = (await (await createSession(owner.keyHeaders, { item: item(), scene_id: first.document.scene_id })).json()) as Receipt;
    expect(latest.scene).toEqual({ scene_id: first.document.scene_id, revision: 2, etag: second.etag });
    const decodeAnswer = { ...item(), rarity: 4, quality: 4, origin: 8, item_id: '1', certificate: 'ab' };
    const older = await createSession(owner.keyHeaders, { item: decodeAnswer, scene_id: first.document.scene_id, scene_revision: 1 });
    expect(older.status).toBe(201);
    const olderReceipt = (await older.json()) as Receipt;
    expect(olderReceipt.scene).toEqual({ scene_id: first.document.scene_id, revision: 1, etag: first.etag });
    expect(olderReceipt.item).toEqual(item());
  });

  test('400 invalid_item naming the field; 400 invalid_request for a missing item or a malformed scene id', async () => {
    const owner = await workspaceWithKey(t, { scopes: ['media:write'] });
    const scene = await sceneIn(owner.workspace.id);
    const badPaint = await createSession(owner.keyHeaders, { item: item({ paint_index: 999_999 }), scene_id: scene.document.scene_id });
    expect(badPaint.status).toBe(400);
    const body = (await badPaint.json()) as { error: { code: string; details: { field: string }[] } };
    expect(body.error.code).toBe('invalid_item');
    expect(body.error.details.map((detail) => detail.field)).toEqual(['body.item.state.paint_index']);
    // A body without an item is malformed as a whole, like any missing required field.
    const missing = await createSession(owner.keyHeaders, { scene_id: scene.document.scene_id });
    expect(missing.status).toBe(400);
    expect(JSON.stringify(await missing.json())).toContain('item');
    const badId = await createSession(owner.keyHeaders, { item: item(), scene_id: 'nope' });
    expect(badId.status).toBe(400);
    expect(((await badId.json()) as { error: { code: string } }).error.code).toBe('invalid_request');
  });

  test('401 without a key; 403 insufficient_scope with read-only media scopes', async () => {
    const none = await createSession({}, { item: item(), scene_id: newId() });
    expect(none.status).toBe(401);
    const reader = await workspaceWithKey(t, { scopes: ['media:read'] });
    const denied = await createSession(reader.keyHeaders, { item: item(), scene_id: newId() });
    expect(denied.status).toBe(403);
    expect(((await denied.json()) as { error: { code: string } }).error.code).toBe('insufficient_scope');
  });

  test('404 scene_not_found (unknown, or another workspace’s scene), revision_not_found; no model: mode card', async () => {
    const owner = await workspaceWithKey(t, { scopes: ['media:write'] });
    const other = await workspaceWithKey(t, { scopes: ['media:write'] });
    const scene = await sceneIn(owner.workspace.id);
    const codeOf = async (response: Response) => [response.status, ((await response.json()) as { error: { code: string } }).error.code];
    expect(await codeOf(await createSession(owner.keyHeaders, { item: item(), scene_id: newId() }))).toEqual([404, 'scene_not_found']);
    expect(await codeOf(await createSession(other.keyHeaders, { item: item(), scene_id: scene.document.scene_id }))).toEqual([404, 'scene_not_found']);
    expect(await codeOf(await createSession(owner.keyHeaders, { item: item(), scene_id: scene.document.scene_id, scene_revision: 2 }))).toEqual([
      404,
      'revision_not_found',
    ]);
    const awp = { item: { family: 'weapon', definition_index: AWP }, state: {} };
    // docs/design.md §18: a definition without a real model is shown as an item card.
    const card = await createSession(owner.keyHeaders, { item: awp, scene_id: scene.document.scene_id });
    expect(card.status).toBe(201);
    expect(((await card.json()) as { mode: string }).mode).toBe('card');
    const model = await createSession(owner.keyHeaders, { item: item(), scene_id: scene.document.scene_id });
    expect(((await model.json()) as { mode: string }).mode).toBe('3d');
  });
});

// ---- the page ---------------------------------------------------------------------------------------

describe('GET /viewer/:token', () => {
  test('410 page saying the session expired after VIEWER_SESSION_TTL_SECONDS; 404 page for an unknown token', async () => {
    const owner = await workspaceWithKey(t, { scopes: ['media:write'] });
    const scene = await sceneIn(owner.workspace.id);
    const receipt = (await (await createSession(owner.keyHeaders, { item: item(), scene_id: scene.document.scene_id })).json()) as Receipt;
    const path = new URL(receipt.url).pathname;
    expect((await t.request(path)).status).toBe(200);
    clock.advance(900_000);
    try {
      const expired = await t.request(path);
      expect(expired.status).toBe(410);
      expect(expired.headers.get('content-type')).toBe('text/html; charset=utf-8');
      expect(await expired.text()).toContain('This viewer session has expired');
    } finally {
      clock.set(new Date());
    }
    const unknown = await t.request(`/viewer/${'A'.repeat(43)}`);
    expect(unknown.status).toBe(404);
    expect(await unknown.text()).toContain('no viewer session');
    expect((await t.request('/viewer/not-a-token')).status).toBe(404);
  });

  test('the page embeds the item and scene as escaped JSON and loads one script from our origin, cached for a year', async () => {
    const owner = await workspaceWithKey(t, { scopes: ['media:write'] });
    const scene = await sceneIn(owner.workspace.id);
    const receipt = (await (
      await createSession(owner.keyHeaders, { item: item({ name_tag: '</script><script>alert(1)</script>' }), scene_id: scene.document.scene_id })
    ).json()) as Receipt;
    const page = await t.request(new URL(receipt.url).pathname);
    expect(page.headers.get('cache-control')).toBe('no-store');
    expect(page.headers.get('referrer-policy')).toBe('no-referrer');
    const html = await page.text();
    expect(html).toContain('<title>Showcase &#60;b&#62;&#38;&#60;/b&#62;</title>');
    expect(html).not.toContain('<script>alert(1)');
    const scripts = [...html.matchAll(/<script type="module" src="([^"]+)"/g)].map((match) => match[1]!);
    expect(scripts).toHaveLength(1);
    expect(scripts[0]).toMatch(/^\/viewer\/assets\/viewer\.[0-9a-f]{16}\.js$/);
    expect(html).not.toMatch(/https?:\/\//);
    const script = await t.request(scripts[0]!);
    expect(script.status).toBe(200);
    expect(script.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    expect((await script.text()).length).toBeGreaterThan(100_000);
    expect((await t.request('/viewer/assets/viewer.0000000000000000.js')).status).toBe(404);
  });

  test('item files by kind and integer id only', async () => {
    const model = await t.request(`/viewer/files/model/${AK47}`);
    expect(model.status).toBe(200);
    expect(model.headers.get('content-type')).toBe('model/gltf-binary');
    expect((await t.request('/viewer/files/paint/44')).headers.get('content-type')).toBe('image/png');
    for (const path of [
      '/viewer/files/model/9',
      '/viewer/files/model/07',
      '/viewer/files/model/-7',
      '/viewer/files/secret/7',
      '/viewer/files/model/..%2F..%2Fetc%2Fpasswd',
    ]) {
      expect([path, (await t.request(path)).status]).toEqual([path, 404]);
    }
  });
});

// ---- the page in Chromium ---------------------------------------------------------------------------

type Opened = { page: Page; pixels: Buffer; consoleErrors: string[]; offOrigin: string[]; readyMs: number };

/** Opens a session URL, waits for viewerReady with a deadline, and reads the drawn pixels. */
async function openInChromium(url: string): Promise<Opened> {
  const page = await browser.newPage();
  const consoleErrors: string[] = [];
  const requested: string[] = [];
  page.on('console', (message) => {
    if (message.type() === 'error') consoleErrors.push(message.text());
  });
  page.on('pageerror', (error) => consoleErrors.push(String(error)));
  page.on('request', (request) => {
    requested.push(request.url());
  });
  const cdp = await page.createCDPSession();
  await cdp.send('Network.enable');
  cdp.on('Network.webSocketCreated', ({ url: socket }) => requested.push(socket));
  await page.setViewport({ width: 640, height: 400 });
  const started = Date.now();
  await page.goto(url, { waitUntil: 'load', timeout: 20_000 });
  await page
    .waitForFunction(() => window.viewerReady === true || window.viewerError !== undefined, { timeout: 20_000, polling: 50 })
    .catch((error: unknown) => {
      throw new Error(`viewerReady never came: ${String(error)}; console: ${consoleErrors.join(' | ')}`);
    });
  const readyMs = Date.now() - started;
  expect(await page.evaluate(() => window.viewerError ?? null)).toBeNull();
  const screenshot = await page.screenshot({ type: 'png' });
  const pixels = await sharp(screenshot).removeAlpha().raw().toBuffer();
  const offOrigin = requested.filter(
    (requestUrl) => !requestUrl.startsWith('data:') && !requestUrl.startsWith('blob:') && new URL(requestUrl).origin !== origin,
  );
  return { page, pixels, consoleErrors, offOrigin, readyMs };
}

/** How many of the pixels differ between two same-size RGB buffers. */
function differingPixels(a: Buffer, b: Buffer): number {
  let count = 0;
  for (let index = 0; index < a.length; index += 3) {
    if (Math.abs(a[index]! - b[index]!) + Math.abs(a[index + 1]! - b[index + 1]!) + Math.abs(a[index + 2]! - b[index + 2]!) > 24) count += 1;
  }
  return count;
}

describe('the viewer page in headless Chromium', () => {
  test('draws the item with its files, sets viewerReady, logs no error and requests nothing off the API origin; two seeds differ', async () => {
    const owner = await workspaceWithKey(t, { scopes: ['media:write'] });
    const scene = await sceneIn(owner.workspace.id);
    const state = {
      stattrak: { value: 1337 },
      name_tag: 'Showcase',
      stickers: [
        { slot: 0, sticker_id: 1, scale: 1.2, rotation: 15 },
        { slot: 3, sticker_id: 2, offset_x: 0.1, offset_y: -0.1 }, // no file for sticker 2: a placeholder, no request
      ],
      charms: [{ slot: 0, charm_id: 1, offset_x: 1 }],
    };
    const sessionUrl = async (seed: number) => {
      const response = await createSession(owner.keyHeaders, { item: item({ ...state, paint_seed: seed }), scene_id: scene.document.scene_id });
      expect(response.status).toBe(201);
      // The receipt is on the request's origin (t.request uses http://localhost); open the same path on our server.
      return `${origin}${new URL(((await response.json()) as Receipt).url).pathname}`;
    };

    const first = await openInChromium(await sessionUrl(1));
    const second = await openInChromium(await sessionUrl(700));
    try {
      for (const opened of [first, second]) {
        expect(opened.consoleErrors).toEqual([]);
        expect(opened.offOrigin).toEqual([]);
      }
      // Not blank: the gradient background alone spans few colours; the item adds many more.
      const colours = new Set<number>();
      for (let index = 0; index < first.pixels.length; index += 3)
        colours.add((first.pixels[index]! << 16) | (first.pixels[index + 1]! << 8) | first.pixels[index + 2]!);
      expect(colours.size).toBeGreaterThan(200);
      // The pattern moves with the seed.
      expect(differingPixels(first.pixels, second.pixels)).toBeGreaterThan(1_000);
      await first.page.screenshot({ path: join(tmpdir(), 'viewer-page.png') });
      console.info(`viewerReady after ${first.readyMs} ms and ${second.readyMs} ms; screenshot ${join(tmpdir(), 'viewer-page.png')}`);
    } finally {
      await first.page.close();
      await second.page.close();
    }
  }, 60_000);

  test('render mode: an exact-size canvas, no chrome, a transparent background kept as alpha', async () => {
    const { viewerPageHtml, resolveViewerFiles } = await import('../../shared/media/viewer/index.ts');
    const owner = await workspaceWithKey(t, { scopes: ['media:write'] });
    const scene = await sceneIn(owner.workspace.id, {
      ...SCENE_BODY,
      presentation: { ...SCENE_BODY.presentation, camera: { preset: 'inspect', autoRotate: true } },
    });
    const selector = item();
    const html = await viewerPageHtml({
      item: selector,
      scene: scene.document,
      files: resolveViewerFiles(itemFilesDir, selector)!,
      mode: 'render',
      width: 320,
      height: 200,
      background: 'transparent',
    });
    // Served by a private server, as the render worker does: the page, its script and files from shared/media/viewer.
    const { viewerAssetResponse, itemFileResponseForPath } = await import('../../shared/media/viewer/index.ts');
    const server = Bun.serve({
      port: 0,
      hostname: '127.0.0.1',
      fetch: (request) => {
        const path = new URL(request.url).pathname;
        if (path === '/render') return new Response(html, { headers: { 'content-type': 'text/html; charset=utf-8' } });
        if (path.startsWith('/viewer/assets/')) return viewerAssetResponse(path);
        return itemFileResponseForPath(itemFilesDir, path) ?? new Response('no', { status: 404 });
      },
    });
    const page = await browser.newPage();
    try {
      const errors: string[] = [];
      page.on('console', (message) => {
        if (message.type() === 'error') errors.push(message.text());
      });
      await page.setViewport({ width: 320, height: 200 });
      await page.goto(`http://127.0.0.1:${server.port}/render`, { waitUntil: 'load' });
      await page.waitForFunction(() => window.viewerReady === true || window.viewerError !== undefined, { timeout: 20_000, polling: 50 });
      expect(errors).toEqual([]);
      const shot = await page.screenshot({ type: 'png', omitBackground: true });
      const { data, info } = await sharp(shot).ensureAlpha().raw().toBuffer({ resolveWithObject: true });
      expect([info.width, info.height]).toEqual([320, 200]);
      let transparent = 0;
      let opaque = 0;
      for (let index = 3; index < data.length; index += 4) {
        if (data[index] === 0) transparent += 1;
        else if (data[index] === 255) opaque += 1;
      }
      expect(transparent).toBeGreaterThan(1_000);
      expect(opaque).toBeGreaterThan(1_000);
      expect(await page.$('#viewer-fullscreen:not([hidden])')).toBeNull();
    } finally {
      await page.close();
      server.stop(true);
    }
  }, 60_000);
});
