import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { connect, type Socket } from 'node:net';
import { encodeBody, type PublicPriceList } from '../../shared/prices/public-document.ts';
import { insertPriceSnapshot } from '../../shared/prices/repository.ts';
import { errorOf, eventually, scratchTestApp, type TestApp } from '../helpers.ts';

/**
 * GET /v1/prices through real HTTP (the app listening on a port): bodies streamed from the
 * snapshot's shared buffers, and the per-address cap on concurrent downloads. A reader that stops
 * reading only holds a download open if the body is larger than what the kernel buffers on both
 * ends absorb (several MB on loopback), so the suite stores one large synthetic snapshot in its own
 * database instead of building one from a handful of test prices.
 */
const CAP = 2;
const ITEMS = 60_000;
let t: TestApp;
let base: string;
let port: number;
let stored: { etag: string; json: Buffer; gzip: Buffer; br: Buffer };
const sockets: Socket[] = [];

beforeAll(async () => {
  t = await scratchTestApp({ tag: 'public_downloads', config: { PUBLIC_PRICES_MAX_DOWNLOADS_PER_CLIENT: String(CAP) } });
  const pad = 'x'.repeat(200);
  const items = Array.from({ length: ITEMS }, (_, index) => {
    const price = `${1 + (index % 997)}.${String(index % 100).padStart(2, '0')}`;
    const source = index % 3 === 0 ? 'skinport' : 'steam';
    return {
      market_hash_name: `Synthetic item ${String(index).padStart(6, '0')} ${pad}`,
      catalog_id: `itm_synthetic${index}`,
      sources: { [source]: { price, source_time: '2030-01-01T00:00:00.000Z' } },
      min: price,
      median: price,
      max: price,
      consensus: { price, best_ask: price, best_bid: null, sources: 1, outliers: [], spread: null },
    };
  });
  const list: PublicPriceList = { currency: 'USD', item_count: ITEMS, oldest_input_at: '2030-01-01T00:00:00.000Z', items };
  const body = await encodeBody(JSON.stringify(list), { brotliQuality: 1, gzipLevel: 1 });
  stored = body;
  await insertPriceSnapshot(t.deps.sql, {
    created_at: new Date(),
    etag: body.etag,
    item_count: ITEMS,
    oldest_input_at: new Date('2030-01-01T00:00:00.000Z'),
    body: body.json,
    body_gzip: body.gzip,
    body_br: body.br,
  });
  const server = t.app.listen({ port: 0, hostname: '127.0.0.1' }).server!;
  port = server.port!;
  base = `http://127.0.0.1:${port}`;
  // A scratch database, and a 60 000-item list built and compressed: ~3–5 s on a 2-core machine.
}, 30_000);

afterAll(async () => {
  for (const socket of sockets) socket.destroy();
  await t.app.stop(true);
  await t.close();
});

let addressCounter = 0;
const newAddress = () => `203.0.113.${(addressCounter += 1)}`;

/** Asks for the identity list and stops reading after the first bytes; resolves with the status. */
function slowReader(address: string): { socket: Socket; status: Promise<number> } {
  const socket = connect(port, '127.0.0.1');
  sockets.push(socket);
  const status = new Promise<number>((resolve, reject) => {
    socket.once('connect', () => socket.write(`GET /v1/prices HTTP/1.1\r\nhost: test\r\nx-forwarded-for: ${address}\r\naccept-encoding: identity\r\n\r\n`));
    socket.once('data', (chunk: Buffer) => {
      socket.pause();
      resolve(Number(/^HTTP\/1\.1 (\d{3})/.exec(chunk.toString('latin1'))?.[1] ?? 0));
    });
    socket.once('error', reject);
  });
  return { socket, status };
}

const download = async (address: string, headers: Record<string, string> = {}) => {
  const response = await fetch(`${base}/v1/prices`, { headers: { 'x-forwarded-for': address, ...headers }, decompress: false });
  return { response, bytes: Buffer.from(await response.arrayBuffer()) };
};

/** Fills the address's slots with slow readers and checks that one more is refused. */
async function expectExactlyCapAdmitted(address: string) {
  const readers = Array.from({ length: CAP }, () => slowReader(address));
  expect(await Promise.all(readers.map((reader) => reader.status))).toEqual(Array(CAP).fill(200));
  const { response } = await download(address);
  expect(response.status).toBe(429);
  return readers;
}

describe('GET /v1/prices over HTTP', () => {
  test('every encoding of the full list and of each source list is byte-identical to the snapshot buffers', async () => {
    const address = newAddress();
    for (const [encoding, expected, contentEncoding] of [
      ['identity', stored.json, null],
      ['gzip', stored.gzip, 'gzip'],
      ['br', stored.br, 'br'],
    ] as const) {
      const { response, bytes } = await download(address, { 'accept-encoding': encoding });
      expect([response.status, response.headers.get('content-encoding'), response.headers.get('etag')]).toEqual([200, contentEncoding, stored.etag]);
      expect(response.headers.get('content-type')).toBe('application/json');
      expect(bytes.equals(expected)).toBe(true);
    }
    const snapshot = (await t.deps.priceSnapshots.current())!;
    for (const source of ['skinport', 'steam']) {
      const body = await snapshot.derivedBody(source, null);
      for (const [encoding, expected] of [
        ['identity', body.json],
        ['gzip', body.gzip],
        ['br', body.br],
      ] as const) {
        const response = await fetch(`${base}/v1/prices?source=${source}`, {
          headers: { 'x-forwarded-for': address, 'accept-encoding': encoding },
          decompress: false,
        });
        expect(response.headers.get('etag')).toBe(body.etag);
        expect(Buffer.from(await response.arrayBuffer()).equals(expected)).toBe(true);
      }
    }
  }, 30_000); // every encoding of the full list and of each source list: 3.9–4.3 s alone on this 2-core machine, over 5 s once in a full run

  test('beyond the per-address cap a download is 429 too_many_concurrent_downloads with Retry-After; other addresses and 304s are unaffected', async () => {
    const address = newAddress();
    const readers = await expectExactlyCapAdmitted(address);
    const { response } = await download(address);
    expect(response.status).toBe(429);
    expect(response.headers.get('retry-after')).toBe('2');
    expect(response.headers.get('cache-control')).toBe('no-store');
    expect(response.headers.get('content-type')).toBe('application/json');
    const refused = await fetch(`${base}/v1/prices?source=steam`, { headers: { 'x-forwarded-for': address } });
    expect(refused.status).toBe(429);
    const error = await errorOf(refused);
    expect(error.code).toBe('too_many_concurrent_downloads');
    expect(error.message).toContain(`At most ${CAP} downloads`);
    expect(error.request_id).toBe(refused.headers.get('x-request-id')!);
    // A revalidation sends no body, so it needs no slot.
    expect((await download(address, { 'if-none-match': stored.etag })).response.status).toBe(304);
    const other = newAddress();
    expect((await download(other, { 'accept-encoding': 'br' })).response.status).toBe(200);
    for (const reader of readers) reader.socket.destroy();
  });

  test('a slot is released when the client disconnects mid-download', async () => {
    const address = newAddress();
    const readers = await expectExactlyCapAdmitted(address);
    readers[0]!.socket.destroy();
    // The server learns of the disconnect asynchronously: poll until the freed slot admits a download.
    const { bytes } = await eventually(async () => {
      const attempt = await download(address, { 'accept-encoding': 'br' });
      return attempt.response.status === 200 ? attempt : undefined;
    });
    expect(bytes.equals(stored.br)).toBe(true);
    readers[1]!.socket.destroy();
    await eventually(async () => ((await download(address, { 'accept-encoding': 'br' })).response.status === 200 ? true : undefined));
    // Both slots are free again, and no more than that (a double release would admit a third reader).
    for (const reader of await expectExactlyCapAdmitted(address)) reader.socket.destroy();
  });

  test('a slot is released when a download completes, so a client may download again at once', async () => {
    const address = newAddress();
    for (let round = 0; round < CAP + 3; round += 1) {
      const { response, bytes } = await download(address, { 'accept-encoding': round % 2 ? 'gzip' : 'identity' });
      expect(response.status).toBe(200);
      expect(bytes.length).toBe(round % 2 ? stored.gzip.length : stored.json.length);
    }
    for (const reader of await expectExactlyCapAdmitted(address)) reader.socket.destroy();
  });

  test('a client aborting its request mid-body releases the slot', async () => {
    const address = newAddress();
    for (let round = 0; round < CAP + 1; round += 1) {
      const controller = new AbortController();
      const response = await eventually(async () => {
        const attempt = await fetch(`${base}/v1/prices`, { headers: { 'x-forwarded-for': address }, signal: controller.signal, decompress: false });
        if (attempt.status === 200) return attempt;
        await attempt.arrayBuffer();
        return undefined;
      });
      const reader = response.body!.getReader();
      await reader.read();
      controller.abort();
      await reader.cancel().catch(() => undefined);
    }
    await eventually(async () => ((await download(address, { 'accept-encoding': 'br' })).response.status === 200 ? true : undefined));
    for (const reader of await expectExactlyCapAdmitted(address)) reader.socket.destroy();
  });
});
