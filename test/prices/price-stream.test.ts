import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import net from 'node:net';
import { join } from 'node:path';
import type { AnyElysia } from 'elysia';
import { EventSource } from 'eventsource';
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { createApp } from '../../api/app.ts';
import { type AppDeps, createDeps, type PriceStreamOverrides } from '../../api/deps.ts';
import { catalogIdFor } from '../../shared/catalog/identity.ts';
import { createLogger } from '../../shared/platform/logger.ts';
import { createRequestRedis, type Redis } from '../../shared/platform/redis.ts';
import { claimIngestRun, type StagedObservation, writeIngestRun } from '../../shared/prices/ingest.ts';
import {
  appendToPriceStreamLog,
  compareStreamIds,
  type PriceChange,
  type PriceStreamEvent,
  PriceStreamRelay,
  priceStreamKey,
} from '../../shared/prices/stream.ts';
import { PriceStreamHub, type StreamSink } from '../../shared/prices/stream-hub.ts';
import { ingestPool } from '../../workers/ingest/index.ts';
import { type RunningPools, startPools } from '../../workers/runtime.ts';
import { type MarketSimulator, startMarketSimulator } from '../fakes/simulator/server.ts';
import { createTestApp, errorOf, eventually, scratchTestApp, type TestApp, testConfig, workspaceWithKey } from '../helpers.ts';
import { freePort, type PrivateRedis, startPrivateRedis } from '../private-redis.ts';
import { spawnedProcesses, waitForHttp } from '../spawned.ts';
import { removeQueueKeys } from '../webhooks/webhooks-fixtures.ts';

/**
 * The price stream (docs/design.md §15) over real HTTP against the real Redis stream: each app here listens
 * on a port and is read with an SSE client library (eventsource-parser for the raw frames, comments
 * and retry; EventSource for a client's own reconnects). Changes enter the log of record (Postgres)
 * as the ingest side writes them, directly or through writeIngestRun, and are relayed to this file's
 * own QUEUE_PREFIX's Redis stream.
 */
const prefix = `pstream${process.pid}`;
const silent = createLogger({ level: 'silent', name: 'price-stream-test' });
const HEARTBEAT_MS = 300;

type Listening = { deps: AppDeps; url: string; stop: () => Promise<void> };

/** An app on a free loopback port, its hub tuned by `stream`. */
async function listen(
  config: Record<string, string>,
  stream: PriceStreamOverrides = {},
  serve: { idleTimeout?: number; extend?: (app: AnyElysia) => AnyElysia } = {},
): Promise<Listening> {
  const deps = createDeps(testConfig({ QUEUE_PREFIX: prefix, ...config }), { log: silent, priceStream: { heartbeatMs: HEARTBEAT_MS, ...stream } });
  await deps.ready();
  const port = await freePort();
  const app = createApp(deps, serve.extend).listen({ port, hostname: '127.0.0.1', ...(serve.idleTimeout ? { idleTimeout: serve.idleTimeout } : {}) });
  return {
    deps,
    url: `http://127.0.0.1:${port}`,
    stop: async () => {
      await app.stop(true);
      await deps.close();
    },
  };
}

type PricesEvent = { id: string; data: PriceStreamEvent };
type RawStream = {
  status: number;
  response: Response;
  messages: EventSourceMessage[];
  comments: string[];
  retries: number[];
  lastId: string | null;
  ended: boolean;
  prices: () => PricesEvent[];
  gaps: () => { since: string; oldest_available: string | null }[];
  close: () => void;
};

let addresses = 0;

/**
 * A stream read with eventsource-parser: every message, comment, retry and id as it arrives. A
 * keyless stream comes from an address of its own unless `headers` name one (TRUST_PROXY is on in
 * tests), so the per-address cap only meets the test about it.
 */
async function open(url: string, headers: Record<string, string> = {}): Promise<RawStream> {
  const controller = new AbortController();
  addresses += 1;
  const address: Record<string, string> =
    url.includes('/v1/') && !('x-forwarded-for' in headers) ? { 'x-forwarded-for': `10.77.${addresses >> 8}.${addresses & 255}` } : {};
  const response = await fetch(url, { headers: { ...address, ...headers }, signal: controller.signal });
  const stream: RawStream = {
    status: response.status,
    response,
    messages: [],
    comments: [],
    retries: [],
    lastId: null,
    ended: false,
    prices: () =>
      stream.messages
        .filter((message) => message.event === 'prices')
        .map((message) => ({ id: message.id!, data: JSON.parse(message.data) as PriceStreamEvent })),
    gaps: () => stream.messages.filter((message) => message.event === 'gap').map((message) => JSON.parse(message.data)),
    close: () => controller.abort(),
  };
  if (response.status !== 200) return stream;
  const parser = createParser({
    onEvent: (message) => stream.messages.push(message),
    onComment: (comment) => stream.comments.push(comment),
    onRetry: (retry) => stream.retries.push(retry),
  });
  // eventsource-parser 3 (the last for Node 20) does not report a frame that carries only an id, so
  // the last event id (set by every `id:` field without a NUL, SSE 9.2.6) is read off the lines too.
  let partial = '';
  const trackIds = (text: string) => {
    const lines = (partial + text).split(/\r\n|\r|\n/);
    partial = lines.pop()!;
    for (const line of lines) {
      if (!line.startsWith('id:')) continue;
      const id = line.slice(line.startsWith('id: ') ? 4 : 3);
      if (!id.includes('\0')) stream.lastId = id;
    }
  };
  void (async () => {
    const decoder = new TextDecoder();
    try {
      for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
        const text = decoder.decode(chunk, { stream: true });
        trackIds(text);
        parser.feed(text);
      }
    } catch {
      // aborted by close(), or cut off by the server
    }
    stream.ended = true;
  })();
  return stream;
}

/** Waits until `stream` has received `count` prices events and returns them. */
function pricesOf(stream: RawStream, count: number, timeoutMs = 10_000): Promise<PricesEvent[]> {
  return eventually(async () => (stream.prices().length >= count ? stream.prices() : undefined), timeoutMs);
}

const tag = crypto.randomUUID().slice(0, 8);
const item = (index: number) => catalogIdFor(`Price Stream ${tag} ${index}`);
const itemIndex = new Map(Array.from({ length: 400 }, (_, index) => [item(index), index]));
/** A change as `<item index>:<version>:<price>`, for comparing what a stream received. */
const label = (c: PriceChange) => `${itemIndex.get(c.catalog_id)}:${c.version}:${c.price}`;

function change(index: number, price: string, extra: Partial<PriceChange> = {}): PriceChange {
  return { catalog_id: item(index), market_hash_name: `Price Stream ${tag} ${index}`, version: 'default', price, previous_price: null, bid: null, ...extra };
}

let main: Listening;
let t: TestApp;
let ws: Awaited<ReturnType<typeof workspaceWithKey>>;
let commands: Redis;
let relay: PriceStreamRelay;
let runs = 0;

/** Commits one run's changes to the log of record, as writeIngestRun does; returns the entry ids. */
async function commitToLog(changes: PriceChange[], source = 'skinport'): Promise<string[]> {
  runs += 1;
  const run = { runId: `00000000-0000-7000-8000-${String(runs).padStart(12, '0')}`, source, ingestedAt: new Date() };
  return t.deps.sql.begin((tx) => appendToPriceStreamLog(tx, run, changes));
}

/** Commits one run's changes and relays them as the ingest pool does right after a commit; returns the entry ids. */
async function publish(changes: PriceChange[], source = 'skinport'): Promise<string[]> {
  const ids = await commitToLog(changes, source);
  await relay.relay();
  return ids;
}

beforeAll(async () => {
  main = await listen({});
  t = createTestApp({ config: { QUEUE_PREFIX: prefix } });
  ws = await workspaceWithKey(t, { scopes: ['prices:read'] });
  commands = createRequestRedis(main.deps.config.REDIS_URL, 'price-stream-test');
  // No offline queue: commands sent before the connection is up would fail.
  await eventually(async () => (commands.status === 'ready' ? true : undefined));
  relay = new PriceStreamRelay(t.deps.sql, commands, priceStreamKey(prefix), 1_000, silent);
});

afterAll(async () => {
  await main.stop();
  await t.close();
  commands.disconnect();
  await removeQueueKeys(main.deps.config.REDIS_URL, prefix);
});

const keyed = (query = '') => `${main.url}/v2/prices/stream${query}`;
const keyless = (query = '') => `${main.url}/v1/prices/stream${query}`;
const auth = () => ({ 'x-api-key': ws.key });

describe('GET /v2/prices/stream and /v1/prices/stream', () => {
  test('an event stream whose first message sets retry: 3000 and the current position; every change arrives as a prices event of decimal strings', async () => {
    const [before] = await publish([change(0, '1.00')]);
    const stream = await open(keyless());
    expect(stream.status).toBe(200);
    expect(stream.response.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    expect(stream.response.headers.get('cache-control')).toBe('no-store');
    expect(stream.response.headers.get('x-request-id')).toBeTruthy();
    await eventually(async () => (stream.retries.length > 0 ? true : undefined));
    expect(stream.retries).toEqual([3000]);
    // A reconnect before any event resumes from where this connection started.
    expect(stream.lastId).toBe(before!);
    const [id] = await publish([change(1, '12.34', { previous_price: '12.30', bid: '12.10' }), change(2, '0.03')], 'steam');
    const [event] = await pricesOf(stream, 1);
    expect(event!.id).toBe(id!);
    expect(event!.data.source).toBe('steam');
    expect(event!.data.run_id).toMatch(/^00000000-0000-7000-8000-/);
    expect(event!.data.changes).toEqual([change(1, '12.34', { previous_price: '12.30', bid: '12.10' }), change(2, '0.03')]);
    // The fan-out's latency from the append is observed for GET /metrics.
    const fannedOut = (await main.deps.metrics.registry.metrics()).match(/^cs2_price_stream_fanout_seconds_count (\d+)$/m);
    expect(Number(fannedOut?.[1])).toBeGreaterThanOrEqual(1);
    stream.close();
  });

  test('filters: catalog_id (repeated), source and version each get only their changes; an event a filter empties is not sent', async () => {
    const streams = {
      items: await open(keyed(`?catalog_id=${item(10)}&catalog_id=${item(11)}`), auth()),
      single: await open(keyed(`?catalog_id=${item(12)}`), auth()),
      steam: await open(keyed('?source=steam'), auth()),
      phase: await open(keyed('?version=phase-2'), auth()),
      combined: await open(keyed(`?catalog_id=${item(10)}&source=steam&version=default`), auth()),
      all: await open(keyed(), auth()),
    };
    for (const stream of Object.values(streams)) expect(stream.status).toBe(200);
    await eventually(async () => (Object.values(streams).every((stream) => stream.retries.length > 0) ? true : undefined));
    const [skinportRun] = await publish([change(10, '5.00'), change(11, '6.00', { version: 'phase-2' }), change(13, '7.00')], 'skinport');
    const [steamRun] = await publish([change(10, '5.10'), change(13, '7.10', { version: 'phase-2' })], 'steam');
    const [unrelated] = await publish([change(14, '9.99')], 'csfloat');
    // A last event every stream matches: once each has it, nothing before it is still on its way.
    const marker = [change(10, '1.00'), change(12, '1.00'), change(15, '1.00', { version: 'phase-2' })];
    const [markerId] = await publish(marker, 'steam');
    for (const stream of Object.values(streams)) await eventually(async () => (stream.prices().some((event) => event.id === markerId) ? true : undefined));

    const seen = (stream: RawStream): unknown[] => stream.prices().map((event) => [event.id, event.data.changes.map(label)]);
    expect(seen(streams.items)).toEqual([
      [skinportRun, ['10:default:5.00', '11:phase-2:6.00']],
      [steamRun, ['10:default:5.10']],
      [markerId, ['10:default:1.00']],
    ]);
    expect(seen(streams.single)).toEqual([[markerId, ['12:default:1.00']]]);
    expect(seen(streams.steam)).toEqual([
      [steamRun, ['10:default:5.10', '13:phase-2:7.10']],
      [markerId, ['10:default:1.00', '12:default:1.00', '15:phase-2:1.00']],
    ]);
    expect(seen(streams.phase)).toEqual([
      [skinportRun, ['11:phase-2:6.00']],
      [steamRun, ['13:phase-2:7.10']],
      [markerId, ['15:phase-2:1.00']],
    ]);
    expect(seen(streams.combined)).toEqual([
      [steamRun, ['10:default:5.10']],
      [markerId, ['10:default:1.00']],
    ]);
    expect(streams.all.prices().map((event) => event.id)).toEqual([skinportRun!, steamRun!, unrelated!, markerId!]);
    for (const stream of Object.values(streams)) stream.close();
  });

  test('resume after a disconnect, by Last-Event-ID header and by ?last_event_id=: the missed events once each, then live ones', async () => {
    const first = await open(keyed(), auth());
    const [a] = await publish([change(20, '1.00')]);
    await pricesOf(first, 1);
    first.close();
    const missed = [...(await publish([change(20, '1.01')])), ...(await publish([change(21, '2.00')]))];

    const byHeader = await open(keyed(), { ...auth(), 'last-event-id': a! });
    const byQuery = await open(keyless(`?last_event_id=${a}`));
    // The header wins over a stale query (EventSource reconnects with both).
    const both = await open(keyless(`?last_event_id=${missed[0]}`), { 'last-event-id': a! });
    for (const stream of [byHeader, byQuery, both]) expect((await pricesOf(stream, 2)).map((event) => event.id)).toEqual(missed);
    const live = await publish([change(22, '3.00')]);
    for (const stream of [byHeader, byQuery, both]) {
      expect((await pricesOf(stream, 3)).map((event) => event.id)).toEqual([...missed, ...live]);
      expect(stream.gaps()).toEqual([]);
      stream.close();
    }
  });

  test('the replay/live seam: events published while a long replay runs arrive once each, in order', async () => {
    const [start] = await publish([change(30, '1.00')]);
    const replayed: string[] = [];
    for (let run = 0; run < 60; run += 1) replayed.push(...(await publish([change(31, `1.${String(run).padStart(2, '0')}`)])));
    const stream = await open(keyless(), { 'last-event-id': start! });
    const during: string[] = [];
    for (let run = 0; run < 20; run += 1) during.push(...(await publish([change(32, `2.${String(run).padStart(2, '0')}`)])));
    const events = await pricesOf(stream, replayed.length + during.length);
    expect(events.map((event) => event.id)).toEqual([...replayed, ...during]);
    stream.close();
  });

  test('a resumed filtered stream whose filter matched nothing in the replay still moves its Last-Event-ID to the end', async () => {
    const [start] = await publish([change(40, '1.00')]);
    await publish([change(41, '1.00')]);
    const [end] = await publish([change(41, '1.10')]);
    const stream = await open(keyed(`?catalog_id=${item(40)}`), { ...auth(), 'last-event-id': start! });
    await eventually(async () => (stream.lastId === end ? true : undefined));
    expect(stream.prices()).toEqual([]);
    stream.close();
  });

  test('an id older than the retained window gets one gap event, then live events', async () => {
    const [oldest] = await publish([change(50, '1.00')]);
    // The window is 1 000 changes: three runs of 600 push the first entries out.
    for (let run = 0; run < 3; run += 1) await publish(Array.from({ length: 600 }, (_, index) => change(100 + index, `3.${run}0`)));
    const [retainedFirst] = (await commands.xrange(priceStreamKey(prefix), '-', '+', 'COUNT', 1)) as [string, string[]][];
    expect(retainedFirst![0]).not.toBe(oldest);
    const stream = await open(keyless(), { 'last-event-id': oldest! });
    await eventually(async () => (stream.gaps().length === 1 ? true : undefined));
    expect(stream.gaps()).toEqual([{ since: oldest!, oldest_available: retainedFirst![0] }]);
    expect(stream.prices()).toEqual([]);
    const live = await publish([change(51, '1.00')]);
    expect((await pricesOf(stream, 1)).map((event) => event.id)).toEqual(live);
    expect(stream.gaps()).toHaveLength(1);
    stream.close();
  });

  test('the stream keeps the newest whole entries holding at least PRICE_STREAM_RETAIN changes, entries of up to 500', async () => {
    const key = `${prefix}:retain-check`;
    const small = new PriceStreamRelay(t.deps.sql, commands, key, 1_000, silent);
    const ids = await commitToLog(Array.from({ length: 1_201 }, (_, index) => change(index, '1.00')));
    expect(ids).toHaveLength(3); // 500 + 500 + 201
    await small.relay();
    for (let run = 0; run < 30; run += 1) {
      await commitToLog(Array.from({ length: 37 }, (_, index) => change(index, '2.00')));
      await small.relay();
    }
    await relay.relay();
    const entries = (await commands.xrange(key, '-', '+')) as [string, string[]][];
    const counts = entries.map(([, fields]) => Number(fields[fields.indexOf('n') + 1]));
    const retained = counts.reduce((sum, n) => sum + n, 0);
    expect(retained).toBeGreaterThanOrEqual(1_000);
    // Without its oldest entry the stream would hold fewer than 1 000 changes.
    expect(retained - counts[0]!).toBeLessThan(1_000);
    await commands.del(key);
  });

  test('a malformed event id or filter is a 400 with the shared error body', async () => {
    const cases: [string, Record<string, string>][] = [
      [keyless(), { 'last-event-id': 'abc' }],
      [keyless(), { 'last-event-id': '1-2-3' }],
      [keyed(), { ...auth(), 'last-event-id': '184467440737095516160-0' }],
      [keyless('?last_event_id=1-'), {}],
      [keyless('?last_event_id=1%002-0'), {}],
      [keyless(`?last_event_id=${'9'.repeat(5_000)}-0`), {}],
      [keyless('?other=1'), {}],
      [keyed('?catalog_id=itm_nope'), auth()],
      [keyed('?catalog_id=%00'), auth()],
      [keyed(`?${Array.from({ length: 101 }, (_, index) => `catalog_id=${item(index)}`).join('&')}`), auth()],
      [keyed('?source=nowhere'), auth()],
      [keyed('?version=phase-9'), auth()],
      [keyed(`?version=${'x'.repeat(10_000)}`), auth()],
    ];
    for (const [url, headers] of cases) {
      const response = await fetch(url, { headers });
      expect({ url: url.slice(0, 120), status: response.status }).toEqual({ url: url.slice(0, 120), status: 400 });
      const error = await errorOf(response);
      expect(error.code).toBe('invalid_request');
      expect(error.request_id).toBe(response.headers.get('x-request-id')!);
    }
    // 100 catalog ids are fine.
    const hundred = await open(keyed(`?${Array.from({ length: 100 }, (_, index) => `catalog_id=${item(index)}`).join('&')}`), auth());
    expect(hundred.status).toBe(200);
    hundred.close();
  });

  test('the keyed stream needs a key with prices:read (401, 403) and is metered once per connection', async () => {
    const missing = await fetch(keyed());
    expect(missing.status).toBe(401);
    expect((await errorOf(missing)).code).toBe('unauthorized');
    const other = await workspaceWithKey(t, { scopes: ['catalog:read'] });
    const forbidden = await fetch(keyed(), { headers: other.keyHeaders });
    expect(forbidden.status).toBe(403);
    expect((await errorOf(forbidden)).code).toBe('insufficient_scope');

    const metered = await workspaceWithKey(t, { scopes: ['prices:read', 'usage:read'] });
    const stream = await open(keyed(), metered.keyHeaders);
    expect(stream.response.headers.get('ratelimit')).toBeTruthy();
    await publish([change(60, '1.00')]);
    await publish([change(60, '1.01')]);
    await pricesOf(stream, 2);
    const usage = (await (await t.request('/v2/usage', { headers: metered.keyHeaders })).json()) as {
      key: { operations: { operation: string; requests: number; units: number }[] };
    };
    expect(usage.key.operations.find((entry) => entry.operation === 'prices.stream')).toMatchObject({ requests: 1, units: 5 });
    stream.close();
  });

  test('keyless: at most 2 open streams per client address (429 too_many_streams), released when one closes', async () => {
    const address = { 'x-forwarded-for': '203.0.113.77' };
    const first = await open(keyless(), address);
    const second = await open(keyless(), address);
    expect([first.status, second.status]).toEqual([200, 200]);
    const third = await fetch(keyless(), { headers: address });
    expect(third.status).toBe(429);
    expect(third.headers.get('retry-after')).toBe('3');
    expect((await errorOf(third)).code).toBe('too_many_streams');
    const elsewhere = await open(keyless(), { 'x-forwarded-for': '203.0.113.78' });
    expect(elsewhere.status).toBe(200);
    const before = main.deps.priceStream.size;
    first.close();
    await eventually(async () => (main.deps.priceStream.size === before - 1 ? true : undefined));
    const again = await open(keyless(), address);
    expect(again.status).toBe(200);
    for (const stream of [second, elsewhere, again]) stream.close();
    await eventually(async () => (main.deps.priceStream.size === before - 3 ? true : undefined));
  });

  test('a silent connection gets a comment line every heartbeat (here 300 ms), with the position a filter skipped past', async () => {
    const stream = await open(keyed(`?catalog_id=${item(70)}`), auth());
    await eventually(async () => (stream.comments.length >= 2 ? true : undefined));
    expect(stream.comments.every((comment) => comment.trim() === 'keep-alive')).toBe(true);
    // An event this filter empties is not sent, but the next heartbeat moves Last-Event-ID past it.
    const [skipped] = await publish([change(71, '1.00')]);
    await eventually(async () => (stream.lastId === skipped ? true : undefined));
    expect(stream.prices()).toEqual([]);
    stream.close();
  });

  test("Bun's idle timeout does not cut a quiet stream", async () => {
    // A server that drops idle connections after 1 s (Bun checks every few seconds), a heartbeat too
    // slow to keep the stream busy, and a request that never gets an answer to show the timeout at work.
    const quiet = await listen(
      {},
      { heartbeatMs: 60_000 },
      { idleTimeout: 1, extend: (app) => app.get('/test/never', () => new Promise<never>(() => undefined), { detail: { hide: true } }) },
    );
    try {
      const stream = await open(`${quiet.url}/v1/prices/stream`);
      await eventually(async () => (stream.retries.length > 0 ? true : undefined));
      // Dropped for idleness: once it is, the stream (opened before it) has been quiet as long.
      const dropped = await fetch(`${quiet.url}/test/never`).then(
        () => false,
        () => true,
      );
      expect(dropped).toBe(true);
      const live = await publish([change(80, '1.00')]);
      expect((await pricesOf(stream, 1)).map((event) => event.id)).toEqual(live);
      expect(stream.ended).toBe(false);
      stream.close();
    } finally {
      await quiet.stop();
    }
  }, 20_000);

  test('a client that leaves more than 1 MiB unread is disconnected and removed from the fan-out; it resumes', async () => {
    const port = Number(new URL(main.url).port);
    const before = main.deps.priceStream.size;
    const socket = net.connect(port, '127.0.0.1');
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
    let closed = false;
    socket.on('close', () => {
      closed = true;
    });
    socket.on('error', () => undefined);
    socket.write('GET /v1/prices/stream HTTP/1.1\r\nHost: localhost\r\nX-Forwarded-For: 198.51.100.9\r\n\r\n');
    // Read the head, then stop reading: the socket's buffers fill, then the process's queue.
    const head = await new Promise<string>((resolve) => socket.once('data', (chunk) => resolve(chunk.toString())));
    expect(head).toStartWith('HTTP/1.1 200');
    socket.pause();
    await eventually(async () => (main.deps.priceStream.size === before + 1 ? true : undefined));
    const cutOffBefore = main.deps.priceStream.cutOff;
    const bulky = Array.from({ length: 2_000 }, (_, index) => change(1_000 + index, '123456.78', { previous_price: '123456.77', bid: '123456.70' }));
    let lastRun: string[] = [];
    await eventually(
      async () => {
        lastRun = await publish(bulky);
        return main.deps.priceStream.cutOff > cutOffBefore ? true : undefined;
      },
      30_000,
      0,
    );
    await eventually(async () => (main.deps.priceStream.size === before ? true : undefined));
    socket.resume();
    await eventually(async () => (closed ? true : undefined));
    // Its address's slot is free again, and it resumes (within the window: the last run's newest 1 000 changes).
    expect(lastRun).toHaveLength(4);
    const resumed = await open(keyless(), { 'x-forwarded-for': '198.51.100.9', 'last-event-id': lastRun[2]! });
    expect(resumed.status).toBe(200);
    expect((await pricesOf(resumed, 1)).map((event) => event.id)).toEqual([lastRun[3]!]);
    expect(resumed.gaps()).toEqual([]);
    resumed.close();
  }, 30_000);

  test('EventSource resumes by itself after the server ends the stream, with nothing lost or repeated', async () => {
    const other = await listen({});
    let target = other.url;
    const seen: string[] = [];
    const source = new EventSource(`${other.url}/v1/prices/stream`, {
      // Each (re)connection goes to whichever API process is current.
      fetch: (input, init) => fetch(String(input).replace(/^http:\/\/127\.0\.0\.1:\d+/, target), init),
    });
    source.addEventListener('prices', (event) => seen.push((event as MessageEvent).lastEventId));
    try {
      await eventually(async () => (source.readyState === EventSource.OPEN ? true : undefined));
      const before = await publish([change(90, '1.00')]);
      await eventually(async () => (seen.length === 1 ? true : undefined));
      // The process stops (its streams end); the client reconnects 3 s later to the main one.
      target = main.url;
      await other.stop();
      const during = await publish([change(90, '1.01')]);
      await eventually(async () => (seen.length === 2 ? true : undefined), 15_000);
      const after = await publish([change(90, '1.02')]);
      await eventually(async () => (seen.length === 3 ? true : undefined));
      expect(seen).toEqual([...before, ...during, ...after]);
    } finally {
      source.close();
    }
  }, 20_000);
});

describe('the relay on a log of its own', () => {
  test('copies every entry once, in position order, across positions of different lengths (9 → 10, 99 → 100) in one page', async () => {
    const scratch = await scratchTestApp({ tag: 'stream_relay' });
    const key = `${prefix}:relay-order`;
    try {
      const committed: string[] = [];
      for (let run = 0; run < 105; run += 1) {
        const ids = await scratch.deps.sql.begin((tx) =>
          appendToPriceStreamLog(tx, { runId: crypto.randomUUID(), source: 'steam', ingestedAt: new Date() }, [change(run % 400, '1.00')]),
        );
        committed.push(...ids);
      }
      expect(committed[0]).toBe('1-0');
      const own = new PriceStreamRelay(scratch.deps.sql, commands, key, 1_000, silent);
      expect(await own.relay()).toBe(105);
      expect(await own.relay()).toBe(0);
      const relayed = ((await commands.xrange(key, '-', '+')) as [string, string[]][]).map(([id]) => id);
      expect(relayed).toEqual(committed);
    } finally {
      await commands.del(key);
      await scratch.close();
    }
  }, 30_000);
});

describe('the process-wide limit on queued bytes (PRICE_STREAM_MAX_BUFFERED_BYTES)', () => {
  /**
   * A client as the hub sees it (a response body): one that reads takes every byte at once; one that
   * has stopped reading keeps everything queued. When the hub cuts a client off, the client records
   * what it held and the most any client still connected held at that moment.
   */
  class Client implements StreamSink {
    queued = 0;
    text = '';
    cut: { held: number; mostOfOthers: number } | null = null;
    constructor(
      readonly reads: boolean,
      private readonly all: Client[],
    ) {}
    write(bytes: Uint8Array): number {
      if (this.cut) return 0;
      if (this.reads) {
        this.text += new TextDecoder().decode(bytes);
        return 0;
      }
      this.queued += bytes.byteLength;
      return this.queued;
    }
    get buffered() {
      return this.cut ? 0 : this.queued;
    }
    drained() {
      return Promise.resolve();
    }
    abort() {
      const mostOfOthers = Math.max(0, ...this.all.filter((other) => other !== this && !other.cut).map((other) => other.queued));
      this.cut = { held: this.queued, mostOfOthers };
      this.queued = 0;
    }
    end() {
      this.abort();
    }
  }

  test('many slow readers never hold more than the limit together: the slowest are cut off first, readers keep everything', async () => {
    const key = `${prefix}:cap-check`;
    const capRelay = new PriceStreamRelay(t.deps.sql, commands, key, 1_000, silent);
    // The log's window first, so the clients below start from the current position.
    await capRelay.relay();
    const limit = 256 * 1024;
    const hub = new PriceStreamHub({ redisUrl: main.deps.config.REDIS_URL, commands, key, log: silent, maxTotalBufferedBytes: limit, heartbeatMs: 60_000 });
    const clients: Client[] = [];
    const all = { catalogIds: null, source: null, version: null };
    try {
      const readers = [new Client(true, clients), new Client(true, clients)];
      for (const reader of readers) {
        clients.push(reader);
        await hub.open(all, reader, null);
      }
      const published: string[] = [];
      // 200 clients that stop reading, joining ten at a time between entries: the earlier ones hold more.
      for (let wave = 0; wave < 20; wave += 1) {
        for (let index = 0; index < 10; index += 1) {
          const client = new Client(false, clients);
          clients.push(client);
          await hub.open(all, client, null);
        }
        const ids = await commitToLog([change(wave, `${wave + 1}.00`, { previous_price: `${wave}.99`, bid: `${wave}.90` })]);
        await capRelay.relay();
        published.push(...ids);
        for (const reader of readers) await eventually(async () => (reader.text.includes(`id: ${ids[0]}\n`) ? true : undefined));
        // After every fanned-out entry, everything queued in the process fits under the limit.
        expect(hub.bufferedBytes).toBeLessThanOrEqual(limit);
      }
      const cut = clients.filter((client) => client.cut);
      expect(cut.length).toBeGreaterThan(0);
      expect(hub.cutOff).toBe(cut.length);
      // Slowest first: none was cut while another connected client held more than it.
      for (const client of cut) expect(client.cut!.held).toBeGreaterThanOrEqual(client.cut!.mostOfOthers);
      // Those that read took every entry, in order, and were never cut.
      for (const reader of readers) {
        expect(reader.cut).toBeNull();
        expect([...reader.text.matchAll(/^id: (\S+)\nevent: prices$/gm)].map((match) => match[1])).toEqual(published);
      }
    } finally {
      await hub.close();
      await commands.del(key);
    }
  }, 30_000);
});

describe('through writeIngestRun', () => {
  const itemIds: string[] = [];
  const sources: string[] = [];

  afterAll(async () => {
    if (sources.length > 0) await t.deps.sql`delete from price_sources where name in ${t.deps.sql(sources)}`;
    if (itemIds.length > 0) await t.deps.sql`delete from latest_prices where catalog_id in ${t.deps.sql(itemIds)}`;
    if (itemIds.length > 0) await t.deps.sql`delete from catalog_items where catalog_id in ${t.deps.sql(itemIds)}`;
  });

  async function catalogItems(count: number): Promise<{ id: string; name: string }[]> {
    const rows = Array.from({ length: count }, (_, index) => ({ name: `Price Stream Ingest ${tag} ${index}` })).map(({ name }) => ({
      id: catalogIdFor(name),
      name,
    }));
    await t.deps
      .sql`insert into catalog_items (catalog_id, market_hash_name, type) select * from unnest(${rows.map((row) => row.id)}::text[], ${rows.map((row) => row.name)}::text[], ${rows.map(() => 'sticker')}::text[])`;
    itemIds.push(...rows.map((row) => row.id));
    return rows;
  }

  const observation = (catalogId: string, price: string, at: Date, bid: string | null = null): StagedObservation => ({
    catalog_id: catalogId,
    version: 'default',
    price,
    median_price: null,
    bid,
    quantity: 1,
    source_time: at,
  });

  async function run(source: string, slot: number, rows: StagedObservation[], withRelay: PriceStreamRelay) {
    const runId = (await claimIngestRun(t.deps.sql, source, slot, new Date()))!;
    const result = await writeIngestRun(t.deps.sql, {
      runId,
      source,
      rows,
      ingestedAt: new Date(),
      staleAfterSeconds: 600,
      received: rows.length,
      skipped: 0,
      unknownNames: 0,
      relay: withRelay,
    });
    return { runId, ...result };
  }

  test("a committed run's changes arrive with names, previous prices and bids; a rolled-back run sends nothing; a failed relay delays a committed run's changes, never drops them", async () => {
    const source = `ps_${crypto.randomUUID().slice(0, 8)}`;
    sources.push(source);
    const [a, b] = await catalogItems(2);
    const stream = await open(keyless());
    await eventually(async () => (stream.retries.length > 0 ? true : undefined));

    const first = await run(
      source,
      1,
      [observation(a!.id, '10.50', new Date(Date.now() - 60_000), '10.00'), observation(b!.id, '2.00', new Date(Date.now() - 60_000))],
      relay,
    );
    const second = await run(source, 2, [observation(a!.id, '10.75', new Date()), observation(b!.id, '2.00', new Date())], relay);
    expect([first.changed, second.changed]).toEqual([2, 1]);
    // Fails inside its transaction (an item the catalog does not have, after a change was staged): rolled back, never announced.
    const unknown = catalogIdFor(`Price Stream Ingest ${tag} not in the catalog`);
    await expect(run(source, 3, [observation(a!.id, '11.00', new Date()), observation(unknown, '1.00', new Date())], relay)).rejects.toThrow();
    // Redis unreachable for the relay after the commit: the run commits, and its entry waits in the log.
    const unreachable = createRequestRedis(`redis://127.0.0.1:${await freePort()}`, 'price-stream-test-down');
    unreachable.on('error', () => undefined);
    const failing = new PriceStreamRelay(t.deps.sql, unreachable, priceStreamKey(prefix), 1_000, silent);
    const delayed = await run(source, 4, [observation(b!.id, '2.50', new Date())], failing);
    unreachable.disconnect();
    expect(delayed.changed).toBe(1);
    expect(failing.failures).toBe(1);
    const [stored] = await t.deps.sql<{ price: string }[]>`select price::text as price from latest_prices where catalog_id = ${b!.id} and source = ${source}`;
    expect(stored!.price).toBe('2.50');
    // The next relay (here the next run's) appends it, before its own entry.
    const marker = await publish([change(0, '1.00')], 'steam');

    await eventually(async () => (stream.prices().some((event) => event.id === marker[0]) ? true : undefined));
    const events = stream.prices().filter((event) => event.data.source === source);
    expect(events.map((event) => event.data)).toEqual([
      {
        run_id: first.runId,
        source,
        changes: [
          { catalog_id: a!.id, market_hash_name: a!.name, version: 'default', price: '10.50', previous_price: null, bid: '10.00' },
          { catalog_id: b!.id, market_hash_name: b!.name, version: 'default', price: '2.00', previous_price: null, bid: null },
        ].sort((x, y) => x.catalog_id.localeCompare(y.catalog_id)),
      },
      {
        run_id: second.runId,
        source,
        changes: [{ catalog_id: a!.id, market_hash_name: a!.name, version: 'default', price: '10.75', previous_price: '10.50', bid: null }],
      },
      {
        run_id: delayed.runId,
        source,
        changes: [{ catalog_id: b!.id, market_hash_name: b!.name, version: 'default', price: '2.50', previous_price: '2.00', bid: null }],
      },
    ]);
    // Once each, in commit order.
    const ids = stream.prices().map((event) => event.id);
    expect(ids.slice(ids.indexOf(first.streamIds[0]!))).toEqual([...first.streamIds, ...second.streamIds, ...delayed.streamIds, ...marker]);
    stream.close();
  }, 20_000);
});

describe('Redis restarted empty', () => {
  let redis: PrivateRedis;
  let app: Listening;
  let privateCommands: Redis;
  let privateRelay: PriceStreamRelay;

  beforeAll(async () => {
    redis = await startPrivateRedis();
    app = await listen({ REDIS_URL: redis.url });
    privateCommands = createRequestRedis(redis.url, 'price-stream-test-private');
    privateCommands.on('error', () => undefined);
    privateRelay = new PriceStreamRelay(t.deps.sql, privateCommands, priceStreamKey(prefix), 1_000, silent);
    await eventually(async () => (privateCommands.status === 'ready' ? true : undefined));
    // The log so far, relayed into this Redis.
    await privateRelay.relay();
  });

  afterAll(async () => {
    await app.stop();
    privateCommands.disconnect();
    await redis.kill();
  });

  /** Commits to the log and relays into the private Redis; the relay may fail while Redis is down. */
  async function publishPrivately(changes: PriceChange[]): Promise<string[]> {
    const ids = await commitToLog(changes);
    await privateRelay.relaySafely();
    return ids;
  }

  test('changes committed while Redis is down or empty reach live and resuming clients once each, in order, with no gap', async () => {
    const live = await open(`${app.url}/v1/prices/stream`);
    const before = await publishPrivately([change(0, '1.00')]);
    await pricesOf(live, 1);

    await redis.kill();
    // Committed while Redis is down: the relay fails, the log keeps them.
    const whileDown = [...(await publishPrivately([change(0, '1.10')])), ...(await publishPrivately([change(1, '2.00')]))];
    await redis.restart();
    await eventually(async () => (privateCommands.status === 'ready' ? true : undefined));
    // Redis is back empty: the next relay fills it from the log, then appends the new change.
    const after = await eventually(async () => {
      const ids = await commitToLog([change(0, '1.20')]);
      await privateRelay.relay();
      return ids;
    });
    const expected = [...before, ...whileDown, ...after];
    expect((await pricesOf(live, expected.length)).map((event) => event.id)).toEqual(expected);
    expect(live.gaps()).toEqual([]);
    // A client resuming from before the restart gets everything after its id, as if Redis had never gone.
    const resumed = await open(`${app.url}/v1/prices/stream`, { 'last-event-id': before[0]! });
    expect((await pricesOf(resumed, whileDown.length + after.length)).map((event) => event.id)).toEqual([...whileDown, ...after]);
    expect(resumed.gaps()).toEqual([]);
    for (const stream of [live, resumed]) stream.close();
  }, 30_000);

  test('a hole that still happens (Redis lost and the log trimmed) is a gap event, live and on resume, never silence', async () => {
    const live = await open(`${app.url}/v1/prices/stream`);
    const [seen] = await publishPrivately([change(2, '1.00')]);
    await pricesOf(live, 1);
    await redis.kill();
    const [lost] = await publishPrivately([change(2, '1.10')]);
    const [kept] = await publishPrivately([change(2, '1.20')]);
    // Retention dropped the lost entry's part of the log before Redis came back.
    await t.deps.sql`delete from price_stream where position = ${Number(lost!.split('-')[0])}`;
    await redis.restart();
    await eventually(async () => (privateCommands.status === 'ready' ? true : undefined));
    await eventually(async () => ((await privateRelay.relay()) > 0 ? true : undefined));
    expect((await pricesOf(live, 2)).map((event) => event.id)).toEqual([seen!, kept!]);
    expect(live.gaps()).toHaveLength(1);
    expect(live.gaps()[0]!.since).toBe(seen!);
    // The gap came before the event after the hole.
    expect(live.messages.map((message) => message.event)).toEqual(['prices', 'gap', 'prices']);
    const resumed = await open(`${app.url}/v1/prices/stream`, { 'last-event-id': lost! });
    await eventually(async () => (resumed.gaps().length === 1 ? true : undefined));
    expect(resumed.gaps()[0]!.since).toBe(lost!);
    for (const stream of [live, resumed]) stream.close();
  }, 30_000);
});

describe('two API processes', () => {
  const processes = spawnedProcesses();
  let urls: string[] = [];

  beforeAll(async () => {
    const ports = [await freePort(), await freePort()];
    for (const port of ports) processes.spawn(['api/main.ts'], { PORT: String(port), QUEUE_PREFIX: prefix });
    urls = ports.map((port) => `http://127.0.0.1:${port}`);
    await Promise.all(urls.map((url) => waitForHttp(`${url}/v2/health`)));
  }, 40_000);

  afterAll(async () => {
    await processes.stopAll();
  }, 20_000);

  test('each process fans out every change once, in order; a client resuming on the other process gets the same replay', async () => {
    const [a, b] = urls as [string, string];
    // Entries other suites committed to the log are relayed first, so only this test's arrive below.
    await relay.relay();
    const onA = await open(`${a}/v1/prices/stream`);
    const onB = await open(`${b}/v2/prices/stream`, auth());
    await eventually(async () => (onA.retries.length > 0 && onB.retries.length > 0 ? true : undefined));
    const published: string[] = [];
    // Two committers, each relaying after its commit, as two ingest processes would.
    const second = new PriceStreamRelay(t.deps.sql, t.deps.redis, priceStreamKey(prefix), 1_000, silent);
    const publishBySecond = async (changes: PriceChange[]) => {
      const ids = await commitToLog(changes, 'steam');
      await second.relay();
      return ids;
    };
    for (let run = 0; run < 10; run += 1) {
      const ids = await Promise.all([publish([change(200 + run, '1.00')]), publishBySecond([change(300 + run, '2.00')])]);
      published.push(...ids.flat());
    }
    const ordered = [...published].sort(compareStreamIds);
    expect((await pricesOf(onA, 20)).map((event) => event.id)).toEqual(ordered);
    expect((await pricesOf(onB, 20)).map((event) => event.id)).toEqual(ordered);
    const lastSeen = onA.prices()[4]!.id;
    onA.close();
    onB.close();

    const missed = ordered.slice(5);
    const resumedOnB = await open(`${b}/v1/prices/stream`, { 'last-event-id': lastSeen });
    const resumedOnA = await open(`${a}/v1/prices/stream`, { 'last-event-id': lastSeen });
    const replayB = await pricesOf(resumedOnB, missed.length);
    const replayA = await pricesOf(resumedOnA, missed.length);
    expect(replayB.map((event) => event.id)).toEqual(missed);
    expect(replayB).toEqual(replayA);
    resumedOnA.close();
    resumedOnB.close();
  }, 30_000);
});

describe('the ingest pool', () => {
  let simulator: MarketSimulator;
  let pools: RunningPools;
  const names = Array.from({ length: 20 }, (_, index) => `Sticker | Price Stream Pool ${tag} ${index}`);
  const writerNames = Array.from({ length: 3 }, (_, index) => `Sticker | Price Stream Writer ${tag} ${index}`);
  const writerSources: string[] = [];

  beforeAll(async () => {
    const all = [...names, ...writerNames];
    await t.deps.sql`
      insert into catalog_items (catalog_id, market_hash_name, type)
      select catalog_id, name, 'sticker' from unnest(${all.map(catalogIdFor)}::text[], ${all}::text[]) as item (catalog_id, name)`;
    simulator = startMarketSimulator({ items: names.map((name) => ({ market_hash_name: name, phases: [] })), bucketSeconds: 2 });
    const config = testConfig({
      QUEUE_PREFIX: prefix,
      SOURCES: 'skinport',
      SOURCE_SKINPORT_URL: `${simulator.url}/skinport`,
      SOURCE_SKINPORT_INTERVAL_SECONDS: '1',
      FX_URL: `${simulator.url}/fx`,
    });
    pools = await startPools([ingestPool], config, silent);
  });

  afterAll(async () => {
    await pools.stop(5_000);
    await simulator.stop();
    await t.deps.sql`delete from latest_prices where catalog_id in ${t.deps.sql([...names, ...writerNames].map(catalogIdFor))}`;
    if (writerSources.length > 0) await t.deps.sql`delete from price_sources where name in ${t.deps.sql(writerSources)}`;
  });

  /** Runs test/prices/price-stream-writer.ts (another ingest process) and returns the entries it committed. */
  async function writer(input: Record<string, unknown>): Promise<{ streamIds: string[]; signal: string | null }> {
    const child = Bun.spawn(['bun', join(import.meta.dir, 'price-stream-writer.ts'), JSON.stringify(input)], {
      env: { ...process.env, QUEUE_PREFIX: prefix },
      stdout: 'pipe',
      stderr: 'inherit',
    });
    const output = await new Response(child.stdout).text();
    await child.exited;
    return {
      ...(JSON.parse(output.trim().split('\n').at(-1)!) as { streamIds: string[] }),
      signal: child.signalCode === null ? null : String(child.signalCode),
    };
  }

  test("appends each committed run's changes to the stream the API reads (one QUEUE_PREFIX)", async () => {
    const stream = await open(keyed('?source=skinport'), auth());
    await eventually(async () => (stream.retries.length > 0 ? true : undefined));
    const ours = new Set(names.map(catalogIdFor));
    const event = await eventually(async () => stream.prices().find((candidate) => candidate.data.changes.some((c) => ours.has(c.catalog_id))), 20_000);
    const [run] = await t.deps.sql<{ status: string }[]>`select status from ingest_runs where id = ${event.data.run_id}`;
    expect(run!.status).toBe('succeeded');
    for (const c of event.data.changes.filter((candidate) => ours.has(candidate.catalog_id))) {
      expect(names).toContain(c.market_hash_name);
      expect(c.price).toMatch(/^\d+(\.\d+)?$/);
    }
    stream.close();
  }, 30_000);

  test('a run whose process was killed between its commit and its relay still reaches clients: the pool relays it from the log', async () => {
    const source = `ps_${crypto.randomUUID().slice(0, 8)}`;
    writerSources.push(source);
    const stream = await open(keyed(`?catalog_id=${catalogIdFor(writerNames[0]!)}`), auth());
    await eventually(async () => (stream.retries.length > 0 ? true : undefined));
    const died = await writer({
      mode: 'die-after-commit',
      source,
      catalogIds: [catalogIdFor(writerNames[0]!)],
      slotBase: 9_000_000 + (process.pid % 1_000) * 100,
      prices: ['4.56'],
    });
    expect(died.signal).toBe('SIGKILL');
    expect(died.streamIds).toHaveLength(1);
    const [event] = await pricesOf(stream, 1, 15_000);
    expect(event!.id).toBe(died.streamIds[0]!);
    expect(event!.data.changes.map((c) => c.price)).toEqual(['4.56']);
    stream.close();
  }, 30_000);

  test('two processes committing overlapping runs of one source: every client sees each change once, in commit order', async () => {
    const source = `ps_${crypto.randomUUID().slice(0, 8)}`;
    writerSources.push(source);
    const itemId = catalogIdFor(writerNames[1]!);
    const stream = await open(keyed(`?catalog_id=${itemId}`), auth());
    await eventually(async () => (stream.retries.length > 0 ? true : undefined));
    const slotBase = 8_000_000 + (process.pid % 1_000) * 100;
    const [a, b] = await Promise.all([
      writer({ mode: 'runs', source, catalogIds: [itemId], slotBase, runs: 12, prices: ['1.01', '1.02', '1.03'] }),
      writer({ mode: 'runs', source, catalogIds: [itemId], slotBase: slotBase + 50, runs: 12, prices: ['2.01', '2.02', '2.03'] }),
    ]);
    const committed = [...a!.streamIds, ...b!.streamIds].sort(compareStreamIds);
    expect(committed.length).toBeGreaterThan(2);
    const events = await pricesOf(stream, committed.length, 15_000);
    expect(events.map((event) => event.id)).toEqual(committed);
    // Commit order: each change's previous price is the price the change before it set.
    const changes = events.flatMap((event) => event.data.changes.filter((c) => c.catalog_id === itemId));
    for (let index = 1; index < changes.length; index += 1) expect(changes[index]!.previous_price).toBe(changes[index - 1]!.price);
    // A client resuming from the first of them gets the same, once each.
    const resumed = await open(keyed(`?catalog_id=${itemId}`), { ...auth(), 'last-event-id': committed[0]! });
    expect((await pricesOf(resumed, committed.length - 1)).map((event) => event.id)).toEqual(committed.slice(1));
    for (const open of [stream, resumed]) open.close();
  }, 60_000);
});

describe('Redis unreachable', () => {
  test('a new stream is a 503 price_stream_unavailable with Retry-After, keyless and keyed', async () => {
    // An app whose Redis is a port nobody listens on: the stream cannot be read at all.
    const deps = createDeps(testConfig({ QUEUE_PREFIX: prefix, REDIS_URL: `redis://127.0.0.1:${await freePort()}` }), { log: silent });
    deps.redis.on('error', () => undefined);
    const app = createApp(deps);
    try {
      const response = await app.handle(new Request('http://localhost/v1/prices/stream', { headers: { 'x-forwarded-for': '10.99.0.1' } }));
      expect(response.status).toBe(503);
      expect((await errorOf(response)).code).toBe('price_stream_unavailable');
      expect(response.headers.get('retry-after')).toBe('3');
      // Keyed: a key that cannot even be checked or metered without Redis is a 503 too, never a stream.
      const keyed = await app.handle(new Request('http://localhost/v2/prices/stream', { headers: { 'x-api-key': ws.key } }));
      expect(keyed.status).toBe(503);
      expect(['price_stream_unavailable', 'usage_unavailable']).toContain((await errorOf(keyed)).code);
    } finally {
      await deps.close();
    }
  }, 20_000);
});
