import type { Logger } from '../platform/logger.ts';
import type { Redis } from '../platform/redis.ts';

/**
 * The price stream's log (DESIGN 15): one Redis stream per deployment whose entries each hold up to
 * STREAM_BATCH_SIZE price changes of one committed ingest run. The ingest pool appends to it after
 * a run commits (PriceStreamPublisher); every API process reads it once (shared/prices/stream-hub.ts)
 * and fans it out over Server-Sent Events (api/routes/price-stream.ts). An entry's Redis id is the
 * event id clients resume from.
 *
 * Entry fields:
 *  - `data`: the event's JSON exactly as an unfiltered client receives it: `{run_id, source, changes}`;
 *  - `n`: how many changes it holds;
 *  - `seq`: the changes appended to this stream since it was created, this entry's included. An
 *    entry whose `seq - n` is not the previous entry's `seq` follows a hole: entries trimmed away
 *    while a reader paged, or a Redis that restarted empty (its new stream counts from 0 again).
 */

/** DESIGN 15: at most this many changes per stream entry (and so per `prices` event). */
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

/** The stream's key: under QUEUE_PREFIX, so a test run, a bench and a dev instance on one Redis never share it. */
export function priceStreamKey(prefix: string): string {
  return `${prefix}:price-stream`;
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

/** A stream entry as read back (XRANGE / XREAD): its id, its counters and its raw `data` JSON. */
export type StreamEntry = { id: string; seq: number; n: number; data: string };

/** Reads an XRANGE/XREAD entry (`[id, [field, value, …]]`); null for an entry this code did not write. */
export function parseStreamEntry(raw: [string, string[]]): StreamEntry | null {
  const [id, fields] = raw;
  let seq = Number.NaN;
  let n = Number.NaN;
  let data: string | undefined;
  for (let index = 0; index + 1 < fields.length; index += 2) {
    const name = fields[index];
    const value = fields[index + 1]!;
    if (name === 'seq') seq = Number(value);
    else if (name === 'n') n = Number(value);
    else if (name === 'data') data = value;
  }
  if (!Number.isSafeInteger(seq) || !Number.isSafeInteger(n) || n < 1 || data === undefined) return null;
  return { id, seq, n, data };
}

/**
 * Appends every batch in one atomic script, so the entries of one run are contiguous even with
 * several ingest processes, and `seq` counts on from the newest entry. Then trims the oldest whole
 * entries while the rest still hold at least `retain` changes (XTRIM MINID): PRICE_STREAM_RETAIN
 * counts changes, not entries, and a steady run's entries hold far fewer than 500 of them.
 * `MAXLEN ~ retain` on each XADD is only a backstop in entries (each holds at least one change,
 * so it never cuts below `retain` changes).
 * KEYS[1] the stream; ARGV[1] retain; then pairs of (n, data).
 */
const PUBLISH_SCRIPT = `
local key = KEYS[1]
local retain = tonumber(ARGV[1])
local function field(fields, name)
  for i = 1, #fields, 2 do if fields[i] == name then return fields[i + 1] end end
  return nil
end
local seq = 0
local newest = redis.call('XREVRANGE', key, '+', '-', 'COUNT', 1)
if #newest > 0 then seq = tonumber(field(newest[1][2], 'seq')) or 0 end
local ids = {}
for i = 2, #ARGV, 2 do
  local n = tonumber(ARGV[i])
  seq = seq + n
  ids[#ids + 1] = redis.call('XADD', key, 'MAXLEN', '~', ARGV[1], '*', 'seq', seq, 'n', n, 'data', ARGV[i + 1])
end
-- Oldest first, one entry at first (usually nothing is due), then pages: every entry is walked
-- once when it is trimmed, plus the one kept, so a publish costs what it trims.
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
return ids
`;

/**
 * The ingest side: appends a committed run's changes to the stream. Never throws: a run whose
 * changes could not be appended stays committed (the stream is a convenience; /v1/prices and the
 * webhooks carry the same prices), and the failure is logged and counted.
 */
export class PriceStreamPublisher {
  private scriptSha: string | undefined;
  /** Runs whose changes could not be appended, since this process started. */
  failures = 0;

  constructor(
    private readonly redis: Redis,
    readonly key: string,
    private readonly retain: number,
    private readonly log: Logger,
    private readonly onFailure?: () => void,
  ) {}

  /** The ids of the appended entries, or null when nothing was appended (no changes, or Redis failed). */
  async publish(run: { runId: string; source: string }, changes: readonly PriceChange[]): Promise<string[] | null> {
    if (changes.length === 0) return null;
    const args: (string | number)[] = [this.retain];
    for (let start = 0; start < changes.length; start += STREAM_BATCH_SIZE) {
      const batch = changes.slice(start, start + STREAM_BATCH_SIZE);
      const event: PriceStreamEvent = { run_id: run.runId, source: run.source, changes: batch };
      args.push(batch.length, JSON.stringify(event));
    }
    try {
      return (await this.runScript(args)) as string[];
    } catch (error) {
      this.failures += 1;
      this.onFailure?.();
      this.log.warn({ err: (error as Error).message, run_id: run.runId, source: run.source, changes: changes.length }, 'could not append the run to the price stream');
      return null;
    }
  }

  private async runScript(args: (string | number)[]): Promise<unknown> {
    this.scriptSha ??= (await this.redis.script('LOAD', PUBLISH_SCRIPT)) as string;
    try {
      return await this.redis.evalsha(this.scriptSha, 1, this.key, ...args);
    } catch (error) {
      // A Redis restarted since the script was loaded has forgotten it.
      if (!(error as Error).message.includes('NOSCRIPT')) throw error;
      this.scriptSha = (await this.redis.script('LOAD', PUBLISH_SCRIPT)) as string;
      return this.redis.evalsha(this.scriptSha, 1, this.key, ...args);
    }
  }
}
