import { afterAll, describe, expect, test } from 'bun:test';
import sharp from 'sharp';
import { parseGlb } from '../../shared/media/glb.ts';
import { expectedColourOf, FAKE_IMAGE_LAYOUT, FAKE_IMAGE_SIZE, PRIVATE_REDIRECT_TARGET, REDIRECT_TARGET_PATH, startImageFake } from '../fakes/images/server.ts';

/** docs/design.md §18: the local image fake serves distinct, deterministic images per path, and faults on demand. */
const fake = startImageFake();
afterAll(() => fake.stop());

const ICON =
  '-9a81dlWLwJ2UUGcVs_nsVtzdOEdtWwKGZZLQHTxDZ7I56KU0Zwwo4NUX4oFJZEHLbXH5ApeO4YmlhxYQknCRvCo04DEVlxkKgpot7HxfDhjxszJemkV09m3hoyOmfL6MrrUqWZU7Mhhj-3--YXygED6_kJlMWygcYOUJlI2Mw3W_wK9wu--1JTptZrMznNr7HVz5XzVnEC1n1gSOfnKpdUE';

async function pixelsOf(body: ArrayBuffer) {
  const { format } = await sharp(Buffer.from(body)).metadata();
  const { data, info } = await sharp(Buffer.from(body)).ensureAlpha().raw().toBuffer({ resolveWithObject: true });
  const at = (fx: number, fy: number) => {
    const offset = (Math.floor(fy * info.height) * info.width + Math.floor(fx * info.width)) * 4;
    return [data[offset]!, data[offset + 1]!, data[offset + 2]!, data[offset + 3]!];
  };
  return { info: { ...info, format }, at };
}

describe('image fake', () => {
  test('a Steam icon is a PNG whose body and band have the colours expectedColourOf gives; the background is transparent', async () => {
    const response = await fetch(`${fake.url}/economy/image/${ICON}`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('image/png');
    const { info, at } = await pixelsOf(await response.arrayBuffer());
    expect(info.format).toBe('png');
    expect([info.width, info.height]).toEqual([FAKE_IMAGE_SIZE.width, FAKE_IMAGE_SIZE.height]);
    const colours = expectedColourOf(`/economy/image/${ICON}`);
    expect(at(0.5, (FAKE_IMAGE_LAYOUT.body.y0 + FAKE_IMAGE_LAYOUT.body.y1) / 2)).toEqual([...colours.primary, 255]);
    expect(at(0.5, (FAKE_IMAGE_LAYOUT.band.y0 + FAKE_IMAGE_LAYOUT.band.y1) / 2)).toEqual([...colours.secondary, 255]);
    expect(at(0.02, 0.05)[3]).toBe(0);
  });

  test('Steam’s sized form is the same icon at that width; a full URL names the same colours as its path', async () => {
    const response = await fetch(`${fake.url}/economy/image/${ICON}/128fx128f`);
    const { info, at } = await pixelsOf(await response.arrayBuffer());
    expect([info.width, info.height]).toEqual([128, 96]);
    expect(at(0.5, 0.4).slice(0, 3)).toEqual([...expectedColourOf(`${fake.url}/economy/image/${ICON}`).primary]);
  });

  test('cs2-lib paths are WebP, and every path (each wear variant too) has colours of its own', async () => {
    const paths = ['/images/abc.webp', '/images/abc_light.webp', '/images/abc_medium.webp', '/images/abc_heavy.webp', '/images/def.webp', '/textures/abc.webp'];
    const seen = new Set<string>();
    for (const path of paths) {
      const response = await fetch(`${fake.url}${path}`);
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toBe('image/webp');
      const { info, at } = await pixelsOf(await response.arrayBuffer());
      expect(info.format).toBe('webp');
      expect(at(0.5, 0.4).slice(0, 3)).toEqual([...expectedColourOf(path).primary]);
      seen.add(expectedColourOf(path).primary.join(','));
    }
    expect(seen.size).toBe(paths.length);
  });

  test('a model is a valid GLB; the same path gives the same bytes', async () => {
    const first = new Uint8Array(await (await fetch(`${fake.url}/models/0123abcd.glb`)).arrayBuffer());
    const second = new Uint8Array(await (await fetch(`${fake.url}/models/0123abcd.glb`)).arrayBuffer());
    expect((parseGlb(first).json as { asset: { version: string } }).asset.version).toBe('2.0');
    expect(Buffer.from(first).equals(Buffer.from(second))).toBe(true);
  });

  test('unknown paths answer 404; requests are logged with their time', async () => {
    const before = Date.now();
    expect((await fetch(`${fake.url}/nothing/here.png`)).status).toBe(404);
    expect(fake.requests.at(-1)).toMatchObject({ path: '/nothing/here.png' });
    expect(fake.requests.at(-1)!.at).toBeGreaterThanOrEqual(before);
  });

  test('faults by path or prefix: not_image, error, not_found, redirect, redirect_private, huge; null clears', async () => {
    fake.fault('/images/f_', 'not_image');
    fake.fault('/images/f_error.webp', 'error');
    const html = await fetch(`${fake.url}/images/f_one.webp`);
    expect(html.status).toBe(200);
    expect(html.headers.get('content-type')).toStartWith('text/html');
    expect((await fetch(`${fake.url}/images/f_error.webp`)).status).toBe(500);

    fake.fault('/images/f_one.webp', 'not_found');
    expect((await fetch(`${fake.url}/images/f_one.webp`)).status).toBe(404);
    fake.fault('/images/f_one.webp', 'redirect');
    const redirect = await fetch(`${fake.url}/images/f_one.webp`, { redirect: 'manual' });
    expect(redirect.status).toBe(302);
    expect(redirect.headers.get('location')).toBe(`${fake.url}${REDIRECT_TARGET_PATH}`);
    fake.fault('/images/f_one.webp', 'redirect_private');
    expect((await fetch(`${fake.url}/images/f_one.webp`, { redirect: 'manual' })).headers.get('location')).toBe(PRIVATE_REDIRECT_TARGET);

    fake.fault('/images/f_one.webp', 'huge');
    const huge = await fetch(`${fake.url}/images/f_one.webp`);
    expect(huge.headers.get('content-type')).toBe('image/png');
    let received = 0;
    for await (const chunk of huge.body!) {
      received += chunk.length;
      if (received > 6 * 1024 * 1024) break;
    }
    expect(received).toBeGreaterThan(6 * 1024 * 1024);

    fake.fault('/images/f_', null);
    fake.fault('/images/f_one.webp', null);
    expect((await fetch(`${fake.url}/images/f_one.webp`)).headers.get('content-type')).toBe('image/webp');
    fake.clearFaults();
  });

  test('slow holds the answer (here cut by the client), and faults can be set over HTTP', async () => {
    const set = await fetch(`${fake.url}/_control/faults`, { method: 'POST', body: JSON.stringify({ path: '/images/slow.webp', kind: 'slow' }) });
    expect(set.status).toBe(200);
    const started = performance.now();
    const error = await fetch(`${fake.url}/images/slow.webp`, { signal: AbortSignal.timeout(300) }).then(
      () => null,
      (cause: unknown) => cause,
    );
    expect(error).not.toBeNull();
    expect(performance.now() - started).toBeGreaterThanOrEqual(250);
    expect((await fetch(`${fake.url}/_control/faults`, { method: 'POST', body: JSON.stringify({ path: '/x', kind: 'melt' }) })).status).toBe(400);
    expect((await fetch(`${fake.url}/_control/faults`, { method: 'DELETE' })).status).toBe(200);
    expect((await fetch(`${fake.url}/images/slow.webp`, { signal: AbortSignal.timeout(5_000) })).status).toBe(200);
  });
});
