import type { Redis } from 'ioredis';
import type { Budgets } from './budgets.ts';

/**
 * Debits weighted units from a workspace's minute and UTC-day windows and counts the request for
 * the calling key, all in one atomic script (DESIGN 5). Either both windows are debited or neither;
 * a refused request still counts as a request and an error for its key.
 *
 * KEYS: minute counter, day counter, per-key counters hash
 * ARGV: units, minute limit, day limit, minute ttl, day ttl, requests field, units field, errors field
 * Returns: {allowed (1/0), minute used, day used, exhausted window (0 none, 1 minute, 2 day)}
 */
const DEBIT_SCRIPT = `
local units = tonumber(ARGV[1])
local used = redis.call('MGET', KEYS[1], KEYS[2])
local minuteUsed = tonumber(used[1] or '0')
local dayUsed = tonumber(used[2] or '0')
-- Expiry is set when a counter is created, not on every call: fewer commands on the hot path.
if redis.call('HINCRBY', KEYS[3], ARGV[6], 1) == 1 then redis.call('EXPIRE', KEYS[3], ARGV[5]) end
local exhausted = 0
-- The day window first: when both refuse, only its reset (the later one) lets the request through.
if dayUsed + units > tonumber(ARGV[3]) then exhausted = 2
elseif minuteUsed + units > tonumber(ARGV[2]) then exhausted = 1 end
if exhausted > 0 then
  redis.call('HINCRBY', KEYS[3], ARGV[8], 1)
  return {0, minuteUsed, dayUsed, exhausted}
end
minuteUsed = redis.call('INCRBY', KEYS[1], units)
if minuteUsed == units then redis.call('EXPIRE', KEYS[1], ARGV[4]) end
dayUsed = redis.call('INCRBY', KEYS[2], units)
if dayUsed == units then redis.call('EXPIRE', KEYS[2], ARGV[5]) end
redis.call('HINCRBY', KEYS[3], ARGV[7], units)
return {1, minuteUsed, dayUsed, 0}
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

function windowsAt(now: Date): Windows {
  const ms = now.getTime();
  const minuteIndex = Math.floor(ms / 60_000);
  const dayStart = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate());
  return {
    minuteIndex,
    minuteResetsAt: new Date((minuteIndex + 1) * 60_000),
    day: now.toISOString().slice(0, 10),
    dayResetsAt: new Date(dayStart + 86_400_000),
  };
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

declare module 'ioredis' {
  interface RedisCommander<Context> {
    debitUsage(
      minuteKey: string,
      dayKey: string,
      countersKey: string,
      ...args: (string | number)[]
    ): import('ioredis').Result<[number, number, number, number], Context>;
  }
}

export class UsageMeter {
  constructor(private readonly redis: Redis) {
    redis.defineCommand('debitUsage', { numberOfKeys: 3, lua: DEBIT_SCRIPT });
  }

  async debit(input: {
    workspaceId: string;
    keyId: string;
    operation: string;
    units: number;
    budgets: Budgets;
    now: Date;
  }): Promise<DebitResult> {
    const w = windowsAt(input.now);
    const [allowed, minuteUsed, dayUsed, exhausted] = await this.redis.debitUsage(
      minuteKey(input.workspaceId, w),
      dayKey(input.workspaceId, w),
      countersKey(input.workspaceId, input.keyId, w),
      input.units,
      input.budgets.minute,
      input.budgets.day,
      // Windows outlive their period a little so a late read still sees them.
      120,
      2 * 86_400,
      `${input.operation}|requests`,
      `${input.operation}|units`,
      `${input.operation}|errors`,
    );
    return {
      allowed: allowed === 1,
      exhausted: exhausted === 1 ? 'minute' : exhausted === 2 ? 'day' : null,
      minute: windowState(input.budgets.minute, minuteUsed, w.minuteResetsAt, input.now),
      day: windowState(input.budgets.day, dayUsed, w.dayResetsAt, input.now),
    };
  }

  /** Counts a request that failed after it was admitted (4xx/5xx from the handler). */
  async countError(input: { workspaceId: string; keyId: string; operation: string; now: Date }): Promise<void> {
    const w = windowsAt(input.now);
    await this.redis.hincrby(countersKey(input.workspaceId, input.keyId, w), `${input.operation}|errors`, 1);
  }

  /** The calling key's per-operation counters for the current UTC day. */
  async keyCounters(input: { workspaceId: string; keyId: string; now: Date }): Promise<{ day: string; counters: CounterRow[] }> {
    const w = windowsAt(input.now);
    const raw = await this.redis.hgetall(countersKey(input.workspaceId, input.keyId, w));
    const byOperation = new Map<string, CounterRow>();
    for (const [field, value] of Object.entries(raw)) {
      const [operation, counter] = field.split('|') as [string, 'requests' | 'units' | 'errors'];
      const row = byOperation.get(operation) ?? { operation, requests: 0, units: 0, errors: 0 };
      row[counter] = Number(value);
      byOperation.set(operation, row);
    }
    return { day: w.day, counters: [...byOperation.values()].sort((a, b) => a.operation.localeCompare(b.operation)) };
  }
}

/** IETF RateLimit headers (draft-ietf-httpapi-ratelimit-headers) for both windows. */
export function rateLimitHeaders(result: Pick<DebitResult, 'minute' | 'day'>): Record<string, string> {
  return {
    'ratelimit-policy': `"minute";q=${result.minute.limit};w=60, "day";q=${result.day.limit};w=86400`,
    ratelimit: `"minute";r=${result.minute.remaining};t=${result.minute.resetSeconds}, "day";r=${result.day.remaining};t=${result.day.resetSeconds}`,
  };
}
