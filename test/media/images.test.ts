import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import { generateCatalog } from '../../shared/catalog/generate.ts';
import { type CatalogItem, catalogIdFor } from '../../shared/catalog/identity.ts';
import { syncCatalog } from '../../shared/catalog/repository.ts';
import {
  cachedImage,
  FAILURE_TTL_MS,
  type ImageCacheDeps,
  ImageCacheState,
  type ImageFailure,
  type ImageFormat,
  ImageUnavailableError,
  InvalidImageRequestError,
  imageEtag,
  roundImageSize,
} from '../../shared/media/images/image-cache.ts';
import { itemImage } from '../../shared/media/images/item-images.ts';
import { createLogger } from '../../shared/platform/logger.ts';
import { expectedColourOf, FAKE_IMAGE_SIZE, IMAGE_FAULT_KINDS, type ImageFake, type ImageFaultKind, type Rgb, startImageFake } from '../fakes/images/server.ts';
import { createTestApp, failure, scratchTestApp, type TestApp, testClock, testConfig } from '../helpers.ts';

/**
 * docs/design.md §18's image cache (shared/media/images/image-cache.ts) and GET /v2/images/{catalog_id},
 * against the local image fake (a fake of its own: faults are set on it), real Postgres and Redis.
 */

const log = createLogger({ level: 'silent', name: 'images-test' });
const TIMEOUT_MS = 400;
const MAX_BYTES = 1024 * 1024;

/** Every stored image file under a blob root (temp files included: none may be left). */
function storedFiles(root: string): string[] {
  try {
    return readdirSync(join(root, 'images'), { recursive: true, withFileTypes: true })
      .filter((entry) => entry.isFile())
      .map((entry) => join(entry.parentPath, entry.name));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
}

/** The pixel at (x, y) of an encoded image, RGBA. */
async function pixelAt(bytes: Uint8Array, x: number, y: number): Promise<[number, number, number, number]> {
  const { data, info } = await sharp(bytes).ensureAlpha().raw().toBuffer({ resolveWithObject: true });
  const at = (Math.round(y) * info.width + Math.round(x)) * 4;
  return [data[at]!, data[at + 1]!, data[at + 2]!, data[at + 3]!];
}

const near = (actual: readonly number[], expected: Rgb, tolerance = 6) => expected.every((channel, index) => Math.abs(actual[index]! - channel) <= tolerance);

/**
 * Checks an encoded image of the fake's `path` fitted into size×size: the format and size, the body
 * and band in the fake's colours where the fitted image puts them, transparency outside it.
 */
async function expectFakeImage(
  bytes: Uint8Array,
  path: string,
  size: number,
  format: ImageFormat,
  source: { width: number; height: number } = FAKE_IMAGE_SIZE,
) {
  const metadata = await sharp(bytes).metadata();
  expect({ format: metadata.format, width: metadata.width, height: metadata.height, alpha: metadata.hasAlpha, space: metadata.space }).toEqual({
    format: format,
    width: size,
    height: size,
    alpha: true,
    space: 'srgb',
  });
  const scale = size / Math.max(source.width, source.height);
  const left = (size - source.width * scale) / 2;
  const top = (size - source.height * scale) / 2;
  const { primary, secondary } = expectedColourOf(path);
  const body = await pixelAt(bytes, left + 0.5 * source.width * scale, top + 0.4 * source.height * scale);
  const band = await pixelAt(bytes, left + 0.5 * source.width * scale, top + 0.7 * source.height * scale);
  const corner = await pixelAt(bytes, 1, 1);
  expect({ body: near(body, primary) && body[3] === 255, band: near(band, secondary) && band[3] === 255, cornerAlpha: corner[3] }).toEqual({
    body: true,
    band: true,
    cornerAlpha: 0,
  });
}

describe('roundImageSize', () => {
  test('rounds up to a power of two from 64 to 1024 and refuses anything else', () => {
    expect([64, 65, 100, 128, 129, 256, 300, 512, 513, 1000, 1024].map(roundImageSize)).toEqual([64, 128, 128, 128, 256, 256, 512, 512, 1024, 1024, 1024]);
    for (const bad of [63, 1025, 0, -64, 100.5, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(() => roundImageSize(bad)).toThrow(InvalidImageRequestError);
    }
  });
});

describe('cachedImage', () => {
  let fake: ImageFake;
  const roots: string[] = [];

  beforeAll(() => {
    fake = startImageFake();
  });

  afterAll(async () => {
    await fake.stop();
    for (const root of roots) rmSync(root, { recursive: true, force: true });
  });

  /** A blob root, a clock and in-process caches of their own: a fresh process over an empty store. */
  function setup(overrides: Record<string, string> = {}) {
    const blobDir = mkdtempSync(join(tmpdir(), 'images-cache-'));
    roots.push(blobDir);
    const clock = testClock('2026-03-01T12:00:00Z');
    const config = testConfig({
      STEAM_IMAGE_URL: fake.url,
      ITEM_ASSETS_URL: fake.url,
      BLOB_DIR: blobDir,
      IMAGE_FETCH_TIMEOUT_MS: String(TIMEOUT_MS),
      IMAGE_MAX_BYTES: String(MAX_BYTES),
      ...overrides,
    });
    const deps: ImageCacheDeps = { config, log, now: clock.now, state: new ImageCacheState() };
    return { deps, clock, blobDir };
  }

  const requestsTo = (path: string) => fake.requests.filter((request) => request.path === path).length;

  test('fits a Steam icon into size×size (rounded up) on a transparent background, in the fake’s colours, as PNG and WebP', async () => {
    const { deps } = setup();
    const path = '/economy/image/fit-icon';
    const png = await cachedImage(deps, { url: `${fake.url}${path}`, size: 200, format: 'png' });
    expect(png.contentType).toBe('image/png');
    expect(png.etag).toBe(imageEtag(png.bytes));
    expect(png.etag).toMatch(/^"[0-9a-f]{64}"$/);
    await expectFakeImage(png.bytes, path, 256, 'png');
    const webp = await cachedImage(deps, { url: `${fake.url}${path}`, size: 100, format: 'webp' });
    expect(webp.contentType).toBe('image/webp');
    await expectFakeImage(webp.bytes, path, 128, 'webp');
    // A cs2-lib WebP source, enlarged to 1024.
    const lib = await cachedImage(deps, { url: `${fake.url}/images/fit-lib_light.webp`, size: 1024, format: 'png' });
    await expectFakeImage(lib.bytes, '/images/fit-lib_light.webp', 1024, 'png');
    // A 512 px source (Steam's sized form, 512×384) fitted down.
    const sized = await cachedImage(deps, { url: `${fake.url}/economy/image/fit-icon/512fx512f`, size: 64, format: 'png' });
    await expectFakeImage(sized.bytes, path, 64, 'png', { width: 512, height: 384 });
  });

  test('stores each (url, size, format) once; a later call, in this process or another, does not ask the upstream', async () => {
    const { deps, blobDir } = setup();
    const path = '/economy/image/stored-once';
    const first = await cachedImage(deps, { url: `${fake.url}${path}`, size: 256, format: 'png' });
    expect(requestsTo(path)).toBe(1);
    expect(storedFiles(blobDir)).toHaveLength(1);
    // Same process (memory), then a fresh process over the same store (the blob).
    const again = await cachedImage(deps, { url: `${fake.url}${path}`, size: 256, format: 'png' });
    const otherProcess = await cachedImage({ ...deps, state: new ImageCacheState() }, { url: `${fake.url}${path}`, size: 256, format: 'png' });
    // 129…256 are one size.
    const rounded = await cachedImage({ ...deps, state: new ImageCacheState() }, { url: `${fake.url}${path}`, size: 129, format: 'png' });
    expect([again.etag, otherProcess.etag, rounded.etag]).toEqual([first.etag, first.etag, first.etag]);
    expect(Buffer.from(otherProcess.bytes).equals(Buffer.from(first.bytes))).toBe(true);
    expect(requestsTo(path)).toBe(1);
    expect(storedFiles(blobDir)).toHaveLength(1);
    // Another size is another blob.
    await cachedImage(deps, { url: `${fake.url}${path}`, size: 64, format: 'png' });
    expect(storedFiles(blobDir)).toHaveLength(2);
  });

  test('concurrent misses fetch the upstream once, across sizes and formats too', async () => {
    const { deps, blobDir } = setup();
    const path = '/economy/image/concurrent';
    const url = `${fake.url}${path}`;
    const same = await Promise.all(Array.from({ length: 20 }, () => cachedImage(deps, { url, size: 512, format: 'webp' })));
    expect(new Set(same.map((image) => image.etag)).size).toBe(1);
    expect(requestsTo(path)).toBe(1);
    const otherPath = '/economy/image/concurrent-sizes';
    const mixed = await Promise.all(
      [64, 128, 256, 512].flatMap((size) => (['png', 'webp'] as const).map((format) => cachedImage(deps, { url: `${fake.url}${otherPath}`, size, format }))),
    );
    expect(new Set(mixed.map((image) => image.etag)).size).toBe(8);
    expect(requestsTo(otherPath)).toBe(1);
    expect(storedFiles(blobDir)).toHaveLength(9);
  });

  const faultReasons: Record<ImageFaultKind, ImageFailure> = {
    slow: 'timeout',
    huge: 'too_large',
    not_image: 'not_an_image',
    redirect_private: 'redirect',
    redirect: 'redirect',
    error: 'upstream_status',
    not_found: 'upstream_status',
  };

  test('every upstream fault fails with ImageUnavailableError, within the timeout, and stores nothing', async () => {
    expect(Object.keys(faultReasons).sort()).toEqual([...IMAGE_FAULT_KINDS].sort());
    for (const kind of IMAGE_FAULT_KINDS) {
      const { deps, blobDir } = setup();
      const path = `/economy/image/fault-${kind}`;
      fake.fault(path, kind);
      const started = performance.now();
      const error = await failure(cachedImage(deps, { url: `${fake.url}${path}`, size: 256, format: 'png' }));
      const elapsed = performance.now() - started;
      expect({ kind, error: error instanceof ImageUnavailableError, reason: (error as ImageUnavailableError).reason }).toEqual({
        kind,
        error: true,
        reason: faultReasons[kind],
      });
      expect({ kind, withinTimeout: elapsed < TIMEOUT_MS + 1_000 }).toEqual({ kind, withinTimeout: true });
      expect({ kind, stored: storedFiles(blobDir) }).toEqual({ kind, stored: [] });
      fake.fault(path, null);
    }
    // The redirects were not followed: the fake never served their targets.
    expect(requestsTo('/images/redirected.webp')).toBe(0);
  }, 30_000);

  test('a failed url is answered from memory for a few seconds, then fetched again', async () => {
    const { deps, clock, blobDir } = setup();
    const path = '/economy/image/flaky';
    const url = `${fake.url}${path}`;
    fake.fault(path, 'error');
    await failure(cachedImage(deps, { url, size: 256, format: 'png' }));
    fake.fault(path, null);
    const remembered = (await failure(cachedImage(deps, { url, size: 128, format: 'webp' }))) as ImageUnavailableError;
    expect(remembered).toBeInstanceOf(ImageUnavailableError);
    expect(remembered.retryAfterSeconds).toBeLessThanOrEqual(FAILURE_TTL_MS / 1000);
    expect(requestsTo(path)).toBe(1);
    clock.advance(FAILURE_TTL_MS + 1);
    const image = await cachedImage(deps, { url, size: 256, format: 'png' });
    await expectFakeImage(image.bytes, path, 256, 'png');
    expect(requestsTo(path)).toBe(2);
    expect(storedFiles(blobDir)).toHaveLength(1);
  });

  test('SSRF: an origin other than the configured ones is judged as a webhook target (https, public addresses only)', async () => {
    const { deps } = setup();
    const before = fake.requests.length;
    const port = new URL(fake.url).port;
    for (const url of [
      // The fake itself under another spelling of its origin: not configured, so http and loopback are refused.
      `http://localhost:${port}/economy/image/ssrf`,
      'https://127.0.0.1/x.png',
      'https://10.1.2.3/x.png',
      'https://169.254.169.254/latest/meta-data/',
      'https://[::ffff:127.0.0.1]/x.png',
      'https://[::1]/x.png',
      'https://user:secret@example.com/x.png',
      'ftp://example.com/x.png',
      'not a url',
    ]) {
      const error = await failure(cachedImage(deps, { url, size: 64, format: 'png' }));
      expect({ url, reason: (error as ImageUnavailableError).reason }).toEqual({ url, reason: 'refused' });
    }
    expect(fake.requests.length).toBe(before);
  });

  test('SSRF: a configured origin written as a name is judged by what it resolves to; WEBHOOK_ALLOW_PRIVATE_TARGETS lifts the rules', async () => {
    const port = new URL(fake.url).port;
    const named = `http://images.example.test:${port}`;
    const { deps } = setup({ STEAM_IMAGE_URL: named });
    const toLoopback = { ...deps, lookup: async () => [{ address: '127.0.0.1', family: 4 as const }] };
    const refused = await failure(cachedImage(toLoopback, { url: `${named}/economy/image/named`, size: 64, format: 'png' }));
    expect((refused as ImageUnavailableError).reason).toBe('refused');
    expect((refused as Error).message).toContain('loopback');

    const allowed = setup({ WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' });
    const image = await cachedImage(allowed.deps, { url: `http://localhost:${port}/economy/image/allowed`, size: 64, format: 'png' });
    await expectFakeImage(image.bytes, '/economy/image/allowed', 64, 'png');
  });

  test('refuses a size or format it does not make', async () => {
    const { deps } = setup();
    expect(await failure(cachedImage(deps, { url: `${fake.url}/economy/image/x`, size: 2048, format: 'png' }))).toBeInstanceOf(InvalidImageRequestError);
    expect(await failure(cachedImage(deps, { url: `${fake.url}/economy/image/x`, size: 256, format: 'gif' as ImageFormat }))).toBeInstanceOf(
      InvalidImageRequestError,
    );
  });
});

describe('GET /v2/images/{catalog_id}', () => {
  let fake: ImageFake;
  let t: TestApp;
  const clock = testClock('2026-03-01T12:00:00Z');
  const blobDir = mkdtempSync(join(tmpdir(), 'images-route-'));
  const STEAM_ICON = 'test-icon-AbC_123-route';
  const unknownId = catalogIdFor('No Such Item | Anywhere (Field-Tested)');
  const nameless: CatalogItem = {
    catalog_id: catalogIdFor('Imageless Test Trinket'),
    market_hash_name: 'Imageless Test Trinket',
    type: 'collectible',
    weapon: null,
    exterior: null,
    rarity: null,
    stattrak: false,
    souvenir: false,
    definition_index: null,
    paint_index: null,
    phases: [],
  };
  // Catalog items with an image: a cs2-lib one, one with a Steam icon seen, and one the faults are set on.
  let lib: { id: string; path: string };
  let steam: { id: string; path: string };
  let faulty: { id: string; path: string };
  let routeConfig: Record<string, string>;

  beforeAll(async () => {
    fake = startImageFake();
    routeConfig = {
      STEAM_IMAGE_URL: fake.url,
      ITEM_ASSETS_URL: fake.url,
      BLOB_DIR: blobDir,
      IMAGE_FETCH_TIMEOUT_MS: String(TIMEOUT_MS),
      IMAGE_MAX_BYTES: String(MAX_BYTES),
      PUBLIC_PRICES_RATE_LIMIT: '1000000',
      IMAGE_RATE_LIMIT: '1000000',
    };
    t = await scratchTestApp({ tag: 'images', now: clock.now, config: routeConfig });
    const skins = generateCatalog()
      .filter((item) => item.type === 'weapon' && item.paint_index !== null && item.exterior === 'field-tested' && !item.stattrak)
      .slice(0, 40);
    await syncCatalog(t.deps.sql, [...skins, nameless]);
    const withImages: { id: string; name: string; path: string }[] = [];
    for (const skin of skins) {
      const image = await itemImage(t.deps.sql, t.deps.config, skin.catalog_id);
      if (image?.source === 'cs2-lib') withImages.push({ id: skin.catalog_id, name: skin.market_hash_name, path: new URL(image.url).pathname });
    }
    expect(withImages.length).toBeGreaterThanOrEqual(3);
    lib = withImages[0]!;
    faulty = withImages[1]!;
    await t.deps.sql`
      insert into item_icons (market_hash_name, version, icon_url, first_seen_at, last_seen_at)
      values (${withImages[2]!.name}, 'default', ${STEAM_ICON}, now(), now())`;
    steam = { id: withImages[2]!.id, path: `/economy/image/${STEAM_ICON}` };
  }, 60_000);

  afterAll(async () => {
    await t?.close();
    await fake?.stop();
    rmSync(blobDir, { recursive: true, force: true });
  });

  const requestsTo = (path: string) => fake.requests.filter((request) => request.path === path).length;
  const get = (path: string, headers: Record<string, string> = {}) => t.request(path, { headers });

  async function expectError(response: Response, status: number, code: string) {
    const text = await response.text();
    expect({ status: response.status, type: response.headers.get('content-type') }).toEqual({ status, type: expect.stringContaining('application/json') });
    const body = JSON.parse(text) as { error: { code: string; message: string; request_id: string } };
    expect(body.error).toMatchObject({ code, message: expect.any(String), request_id: response.headers.get('x-request-id') });
    expect(response.headers.get('cache-control')).toBe('no-store');
    return body;
  }

  test('200: the cs2-lib image, 256 px PNG by default, in the fake’s colours, with a strong ETag and a day of caching', async () => {
    const response = await get(`/v2/images/${lib.id}`);
    expect(response.status).toBe(200);
    expect({
      type: response.headers.get('content-type'),
      cache: response.headers.get('cache-control'),
      etag: response.headers.get('etag'),
      requestId: response.headers.get('x-request-id'),
    }).toEqual({ type: 'image/png', cache: 'public, max-age=86400', etag: expect.stringMatching(/^"[0-9a-f]{64}"$/), requestId: expect.any(String) });
    const bytes = new Uint8Array(await response.arrayBuffer());
    expect(response.headers.get('etag')).toBe(imageEtag(bytes));
    await expectFakeImage(bytes, lib.path, 256, 'png');
    // size rounds up, format webp
    const webp = await get(`/v2/images/${lib.id}?size=100&format=webp`);
    expect(webp.headers.get('content-type')).toBe('image/webp');
    await expectFakeImage(new Uint8Array(await webp.arrayBuffer()), lib.path, 128, 'webp');
  });

  test('200: a Steam icon seen in an inventory wins over cs2-lib', async () => {
    const response = await get(`/v2/images/${steam.id}?size=512&version=default`);
    expect(response.status).toBe(200);
    await expectFakeImage(new Uint8Array(await response.arrayBuffer()), steam.path, 512, 'png');
    expect(requestsTo(steam.path)).toBe(1);
  });

  test('304 for a matching If-None-Match; the image is fetched from the upstream once and stored once', async () => {
    const first = await get(`/v2/images/${lib.id}?size=64`);
    const etag = first.headers.get('etag')!;
    await first.arrayBuffer();
    const before = requestsTo(lib.path);
    const files = storedFiles(blobDir).length;
    for (const header of [etag, `W/${etag}`, `"other", ${etag}`]) {
      const response = await get(`/v2/images/${lib.id}?size=64`, { 'if-none-match': header });
      expect({ header, status: response.status, etag: response.headers.get('etag'), body: await response.text() }).toEqual({
        header,
        status: 304,
        etag,
        body: '',
      });
    }
    const again = await get(`/v2/images/${lib.id}?size=64`, { 'if-none-match': '"something-else"' });
    expect(again.status).toBe(200);
    expect(again.headers.get('etag')).toBe(etag);
    await again.arrayBuffer();
    expect(requestsTo(lib.path)).toBe(before);
    expect(storedFiles(blobDir).length).toBe(files);
  });

  test('concurrent misses of one image fetch the upstream once and store one blob', async () => {
    const before = requestsTo(steam.path);
    const files = storedFiles(blobDir).length;
    const responses = await Promise.all(Array.from({ length: 12 }, () => get(`/v2/images/${steam.id}?size=1000&format=webp`)));
    const etags = await Promise.all(
      responses.map(async (response) => {
        await response.arrayBuffer();
        return `${response.status} ${response.headers.get('etag')}`;
      }),
    );
    expect(new Set(etags).size).toBe(1);
    expect(etags[0]!.startsWith('200 ')).toBe(true);
    expect(requestsTo(steam.path)).toBe(before + 1);
    expect(storedFiles(blobDir).length).toBe(files + 1);
  });

  test('302 to the upstream url with IMAGE_PROXY=false, without fetching it', async () => {
    const direct = createTestApp({ now: clock.now, config: { ...routeConfig, DATABASE_URL: t.deps.config.DATABASE_URL, IMAGE_PROXY: 'false' } });
    try {
      const before = fake.requests.length;
      const response = await direct.request(`/v2/images/${steam.id}?size=300&format=webp`);
      expect({ status: response.status, location: response.headers.get('location'), body: await response.text() }).toEqual({
        status: 302,
        location: `${fake.url}${steam.path}`,
        body: '',
      });
      expect(fake.requests.length).toBe(before);
      await expectError(await direct.request(`/v2/images/${nameless.catalog_id}`), 404, 'image_not_found');
    } finally {
      await direct.close();
    }
  });

  test('400 for a bad size, format, version or catalog id, or an unknown parameter, with the shared error body', async () => {
    for (const query of [
      'size=63',
      'size=1025',
      'size=0',
      'size=-128',
      'size=12.5',
      'size=256.0',
      'size=1e3',
      'size=0x100',
      'size=abc',
      'size=',
      'size=%20256',
      'format=gif',
      'format=PNG',
      'format=',
      'version=phase-9',
      'version=',
      'width=256',
      'size=256&size=512',
    ]) {
      const body = await expectError(await get(`/v2/images/${lib.id}?${query}`), 400, 'invalid_request');
      const fields = ((body.error as { details?: { field: string }[] }).details ?? []).map((detail) => detail.field).join(' ');
      expect({ query, named: /size|format|version|width|query/.test(fields) }).toEqual({ query, named: true });
    }
    await expectError(await get('/v2/images/not-a-catalog-id'), 400, 'invalid_catalog_id');
  });

  test('404 not_found for an unknown catalog id, 404 image_not_found for an item without an image', async () => {
    await expectError(await get(`/v2/images/${unknownId}`), 404, 'not_found');
    await expectError(await get(`/v2/images/${nameless.catalog_id}?size=512`), 404, 'image_not_found');
  });

  test('503 image_unavailable with Retry-After for every upstream fault, nothing stored, no other 5xx; then 200 once the fault clears', async () => {
    const files = storedFiles(blobDir).length;
    for (const kind of IMAGE_FAULT_KINDS) {
      fake.fault(faulty.path, kind);
      const response = await get(`/v2/images/${faulty.id}?size=256`);
      const body = await expectError(response, 503, 'image_unavailable');
      expect({ kind, retryAfter: Number(response.headers.get('retry-after')) > 0, message: JSON.stringify(body).includes(fake.url) }).toEqual({
        kind,
        retryAfter: true,
        message: false,
      });
      expect({ kind, stored: storedFiles(blobDir).length }).toEqual({ kind, stored: files });
      // Within FAILURE_TTL_MS the failure is answered from memory, without asking the upstream.
      const before = requestsTo(faulty.path);
      await expectError(await get(`/v2/images/${faulty.id}?size=512&format=webp`), 503, 'image_unavailable');
      expect(requestsTo(faulty.path)).toBe(before);
      clock.advance(FAILURE_TTL_MS + 1);
    }
    fake.fault(faulty.path, null);
    const response = await get(`/v2/images/${faulty.id}?size=256`);
    expect(response.status).toBe(200);
    await expectFakeImage(new Uint8Array(await response.arrayBuffer()), faulty.path, 256, 'png');
    expect(storedFiles(blobDir).length).toBe(files + 1);
  }, 30_000);

  test('hostile path and query values are a 4xx with the shared error body', async () => {
    const megabyte = 'a'.repeat(1024 * 1024);
    const paths = ['%00', 'itm_%00', '%ED%A0%80', '%FF', encodeURIComponent(megabyte), '..%2F..%2Fetc%2Fpasswd'];
    const queries = [
      'version=%00',
      'version=%ED%A0%80',
      `version=${megabyte}`,
      `size=${megabyte}`,
      'size=%00',
      'format=%ED%A0%80',
      `format=${megabyte}`,
      `${megabyte}=1`,
      'zz%00=1',
    ];
    const answers = [
      ...(await Promise.all(paths.map((path) => get(`/v2/images/${path}`)))),
      ...(await Promise.all(queries.map((query) => get(`/v2/images/${lib.id}?${query}`)))),
    ];
    for (const [index, response] of answers.entries()) {
      const text = await response.text();
      const body = JSON.parse(text) as { error?: { code?: string; request_id?: string } };
      expect({
        index,
        status: response.status >= 400 && response.status < 500,
        code: typeof body.error?.code,
        requestId: typeof body.error?.request_id,
      }).toEqual({
        index,
        status: true,
        code: 'string',
        requestId: 'string',
      });
    }
  });

  test('429 rate_limited past IMAGE_RATE_LIMIT requests a minute from one address (a budget apart from the prices’)', async () => {
    const limited = createTestApp({
      now: clock.now,
      config: { ...routeConfig, DATABASE_URL: t.deps.config.DATABASE_URL, IMAGE_RATE_LIMIT: '2', PUBLIC_PRICES_RATE_LIMIT: '1' },
    });
    try {
      await limited.deps.ready();
      const address = `198.51.100.${1 + Math.floor(Math.random() * 250)}`;
      const headers = { 'x-forwarded-for': address };
      const statuses: number[] = [];
      for (let attempt = 0; attempt < 3; attempt++) {
        const response = await limited.request(`/v2/images/${lib.id}`, { headers });
        statuses.push(response.status);
        if (response.status === 429) {
          expect(response.headers.get('retry-after')).toBeTruthy();
          expect(((await response.json()) as { error: { code: string } }).error.code).toBe('rate_limited');
        } else await response.arrayBuffer();
      }
      expect(statuses).toEqual([200, 200, 429]);
      // The prices' budget is another one: one keyless price read still passes from the same address.
      expect((await limited.request('/v1/prices', { headers })).status).not.toBe(429);
    } finally {
      await limited.close();
    }
  });
});
