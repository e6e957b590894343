import type { CounterRedis } from '../platform/redis-counters.ts';
import type { Budgets } from './budgets.ts';

/**
 * Debits weighted units from a workspace's minute and UTC-day windows and counts the request for
 * the calling key, atomically per request (docs/design.md §5): either both windows are debited or neither;
 * a refused request still counts as a request and an error for its key. The script takes a batch of
 * such debits (those that arrived while the previous call was out) and applies them one after the
 * other, each exactly as if it had its own call, in one round trip.
 *
 * KEYS: per distinct key (and minute) of the batch, its minute counter, day counter and per-key
 * counters hash, once however many of its debits the batch holds.
 * ARGV: minute ttl, day ttl, then one string per debit: "<key triple index>:<units>:<minute
 * limit>:<day limit>:<operation id>". Each argument costs Bun's client about half a microsecond, so a
 * debit is one short string rather than three key names and four numbers (`npm run bench:api`,
 * /v2/me: ~2.5 µs of API CPU less per request at 50 connections).
 * Returns, per debit: allowed (1/0), minute used, day used, exhausted window (0 none, 1 minute, 2 day);
 * allowed -1 for a debit the script cannot read, which fails alone instead of failing its whole batch
 * (a script error would refuse every request of the batch, and keep what it already applied).
 */
const DEBIT_SCRIPT = `
local minuteTtl, dayTtl = ARGV[1], ARGV[2]
local out = {}
for i = 3, #ARGV do
  local triple, units, minuteLimit, dayLimit, operation = string.match(ARGV[i], '^(%d+):(%d+):(%d+):(%d+):(.+)$')
  triple, units, minuteLimit, dayLimit = tonumber(triple), tonumber(units), tonumber(minuteLimit), tonumber(dayLimit)
  local at = 4 * (i - 3)
  if operation == nil or KEYS[3 * triple + 3] == nil then
    -- Not readable: this debit fails alone (allowed -1), not the batch it travels with.
    out[at + 1], out[at + 2], out[at + 3], out[at + 4] = -1, 0, 0, 0
  else
    local minuteKey, dayKey, countersKey = KEYS[3 * triple + 1], KEYS[3 * triple + 2], KEYS[3 * triple + 3]
    local used = redis.call('MGET', minuteKey, dayKey)
    local minuteUsed = tonumber(used[1] or '0')
    local dayUsed = tonumber(used[2] or '0')
    -- Expiry is set when a counter is created, not on every call: fewer commands on the hot path.
    if redis.call('HINCRBY', countersKey, operation .. '|requests', 1) == 1 then redis.call('EXPIRE', countersKey, dayTtl) end
    local exhausted = 0
    -- The day window first: when both refuse, only its reset (the later one) lets the request through.
    if dayUsed + units > dayLimit then exhausted = 2
    elseif minuteUsed + units > minuteLimit then exhausted = 1 end
    if exhausted > 0 then
      redis.call('HINCRBY', countersKey, operation .. '|errors', 1)
      out[at + 1], out[at + 2], out[at + 3], out[at + 4] = 0, minuteUsed, dayUsed, exhausted
    else
      minuteUsed = redis.call('INCRBY', minuteKey, units)
      if minuteUsed == units then redis.call('EXPIRE', minuteKey, minuteTtl) end
      dayUsed = redis.call('INCRBY', dayKey, units)
      if dayUsed == units then redis.call('EXPIRE', dayKey, dayTtl) end
      redis.call('HINCRBY', countersKey, operation .. '|units', units)
      out[at + 1], out[at + 2], out[at + 3], out[at + 4] = 1, minuteUsed, dayUsed, 0
    end
  end
end
return out
`;

export type WindowState = { limit: number; used: number; remaining: number; resetsAt: Date; resetSeconds: number };
export type DebitResult = {
  allowed: boolean;
  exhausted: 'minute' | 'day' | null;
  minute: WindowState;
  day: WindowState;
};

export type CounterRow = { operation: string; requests: number; units: number; errors: number };

type Windows = { minuteIndex: number; minuteResetsAt: Date; day: string; dayResetsAt: Date };

// Every field follows from the minute, so one computation serves every request of that minute.
let lastWindows: Windows | null = null;

function windowsAt(now: Date): Windows {
  const minuteIndex = Math.floor(now.getTime() / 60_000);
  if (lastWindows?.minuteIndex === minuteIndex) return lastWindows;
  const dayStart = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate());
  lastWindows = {
    minuteIndex,
    minuteResetsAt: new Date((minuteIndex + 1) * 60_000),
    day: now.toISOString().slice(0, 10),
    dayResetsAt: new Date(dayStart + 86_400_000),
  };
  return lastWindows;
}

// Hash tags keep one workspace's keys in one slot, should Redis ever be a cluster.
const minuteKey = (workspaceId: string, w: Windows) => `usage:{${workspaceId}}:minute:${w.minuteIndex}`;
const dayKey = (workspaceId: string, w: Windows) => `usage:{${workspaceId}}:day:${w.day}`;
const countersKey = (workspaceId: string, keyId: string, w: Windows) => `usage:{${workspaceId}}:key:${keyId}:${w.day}`;

function windowState(limit: number, used: number, resetsAt: Date, now: Date): WindowState {
  return {
    limit,
    used,
    remaining: Math.max(0, limit - used),
    resetsAt,
    resetSeconds: Math.max(1, Math.ceil((resetsAt.getTime() - now.getTime()) / 1000)),
  };
}

/**
 * Metering on Bun's built-in Redis client (shared/platform/redis-counters.ts). Debits go to Redis together,
 * as one EVALSHA of DEBIT_SCRIPT: a lone request is sent at the end of its event-loop turn
 * (setImmediate), and while a call is out the debits that arrive wait for its reply and then go as the
 * next batch. Under load each request so pays a share of one round trip instead of its own (GET /v2/me
 * at 50 connections: batches of ~6 when each turn flushed on its own, larger with one call in
 * flight), and a lone request waits for nobody. It fails when Redis does, and only then: the client
 * (shared/platform/redis-counters.ts) waits out a dropped link's reconnect and counts its 1 s command
 * timeout only in event-loop turns that could have read the reply, so a busy process or a busy moment
 * never turns a healthy Redis into a 503 (issue 29), while a Redis outage is a 503 `usage_unavailable`
 * within about a second (the debits queued behind a call that failed fail with it) and clears
 * without a restart. A batch can span workspaces, so its keys can span hash slots: on a Redis
 * Cluster, batches would have to be split by slot (the hash tags already group them).
 */
type DebitReply = [allowed: number, minuteUsed: number, dayUsed: number, exhausted: number];
/** A debit waiting for its batch: whose counters (`workspaceId`, `keyId`, the windows) and its `"<units>:<minute limit>:<day limit>:<operation>"`. */
type PendingDebit = {
  workspaceId: string;
  keyId: string;
  windows: Windows;
  rest: string;
  resolve: (reply: DebitReply) => void;
  reject: (error: unknown) => void;
};

/** Debits per script call at most: a bigger batch is split, so one call never holds Redis for long. */
const MAX_DEBITS_PER_CALL = 256;

/**
 * Script calls in flight at once. Debits that arrive while they are all out wait for the first
 * reply and then go together: under load batches grow by themselves (a share of one round trip
 * per request), while a lone request is sent at once.
 */
const MAX_CALLS_IN_FLIGHT = 1;

export class UsageMeter {
  private pending: PendingDebit[] = [];
  private flushScheduled = false;
  private inFlight = 0;

  constructor(private readonly redis: CounterRedis) {}

  async debit(input: { workspaceId: string; keyId: string; operation: string; units: number; budgets: Budgets; now: Date }): Promise<DebitResult> {
    const w = windowsAt(input.now);
    const [allowed, minuteUsed, dayUsed, exhausted] = await new Promise<DebitReply>((resolve, reject) => {
      this.pending.push({
        workspaceId: input.workspaceId,
        keyId: input.keyId,
        windows: w,
        rest: `${input.units}:${input.budgets.minute}:${input.budgets.day}:${input.operation}`,
        resolve,
        reject,
      });
      if (!this.flushScheduled && this.inFlight < MAX_CALLS_IN_FLIGHT) {
        this.flushScheduled = true;
        setImmediate(this.flush);
      }
    });
    return {
      allowed: allowed === 1,
      exhausted: exhausted === 1 ? 'minute' : exhausted === 2 ? 'day' : null,
      minute: windowState(input.budgets.minute, minuteUsed, w.minuteResetsAt, input.now),
      day: windowState(input.budgets.day, dayUsed, w.dayResetsAt, input.now),
    };
  }

  private readonly flush = () => {
    this.flushScheduled = false;
    while (this.pending.length > 0 && this.inFlight < MAX_CALLS_IN_FLIGHT) {
      this.send(this.pending.slice(0, MAX_DEBITS_PER_CALL));
      this.pending = this.pending.slice(MAX_DEBITS_PER_CALL);
    }
  };

  /** One call settled: whatever queued meanwhile goes next. */
  private readonly settled = () => {
    this.inFlight -= 1;
    if (this.pending.length > 0) this.flush();
  };

  private send(batch: PendingDebit[]): void {
    this.inFlight += 1;
    const keys: string[] = [];
    // The windows' TTLs (minute, day): a little longer than their period, so a late read still sees them.
    const args: string[] = ['120', '172800'];
    // A key's three counters go once per batch (and minute: a batch can straddle a minute's end).
    const triples = new Map<string, number>();
    for (const debit of batch) {
      const { workspaceId, keyId, windows } = debit;
      const id = `${keyId}:${windows.minuteIndex}`;
      let triple = triples.get(id);
      if (triple === undefined) {
        triple = triples.size;
        triples.set(id, triple);
        keys.push(minuteKey(workspaceId, windows), dayKey(workspaceId, windows), countersKey(workspaceId, keyId, windows));
      }
      args.push(`${triple}:${debit.rest}`);
    }
    this.redis
      .evalScript(DEBIT_SCRIPT, keys, args)
      .then(
        (reply) => {
          const values = reply as number[];
          batch.forEach((debit, index) => {
            if (values[4 * index] === -1) debit.reject(new Error(`usage debit not readable by the debit script: ${debit.rest}`));
            else debit.resolve(values.slice(4 * index, 4 * index + 4) as DebitReply);
          });
        },
        (error: unknown) => {
          // Those that queued behind a failed call (Redis down or hung) fail with it, rather than
          // wait for a call of their own to time out as well.
          const failed = [...batch, ...this.pending];
          this.pending = [];
          for (const debit of failed) debit.reject(error);
        },
      )
      .finally(this.settled);
  }

  /** Counts a request that failed after it was admitted (4xx/5xx from the handler). */
  async countError(input: { workspaceId: string; keyId: string; operation: string; now: Date }): Promise<void> {
    const w = windowsAt(input.now);
    await this.redis.command('HINCRBY', [countersKey(input.workspaceId, input.keyId, w), `${input.operation}|errors`, '1']);
  }

  /** The calling key's per-operation counters for the current UTC day. */
  async keyCounters(input: { workspaceId: string; keyId: string; now: Date }): Promise<{ day: string; counters: CounterRow[] }> {
    const w = windowsAt(input.now);
    const raw = await this.redis.command('HGETALL', [countersKey(input.workspaceId, input.keyId, w)]);
    const byOperation = new Map<string, CounterRow>();
    for (const [field, value] of hashEntries(raw)) {
      const [operation, counter] = field.split('|') as [string, 'requests' | 'units' | 'errors'];
      const row = byOperation.get(operation) ?? { operation, requests: 0, units: 0, errors: 0 };
      row[counter] = Number(value);
      byOperation.set(operation, row);
    }
    return { day: w.day, counters: [...byOperation.values()].sort((a, b) => a.operation.localeCompare(b.operation)) };
  }
}

/** HGETALL's reply: a map under RESP3 (Bun's default), a flat field/value array under RESP2. */
function hashEntries(raw: unknown): [string, unknown][] {
  if (Array.isArray(raw)) {
    const entries: [string, unknown][] = [];
    for (let index = 0; index + 1 < raw.length; index += 2) entries.push([String(raw[index]), raw[index + 1]]);
    return entries;
  }
  return raw && typeof raw === 'object' ? Object.entries(raw) : [];
}

// RateLimit-Policy per (minute, day) budget pair: the same few strings on every request.
const policies = new Map<number, Map<number, string>>();

function rateLimitPolicy(minuteLimit: number, dayLimit: number): string {
  let byDay = policies.get(minuteLimit);
  if (!byDay) {
    // Budgets are per tier, or per enterprise workspace: few, but not a fixed number.
    if (policies.size >= 1_000) policies.clear();
    policies.set(minuteLimit, (byDay = new Map()));
  }
  let policy = byDay.get(dayLimit);
  if (policy === undefined) {
    if (byDay.size >= 1_000) byDay.clear();
    byDay.set(dayLimit, (policy = `"minute";q=${minuteLimit};w=60, "day";q=${dayLimit};w=86400`));
  }
  return policy;
}

/** IETF RateLimit headers (draft-ietf-httpapi-ratelimit-headers) for both windows. */
export function rateLimitHeaders(result: Pick<DebitResult, 'minute' | 'day'>): Record<string, string> {
  return {
    'ratelimit-policy': rateLimitPolicy(result.minute.limit, result.day.limit),
    ratelimit: `"minute";r=${result.minute.remaining};t=${result.minute.resetSeconds}, "day";r=${result.day.remaining};t=${result.day.resetSeconds}`,
  };
}
