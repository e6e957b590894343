import type { Queryable } from '../platform/db.ts';
import type { Logger } from '../platform/logger.ts';
import type { Redis } from '../platform/redis.ts';

/**
 * The price stream's log (docs/architecture.md "Price stream"). The log of record is the Postgres
 * table `price_stream` (sql/0019): each committed ingest run's changes, in entries of up to
 * STREAM_BATCH_SIZE, get their positions inside the transaction that writes the prices
 * (appendToPriceStreamLog), in commit order. A relay (PriceStreamRelay) copies the log's new
 * entries to one Redis stream per deployment, once each and in position order, with the position as
 * the entry's id (`<position>-0`); every API process reads that stream once
 * (shared/prices/stream-hub.ts) and fans it out over Server-Sent Events (api/routes/price-stream.ts).
 * Redis is a cache of the log: a failed relay, a crash between commit and relay or a Redis that
 * restarted empty delays entries, and the next relay (after the commit, on NOTIFY, or on its
 * schedule) appends them.
 *
 * Entry fields:
 *  - `data`: the event's JSON exactly as an unfiltered client receives it: `{run_id, source, changes}`;
 *  - `n`: how many changes it holds;
 *  - `seq`: the changes in the log up to and including this entry. An entry whose `seq - n` is not
 *    the previous entry's `seq` follows a hole: entries trimmed away while a reader paged, or a log
 *    trimmed past what a Redis that restarted empty had relayed;
 *  - `at`: when its run committed, in Unix milliseconds (for the fan-out latency metric).
 */

/** docs/design.md §15: at most this many changes per stream entry (and so per `prices` event). */
export const STREAM_BATCH_SIZE = 500;

/** One changed price, as the stream carries it; prices are decimal strings, never floats. */
export type PriceChange = {
  catalog_id: string;
  market_hash_name: string;
  version: string;
  price: string;
  previous_price: string | null;
  bid: string | null;
};

/** The `data` of a `prices` event. */
export type PriceStreamEvent = { run_id: string; source: string; changes: PriceChange[] };

/**
 * The Redis stream's key: under QUEUE_PREFIX, so a test run, a bench and a dev instance on one Redis
 * never share it. (`price-log`: the stream before issue 29 had Redis-made ids under another key; its
 * old ids resume into a gap event.)
 */
export function priceStreamKey(prefix: string): string {
  return `${prefix}:price-log`;
}

// Redis stream ids: `<milliseconds>-<sequence>`, each an unsigned 64-bit integer.
const STREAM_ID = /^(\d{1,20})-(\d{1,20})$/;
const UINT64_MAX = 18446744073709551615n;

/** A well-formed Redis stream id (what Last-Event-ID must be), else false. */
export function isStreamId(value: string): boolean {
  const match = STREAM_ID.exec(value);
  return match !== null && BigInt(match[1]!) <= UINT64_MAX && BigInt(match[2]!) <= UINT64_MAX;
}

/**
 * Orders two well-formed stream ids (negative, zero, positive). Ids from Redis have no leading
 * zeros, so a longer part is a larger number; equal lengths compare as text.
 */
export function compareStreamIds(a: string, b: string): number {
  const dashA = a.indexOf('-');
  const dashB = b.indexOf('-');
  return compareDigits(a.slice(0, dashA), b.slice(0, dashB)) || compareDigits(a.slice(dashA + 1), b.slice(dashB + 1));
}

function compareDigits(a: string, b: string): number {
  const x = a.replace(/^0+(?=\d)/, '');
  const y = b.replace(/^0+(?=\d)/, '');
  if (x.length !== y.length) return x.length - y.length;
  return x < y ? -1 : x > y ? 1 : 0;
}

/** A stream entry as read back (XRANGE / XREAD): its id, its counters, its commit time and its raw `data` JSON. */
export type StreamEntry = { id: string; seq: number; n: number; at: number | null; data: string };

/** Reads an XRANGE/XREAD entry (`[id, [field, value, …]]`); null for an entry this code did not write. */
export function parseStreamEntry(raw: [string, string[]]): StreamEntry | null {
  const [id, fields] = raw;
  let seq = Number.NaN;
  let n = Number.NaN;
  let at: number | null = null;
  let data: string | undefined;
  for (let index = 0; index + 1 < fields.length; index += 2) {
    const name = fields[index];
    const value = fields[index + 1]!;
    if (name === 'seq') seq = Number(value);
    else if (name === 'n') n = Number(value);
    else if (name === 'at') at = Number(value) || null;
    else if (name === 'data') data = value;
  }
  if (!Number.isSafeInteger(seq) || !Number.isSafeInteger(n) || n < 1 || data === undefined) return null;
  return { id, seq, n, at, data };
}

/** Entries per relay page (each up to STREAM_BATCH_SIZE changes). */
const RELAY_PAGE_SIZE = 50;

/** The stream id of a log position. */
export const streamIdOf = (position: number | string): string => `${position}-0`;

/**
 * Gives a run's changes their positions in the log, in the caller's transaction (writeIngestRun's),
 * as entries of at most STREAM_BATCH_SIZE changes. Call it as the transaction's last statement: it
 * takes the log head's row lock and holds it until the commit, so positions are handed out in commit
 * order (two overlapping runs, of one source or two, are relayed in the order they committed) and
 * the lock is held only for the commit itself. Retained by the run's ingestion time, like its events.
 * Returns the entries' stream ids.
 */
export async function appendToPriceStreamLog(
  tx: Queryable,
  run: { runId: string; source: string; ingestedAt: Date },
  changes: readonly PriceChange[],
): Promise<string[]> {
  if (changes.length === 0) return [];
  const counts: number[] = [];
  const data: string[] = [];
  for (let start = 0; start < changes.length; start += STREAM_BATCH_SIZE) {
    const batch = changes.slice(start, start + STREAM_BATCH_SIZE);
    counts.push(batch.length);
    data.push(JSON.stringify({ run_id: run.runId, source: run.source, changes: batch } satisfies PriceStreamEvent));
  }
  const [head] = await tx<{ position: string; seq: string }[]>`
    update price_stream_head set position = position + ${counts.length}, seq = seq + ${changes.length}
    returning (position - ${counts.length})::text as position, (seq - ${changes.length})::text as seq`;
  const firstPosition = Number(head!.position) + 1;
  let seq = Number(head!.seq);
  const positions = counts.map((_, index) => firstPosition + index);
  const seqs = counts.map((n) => (seq += n));
  await tx`
    insert into price_stream (position, seq, n, run_id, source, data, created_at)
    select position, seq, n, ${run.runId}, ${run.source}, data, ${run.ingestedAt}
    from unnest(${positions}::int8[], ${seqs}::int8[], ${counts}::int4[], ${data}::text[]) as entry (position, seq, n, data)`;
  return positions.map(streamIdOf);
}

/**
 * Appends log entries to the Redis stream, each once: an entry whose position is not above the
 * stream's newest is skipped (another relay appended it), so relays may run anywhere, at once, and
 * again. Then trims the oldest whole entries while the rest still hold at least `retain` changes
 * (XTRIM MINID): PRICE_STREAM_RETAIN counts changes, not entries. `MAXLEN ~ retain` on each XADD is
 * a backstop in entries (each holds at least one change, so it never cuts below `retain` changes).
 * KEYS[1] the stream; ARGV[1] retain; then per entry (position, seq, n, at, data). Returns how many
 * entries it appended.
 */
const RELAY_SCRIPT = `
local key = KEYS[1]
local retain = tonumber(ARGV[1])
local function field(fields, name)
  for i = 1, #fields, 2 do if fields[i] == name then return fields[i + 1] end end
  return nil
end
local top = 0
local seq = 0
local newest = redis.call('XREVRANGE', key, '+', '-', 'COUNT', 1)
if #newest > 0 then
  top = tonumber(string.match(newest[1][1], '^(%d+)-')) or 0
  seq = tonumber(field(newest[1][2], 'seq')) or 0
end
local appended = 0
for i = 2, #ARGV, 5 do
  local position = tonumber(ARGV[i])
  if position > top then
    -- pcall: an id at or below one the stream once held (entries deleted by hand) is already spent.
    local added = redis.pcall('XADD', key, 'MAXLEN', '~', ARGV[1], ARGV[i] .. '-0', 'seq', ARGV[i + 1], 'n', ARGV[i + 2], 'at', ARGV[i + 3], 'data', ARGV[i + 4])
    if type(added) ~= 'table' then
      top = position
      seq = tonumber(ARGV[i + 1])
      appended = appended + 1
    end
  end
end
if appended == 0 then return 0 end
-- Oldest first, one entry at first (usually nothing is due), then pages: every entry is walked
-- once when it is trimmed, plus the one kept, so a relay costs what it trims.
local cursor = '-'
local count = 1
local keepFrom = nil
local trimmed = 0
while keepFrom == nil do
  local batch = redis.call('XRANGE', key, cursor, '+', 'COUNT', count)
  if #batch == 0 then break end
  for _, entry in ipairs(batch) do
    -- Without this entry, the newer ones hold seq - entrySeq changes: keep it if that is too few.
    local entrySeq = tonumber(field(entry[2], 'seq')) or seq
    if seq - entrySeq < retain then keepFrom = entry[1] break end
    trimmed = trimmed + 1
  end
  if keepFrom == nil then cursor = '(' .. batch[#batch][1] end
  count = 20
end
if keepFrom ~= nil and trimmed > 0 then redis.call('XTRIM', key, 'MINID', keepFrom) end
return appended
`;

type LogRow = { position: string; seq: string; n: number; at: string; data: string };

/**
 * The relay from the log of record to the Redis stream (see the top of this file). `relay()` appends
 * every committed entry the stream lacks, in position order: after the newest entry the stream
 * holds, or, for an empty stream (new, or a Redis that restarted empty), the log's newest entries
 * holding at least `retain` changes, so clients resume across a Redis restart without a gap. Calls in
 * one process are coalesced: one pass runs at a time, and calls made meanwhile share the next pass.
 */
export class PriceStreamRelay {
  private scriptSha: string | undefined;
  private current: Promise<number> = Promise.resolve(0);
  private next: Promise<number> | null = null;
  /** Relay passes that failed (Redis or Postgres unavailable), since this process started. */
  failures = 0;

  constructor(
    private readonly sql: Queryable,
    private readonly redis: Redis,
    readonly key: string,
    private readonly retain: number,
    private readonly log: Logger,
    private readonly hooks: { onFailure?: () => void; onAppended?: (entries: number) => void } = {},
  ) {}

  /** Appends what the stream lacks; resolves to the entries appended. Throws when Redis or Postgres fails (nothing is lost: the next pass appends it). */
  relay(): Promise<number> {
    if (this.next) return this.next;
    const pass = this.current
      .catch(() => 0)
      .then(() => {
        this.next = null;
        return this.relayOnce();
      });
    this.next = pass;
    this.current = pass;
    return pass;
  }

  /** relay() for callers that must not fail (after a run commits): a failure is logged and counted, and the entries wait for the next pass. */
  async relaySafely(): Promise<number | null> {
    try {
      return await this.relay();
    } catch (error) {
      this.failures += 1;
      this.hooks.onFailure?.();
      this.log.warn({ err: (error as Error).message }, 'could not relay the price stream log to Redis; the next relay appends it');
      return null;
    }
  }

  private async relayOnce(): Promise<number> {
    const [newest] = (await this.redis.xrevrange(this.key, '+', '-', 'COUNT', 1)) as [string, string[]][];
    let top = newest ? Number(newest[0].slice(0, newest[0].indexOf('-'))) : null;
    const [head] = await this.sql<{ position: string; seq: string }[]>`select position::text as position, seq::text as seq from price_stream_head`;
    if (top !== null && top > Number(head!.position)) {
      // A stream ahead of the log belongs to another database (one recreated under the same
      // QUEUE_PREFIX): it is a cache of no log here, so it starts again from this one.
      this.log.warn({ stream_top: top, log_head: head!.position }, 'the Redis price stream is ahead of the log; rebuilding it from the log');
      await this.redis.del(this.key);
      top = null;
    }
    let rows =
      top === null
        ? await this.sql<LogRow[]>`
            select position::text as position, seq::text as seq, n, (extract(epoch from appended_at) * 1000)::int8::text as at, data
            from price_stream where seq > ${Number(head!.seq) - this.retain} order by price_stream.position limit ${RELAY_PAGE_SIZE}`
        : await this.pageAfter(top);
    let appended = 0;
    while (rows.length > 0) {
      const args: (string | number)[] = [this.retain];
      for (const row of rows) args.push(row.position, row.seq, row.n, row.at, row.data);
      appended += Number(await this.runScript(args));
      if (rows.length < RELAY_PAGE_SIZE) break;
      rows = await this.pageAfter(Number(rows[rows.length - 1]!.position));
    }
    if (appended > 0) this.hooks.onAppended?.(appended);
    return appended;
  }

  private pageAfter(position: number): Promise<LogRow[]> {
    return this.sql<LogRow[]>`
      select position::text as position, seq::text as seq, n, (extract(epoch from appended_at) * 1000)::int8::text as at, data
      from price_stream where position > ${position} order by price_stream.position limit ${RELAY_PAGE_SIZE}`;
  }

  private async runScript(args: (string | number)[]): Promise<unknown> {
    this.scriptSha ??= (await this.redis.script('LOAD', RELAY_SCRIPT)) as string;
    try {
      return await this.redis.evalsha(this.scriptSha, 1, this.key, ...args);
    } catch (error) {
      // A Redis restarted since the script was loaded has forgotten it.
      if (!(error as Error).message.includes('NOSCRIPT')) throw error;
      this.scriptSha = (await this.redis.script('LOAD', RELAY_SCRIPT)) as string;
      return this.redis.evalsha(this.scriptSha, 1, this.key, ...args);
    }
  }
}
