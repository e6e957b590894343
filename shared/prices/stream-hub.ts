import { Redis } from 'ioredis';
import type { Logger } from '../platform/logger.ts';
import { compareStreamIds, type PriceChange, type PriceStreamEvent, parseStreamEntry, type StreamEntry } from './stream.ts';

/**
 * The API side of the price stream (docs/design.md §15): each API process reads the Redis stream once, with
 * XREAD BLOCK on a connection of its own, and fans every entry out in memory to its open
 * Server-Sent Events connections, filtered per connection. Resumes (Last-Event-ID) are replayed
 * with XRANGE on the process's ordinary Redis connection, then joined to the live fan-out with
 * neither a duplicate nor a hole (see `replay`).
 *
 * Frames are built once per entry and filter and shared by every connection with that filter: the
 * keyless stream and unfiltered keyed streams all write the same bytes.
 */

/** docs/design.md §15: the first message tells clients to reconnect after 3 s. */
export const RETRY_MS = 3_000;
/** docs/design.md §15: a comment line whenever a connection has been silent this long. */
export const HEARTBEAT_MS = 15_000;
/** docs/design.md §15: a client with more than this queued in the process (beyond what its socket took) is cut off; it resumes. */
export const MAX_BUFFERED_BYTES = 1024 * 1024;
/**
 * Issue 29: at most this much queued for all of a process's stream clients together
 * (PRICE_STREAM_MAX_BUFFERED_BYTES); past it the slowest clients (most queued) are cut off first.
 * Without it 10 000 clients each just under the per-client limit could hold ~10 GB.
 */
export const MAX_TOTAL_BUFFERED_BYTES = 64 * 1024 * 1024;
/** Replay waits for the client to take its bytes down to this before writing the next entry. */
const REPLAY_LOW_MARK_BYTES = 256 * 1024;
/** Entries per XRANGE page of a replay (each up to 500 changes). */
const REPLAY_PAGE_SIZE = 50;
/** How long one XREAD waits for new entries before it is sent again. */
const READ_BLOCK_MS = 5_000;
/** Entries per XREAD. */
const READ_COUNT = 100;
const ERROR_LOG_INTERVAL_MS = 30_000;

/** What a connection asks for; null means any. */
export type StreamFilter = { catalogIds: readonly string[] | null; source: string | null; version: string | null };

/** Where a connection's bytes go: the HTTP response body (api/routes/price-stream.ts). */
export interface StreamSink {
  /** Queues bytes for the client; returns the bytes queued in this process that the socket has not taken yet. */
  write(bytes: Uint8Array): number;
  /** Bytes queued in this process that the socket has not taken yet. */
  readonly buffered: number;
  /** Resolves once the client took its queued bytes down to the sink's low mark, or the sink closed. */
  drained(): Promise<void>;
  /** Ends the response at once, dropping what is queued (a slow client). */
  abort(): void;
  /** Ends the response after what is queued (this process is shutting down). */
  end(): void;
}

export type PriceStreamHubOptions = {
  redisUrl: string;
  /** For XRANGE replays (shared/platform/redis.ts createRequestRedis): the reader's connection is blocked in XREAD. */
  commands: Redis;
  key: string;
  log: Logger;
  heartbeatMs?: number;
  maxBufferedBytes?: number;
  /** The process-wide limit (MAX_TOTAL_BUFFERED_BYTES). */
  maxTotalBufferedBytes?: number;
  blockMs?: number;
  /** A connection was cut off for being slow (a metric). */
  onCutOff?: () => void;
  /** An entry was fanned out to every live connection, this many seconds after its run committed (a metric). */
  onFannedOut?: (seconds: number) => void;
};

/** Thrown by `open` when the stream cannot be read at all (Redis unreachable): the route answers 503. */
export class PriceStreamUnavailableError extends Error {}

type Filter = { catalogIds: Set<string> | null; source: string | null; version: string | null; key: string };

class Connection {
  /** In the fan-out (false while replaying). */
  live = false;
  closed = false;
  /** The last id written to the client (an event's or a bare `id:` line's). */
  sentId: string | null = null;
  /** After a replay: live entries up to this id were replayed already (the hub may still be behind). */
  skipThrough: string | null = null;
  lastWriteAt: number;
  /** Bytes queued for the client when last seen (at its last write, or the last count of every connection's). */
  queued = 0;
  /**
   * Joined the fan-out with no entry of its own behind it (fresh, or right after a gap event), at
   * this count of entries fanned out: a hole the hub finds before its next entry is none of its
   * business (the client never had anything before it).
   */
  joinedWithoutPosition: number | null = null;

  constructor(
    readonly filter: Filter,
    readonly sink: StreamSink,
    now: number,
  ) {
    this.lastWriteAt = now;
  }
}

/** An entry as the fan-out handles it: its changes parsed at most once, its frames built once per filter. */
type Dispatched = { entry: StreamEntry; event: PriceStreamEvent | null | undefined; frames: Map<string, Uint8Array | null> };

const encoder = new TextEncoder();

function normaliseFilter(filter: StreamFilter): Filter {
  const catalogIds = filter.catalogIds && filter.catalogIds.length > 0 ? [...new Set(filter.catalogIds)].sort() : null;
  return {
    catalogIds: catalogIds ? new Set(catalogIds) : null,
    source: filter.source,
    version: filter.version,
    key: `${filter.source ?? '*'}|${filter.version ?? '*'}|${catalogIds?.join(',') ?? '*'}`,
  };
}

/** Parses an entry's data once; null for data this code did not write (skipped, logged by the caller). */
function eventOf(dispatched: Dispatched): PriceStreamEvent | null {
  if (dispatched.event === undefined) {
    try {
      const parsed = JSON.parse(dispatched.entry.data) as PriceStreamEvent;
      dispatched.event = parsed && typeof parsed.source === 'string' && Array.isArray(parsed.changes) ? parsed : null;
    } catch {
      dispatched.event = null;
    }
  }
  return dispatched.event;
}

function eventFrame(id: string, data: string): Uint8Array {
  // JSON.stringify never emits a raw line break, so the data fits on one `data:` line.
  return encoder.encode(`id: ${id}\nevent: prices\ndata: ${data}\n\n`);
}

function gapFrame(since: string, oldestAvailable: string | null): Uint8Array {
  return encoder.encode(`event: gap\ndata: ${JSON.stringify({ since, oldest_available: oldestAvailable })}\n\n`);
}

/** The entry's frame for a filter, or null when the filter leaves no change (nothing is sent). */
function frameFor(dispatched: Dispatched, filter: Filter): Uint8Array | null {
  const cached = dispatched.frames.get(filter.key);
  if (cached !== undefined) return cached;
  let frame: Uint8Array | null;
  if (filter.catalogIds === null && filter.source === null && filter.version === null) {
    frame = eventFrame(dispatched.entry.id, dispatched.entry.data);
  } else {
    const event = eventOf(dispatched);
    if (event === null || (filter.source !== null && event.source !== filter.source)) {
      frame = null;
    } else {
      const changes = event.changes.filter(
        (change: PriceChange) =>
          (filter.version === null || change.version === filter.version) && (filter.catalogIds === null || filter.catalogIds.has(change.catalog_id)),
      );
      frame = changes.length === 0 ? null : eventFrame(dispatched.entry.id, JSON.stringify({ run_id: event.run_id, source: event.source, changes }));
    }
  }
  dispatched.frames.set(filter.key, frame);
  return frame;
}

const dispatchedOf = (entry: StreamEntry): Dispatched => ({ entry, event: undefined, frames: new Map() });

export type StreamSubscription = { close: () => void };

export class PriceStreamHub {
  private readonly reader: Redis;
  private readonly heartbeatMs: number;
  private readonly maxBufferedBytes: number;
  private readonly maxTotalBufferedBytes: number;
  /**
   * The bytes queued for every connection as last seen: an upper bound, as sockets take bytes
   * without telling the hub. When it passes the process-wide limit every connection is counted
   * afresh (enforceTotalLimit).
   */
  private queuedEstimate = 0;
  private readonly blockMs: number;
  private readonly connections = new Set<Connection>();
  /** Live connections without a catalog_id filter, by filter key: one frame per group and entry. */
  private readonly groups = new Map<string, Set<Connection>>();
  /** Live connections with a catalog_id filter, by each of their catalog ids. */
  private readonly byCatalogId = new Map<string, Set<Connection>>();
  /** The newest entry fanned out ('0-0' for an empty stream); null until the stream was first read. */
  private lastId: string | null = null;
  private lastSeq = 0;
  /** Entries fanned out since this process started. */
  private dispatched = 0;
  private starting: Promise<void> | null = null;
  private stopped = false;
  private heartbeat: ReturnType<typeof setInterval> | null = null;
  private lastErrorLogAt = Number.NEGATIVE_INFINITY;
  /** Connections cut off for being slow, since this process started. */
  cutOff = 0;

  constructor(private readonly options: PriceStreamHubOptions) {
    this.heartbeatMs = options.heartbeatMs ?? HEARTBEAT_MS;
    this.maxBufferedBytes = options.maxBufferedBytes ?? MAX_BUFFERED_BYTES;
    this.maxTotalBufferedBytes = options.maxTotalBufferedBytes ?? MAX_TOTAL_BUFFERED_BYTES;
    this.blockMs = options.blockMs ?? READ_BLOCK_MS;
    // A blocking reader: no command timeout, and commands wait for a reconnect instead of failing.
    this.reader = new Redis(options.redisUrl, {
      connectionName: 'api-price-stream',
      lazyConnect: true,
      maxRetriesPerRequest: null,
      retryStrategy: (attempt) => Math.min(attempt * 200, 2_000),
    });
    this.reader.on('error', (error) => this.logError(error, 'price stream reader: redis error'));
  }

  /** Open connections (the `price_stream_connections` gauge). */
  get size(): number {
    return this.connections.size;
  }

  /** Bytes queued in this process for all its stream clients together, counted now. */
  get bufferedBytes(): number {
    let total = 0;
    for (const connection of this.connections) total += connection.sink.buffered;
    return total;
  }

  /**
   * Opens a connection: writes the first message (`retry:`, and for a fresh connection the id of
   * the newest entry, so a reconnect resumes from here), then either joins the fan-out at once or,
   * with `lastEventId`, replays what came after it and then joins. Throws PriceStreamUnavailableError
   * before writing anything when the stream cannot be read (the route answers 503).
   */
  async open(filter: StreamFilter, sink: StreamSink, lastEventId: string | null): Promise<StreamSubscription> {
    await this.start();
    const connection = new Connection(normaliseFilter(filter), sink, performance.now());
    const subscription = { close: () => this.remove(connection) };
    if (lastEventId === null) {
      this.connections.add(connection);
      const position = this.lastId !== null && this.lastId !== '0-0' ? this.lastId : null;
      this.write(connection, encoder.encode(`retry: ${RETRY_MS}\n${position ? `id: ${position}\n` : ''}\n`));
      if (position) connection.sentId = position;
      this.join(connection, null);
      return subscription;
    }
    // Registered before the first read, so nothing published from now on can fall between the replay and the fan-out.
    this.connections.add(connection);
    const readMark = this.lastId;
    let first: ReplayPage;
    try {
      first = await this.page(lastEventId);
    } catch (error) {
      this.connections.delete(connection);
      this.logError(error, 'price stream: replay read failed');
      throw new PriceStreamUnavailableError('the price stream cannot be read');
    }
    this.write(connection, encoder.encode(`retry: ${RETRY_MS}\n\n`));
    const resumed = first.entries[0];
    if (resumed === undefined || resumed.id !== lastEventId) {
      // Older than the window, from before a Redis restart, or never issued: say so, then live.
      this.write(connection, gapFrame(lastEventId, first.oldest));
      void this.catchUp(connection, first.newest, [], readMark);
    } else {
      void this.catchUp(connection, resumed, first.entries.slice(1), readMark);
    }
    return subscription;
  }

  /** Stops reading and ends every connection (their clients reconnect, to another process). */
  async close(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    if (this.heartbeat) clearInterval(this.heartbeat);
    for (const connection of [...this.connections]) {
      this.remove(connection);
      connection.sink.end();
    }
    this.reader.disconnect();
  }

  private start(): Promise<void> {
    if (this.stopped) return Promise.reject(new PriceStreamUnavailableError('the price stream is shutting down'));
    this.starting ??= (async () => {
      try {
        if (this.reader.status === 'wait') await this.reader.connect();
        const newest = await this.newestEntry(this.options.commands);
        this.lastId = newest?.id ?? '0-0';
        this.lastSeq = newest?.seq ?? 0;
      } catch (error) {
        this.starting = null;
        this.logError(error, 'price stream: cannot read the stream');
        throw new PriceStreamUnavailableError('the price stream cannot be read');
      }
      void this.readLoop();
      const tick = Math.max(10, Math.min(1_000, Math.floor(this.heartbeatMs / 4)));
      this.heartbeat = setInterval(() => this.beat(), tick);
      this.heartbeat.unref?.();
    })();
    return this.starting;
  }

  private async newestEntry(redis: Redis): Promise<StreamEntry | null> {
    const [raw] = (await redis.xrevrange(this.options.key, '+', '-', 'COUNT', 1)) as [string, string[]][];
    return raw ? parseStreamEntry(raw) : null;
  }

  private async readLoop(): Promise<void> {
    while (!this.stopped) {
      try {
        const result = (await this.reader.xread('COUNT', READ_COUNT, 'BLOCK', this.blockMs, 'STREAMS', this.options.key, this.lastId!)) as
          | [string, [string, string[]][]][]
          | null;
        if (this.stopped) return;
        for (const raw of result?.[0]?.[1] ?? []) {
          const entry = parseStreamEntry(raw);
          if (entry === null) {
            this.options.log.warn({ id: raw[0] }, 'price stream: skipped an entry it cannot read');
            this.lastId = raw[0];
            continue;
          }
          if (entry.seq - entry.n !== this.lastSeq) await this.announceLiveGap(entry);
          this.dispatch(entry);
          if (this.connections.size > 0 && entry.at !== null) this.options.onFannedOut?.(Math.max(0, Date.now() - entry.at) / 1000);
          // Bun takes whatever a response has queued when it next writes: letting it write between
          // entries keeps a burst (a full-catalog run) from piling up in every queue at once, where
          // it would look like a slow client.
          if (this.connections.size > 0) await new Promise((resolve) => setImmediate(resolve));
        }
      } catch (error) {
        if (this.stopped) return;
        this.logError(error, 'price stream: read failed; retrying');
        await Bun.sleep(500);
      }
    }
  }

  /**
   * Entries were lost between the last one fanned out and `entry` (a Redis that restarted empty, or
   * this process fell behind the retained window): every live connection gets a gap event.
   */
  private async announceLiveGap(entry: StreamEntry): Promise<void> {
    let oldest: string | null = entry.id;
    try {
      const [raw] = (await this.options.commands.xrange(this.options.key, '-', '+', 'COUNT', 1)) as [string, string[]][];
      oldest = raw?.[0] ?? entry.id;
    } catch {
      // The entry itself is retained, and is the best answer at hand.
    }
    for (const connection of this.connections) {
      if (!connection.live || this.lastId === null) continue;
      // Replayed past the fan-out's position (its own replay checked continuity), or joined with
      // nothing to lose since: no gap for it.
      if (connection.skipThrough !== null || connection.joinedWithoutPosition === this.dispatched) continue;
      this.write(connection, gapFrame(this.lastId, oldest));
    }
  }

  private dispatch(entry: StreamEntry): void {
    this.lastId = entry.id;
    this.lastSeq = entry.seq;
    this.dispatched += 1;
    if (this.connections.size === 0) return;
    this.fanOut(dispatchedOf(entry));
    this.enforceTotalLimit();
  }

  private fanOut(dispatched: Dispatched): void {
    const entry = dispatched.entry;
    for (const group of this.groups.values()) {
      const first = group.values().next().value;
      if (first === undefined) continue;
      const frame = frameFor(dispatched, first.filter);
      if (frame === null) continue;
      for (const connection of group) this.deliver(connection, entry.id, frame);
    }
    if (this.byCatalogId.size === 0) return;
    const event = eventOf(dispatched);
    if (event === null) return;
    // Each watcher's changes, collected in one pass over the entry through the catalog id index.
    const matched = new Map<Connection, PriceChange[]>();
    for (const change of event.changes) {
      const watchers = this.byCatalogId.get(change.catalog_id);
      if (watchers === undefined) continue;
      for (const connection of watchers) {
        const { source, version } = connection.filter;
        if ((source !== null && source !== event.source) || (version !== null && version !== change.version)) continue;
        const changes = matched.get(connection);
        if (changes) changes.push(change);
        else matched.set(connection, [change]);
      }
    }
    for (const [connection, changes] of matched) {
      let frame = dispatched.frames.get(connection.filter.key);
      if (frame === undefined) {
        frame = eventFrame(entry.id, JSON.stringify({ run_id: event.run_id, source: event.source, changes }));
        dispatched.frames.set(connection.filter.key, frame);
      }
      if (frame !== null) this.deliver(connection, entry.id, frame);
    }
  }

  private deliver(connection: Connection, id: string, frame: Uint8Array): void {
    if (connection.skipThrough !== null) {
      if (compareStreamIds(id, connection.skipThrough) <= 0) return;
      connection.skipThrough = null;
    }
    this.write(connection, frame);
    connection.sentId = id;
  }

  private write(connection: Connection, bytes: Uint8Array): void {
    if (connection.closed) return;
    const queued = connection.sink.write(bytes);
    connection.lastWriteAt = performance.now();
    this.queuedEstimate += queued - connection.queued;
    connection.queued = queued;
    // docs/design.md §15: a client that does not keep up is disconnected; it resumes from its last id.
    if (queued > this.maxBufferedBytes) this.cut(connection);
  }

  private cut(connection: Connection): void {
    this.cutOff += 1;
    this.options.onCutOff?.();
    this.remove(connection);
    connection.sink.abort();
  }

  /**
   * The process-wide limit (issue 29): once the estimate passes it, every connection's queue is
   * counted afresh, and while the real total is over the limit the connections holding the most are
   * cut off, the slowest first (they resume with Last-Event-ID). Called after each fanned-out entry
   * and each replayed one, not per write: a count costs one look at every connection.
   */
  private enforceTotalLimit(): void {
    if (this.queuedEstimate <= this.maxTotalBufferedBytes) return;
    let total = 0;
    for (const connection of this.connections) {
      connection.queued = connection.sink.buffered;
      total += connection.queued;
    }
    if (total > this.maxTotalBufferedBytes) {
      const slowestFirst = [...this.connections].sort((a, b) => b.queued - a.queued);
      for (const connection of slowestFirst) {
        if (total <= this.maxTotalBufferedBytes) break;
        total -= connection.queued;
        this.cut(connection);
      }
    }
    this.queuedEstimate = total;
  }

  /**
   * Replays `entries` (after `from`, the entry the client has) and pages on with XRANGE until the
   * stream holds nothing newer and the fan-out has sent nothing newer either, then joins the fan-out
   * in that same turn of the event loop: everything up to `from` came from the replay, everything
   * after it comes from the fan-out (which skips what the replay already sent, should it be behind).
   * A hole in `seq` (entries trimmed while paging, or Redis restarted) ends the replay with a gap.
   */
  private async catchUp(connection: Connection, from: StreamEntry | null, entries: StreamEntry[], fannedOutAtRead: string | null): Promise<void> {
    let position = from;
    let batch = entries;
    // The fan-out's position when the last read was sent: with nothing read (an empty stream), the
    // fan-out must not have moved since, or what it sent in between would be missed.
    let readMark = fannedOutAtRead;
    let emptyReads = 0;
    try {
      for (;;) {
        for (const entry of batch) {
          if (connection.closed) return;
          if (position !== null && entry.seq - entry.n !== position.seq) {
            readMark = this.lastId;
            const [oldest, newest] = await Promise.all([this.oldestId(), this.newestEntry(this.options.commands)]);
            this.write(connection, gapFrame(position.id, oldest));
            position = newest;
            batch = [];
            break;
          }
          const frame = frameFor(dispatchedOf(entry), connection.filter);
          if (frame !== null) {
            if (connection.sink.buffered > REPLAY_LOW_MARK_BYTES) await connection.sink.drained();
            if (connection.closed) return;
            this.write(connection, frame);
            connection.sentId = entry.id;
            this.enforceTotalLimit();
          }
          position = entry;
        }
        if (connection.closed) return;
        if (batch.length === 0) {
          const caughtUp = position === null ? this.lastId === readMark : this.lastId === null || compareStreamIds(this.lastId, position.id) <= 0;
          // A stream whose ids went backwards (a Redis clock reset) would never catch up: after a
          // few empty reads the fan-out takes over anyway.
          if (caughtUp || emptyReads >= 3) {
            this.join(connection, position?.id ?? null);
            return;
          }
          emptyReads += 1;
        }
        readMark = this.lastId;
        batch = (await this.page(position ? `(${position.id}` : '-')).entries;
      }
    } catch (error) {
      // Redis went away mid-replay: end the response; the client resumes from what it has.
      this.logError(error, 'price stream: replay failed');
      this.remove(connection);
      connection.sink.end();
    }
  }

  /** One XRANGE page from `start`, with the oldest and newest retained entries, read atomically. */
  private async page(start: string): Promise<ReplayPage> {
    const key = this.options.key;
    const replies = await this.options.commands
      .multi()
      .xrange(key, start, '+', 'COUNT', REPLAY_PAGE_SIZE)
      .xrange(key, '-', '+', 'COUNT', 1)
      .xrevrange(key, '+', '-', 'COUNT', 1)
      .exec();
    if (!replies) throw new Error('the replay transaction was discarded');
    for (const [error] of replies) if (error) throw error;
    const [range, oldest, newest] = replies.map(([, value]) => value as [string, string[]][]);
    const entries = range!.map(parseStreamEntry).filter((entry): entry is StreamEntry => entry !== null);
    return { entries, oldest: oldest![0]?.[0] ?? null, newest: newest![0] ? parseStreamEntry(newest![0]) : null };
  }

  private async oldestId(): Promise<string | null> {
    const [raw] = (await this.options.commands.xrange(this.options.key, '-', '+', 'COUNT', 1)) as [string, string[]][];
    return raw?.[0] ?? null;
  }

  /** Into the fan-out; `position` is the last entry the client has (the fan-out skips up to it). */
  private join(connection: Connection, position: string | null): void {
    if (connection.closed) return;
    connection.live = true;
    if (position === null) connection.joinedWithoutPosition = this.dispatched;
    if (position !== null && this.lastId !== null && compareStreamIds(position, this.lastId) > 0) connection.skipThrough = position;
    // The client's Last-Event-ID moves to where it stands even when its filter left the replay empty.
    if (position !== null && position !== connection.sentId) {
      this.write(connection, encoder.encode(`id: ${position}\n\n`));
      connection.sentId = position;
    }
    const ids = connection.filter.catalogIds;
    if (ids === null) {
      let group = this.groups.get(connection.filter.key);
      if (!group) this.groups.set(connection.filter.key, (group = new Set()));
      group.add(connection);
    } else {
      for (const id of ids) {
        let watchers = this.byCatalogId.get(id);
        if (!watchers) this.byCatalogId.set(id, (watchers = new Set()));
        watchers.add(connection);
      }
    }
  }

  private remove(connection: Connection): void {
    if (connection.closed) return;
    connection.closed = true;
    this.connections.delete(connection);
    this.queuedEstimate -= connection.queued;
    connection.queued = 0;
    if (!connection.live) return;
    const ids = connection.filter.catalogIds;
    if (ids === null) {
      const group = this.groups.get(connection.filter.key);
      group?.delete(connection);
      if (group?.size === 0) this.groups.delete(connection.filter.key);
    } else {
      for (const id of ids) {
        const watchers = this.byCatalogId.get(id);
        watchers?.delete(connection);
        if (watchers?.size === 0) this.byCatalogId.delete(id);
      }
    }
  }

  /** A comment on every connection silent for heartbeatMs, with the live position when the client is behind it. */
  private beat(): void {
    const now = performance.now();
    for (const connection of this.connections) {
      if (now - connection.lastWriteAt < this.heartbeatMs) continue;
      let position: string | null = null;
      if (connection.live && this.lastId !== null && this.lastId !== '0-0') {
        position = connection.skipThrough && compareStreamIds(connection.skipThrough, this.lastId) > 0 ? connection.skipThrough : this.lastId;
      }
      const moved = position !== null && position !== connection.sentId;
      this.write(connection, encoder.encode(`: keep-alive\n${moved ? `id: ${position}\n` : ''}\n`));
      if (moved) connection.sentId = position;
    }
  }

  private logError(error: unknown, message: string): void {
    if (this.stopped) return;
    const now = performance.now();
    if (now - this.lastErrorLogAt < ERROR_LOG_INTERVAL_MS) return;
    this.lastErrorLogAt = now;
    this.options.log.warn({ err: (error as Error).message }, message);
  }
}

type ReplayPage = { entries: StreamEntry[]; oldest: string | null; newest: StreamEntry | null };
