import type { Redis } from 'ioredis';
import type { SourceName } from '../platform/source-names.ts';
import { SourceRateLimitedError } from './types.ts';

/**
 * A per-source request budget shared by every worker process through Redis (docs/design.md §9: "the adapter
 * must respect a per-source request budget and Retry-After").
 *
 * Sliding window log: a sorted set holds one member per request admitted in the last `windowSeconds`
 * (scored by Redis server time in ms), so at no instant do more than `requests` requests fall inside
 * any window of that length. That is the guarantee an upstream's "N per window" needs whatever its
 * own window alignment is; a fixed window would allow 2N across a boundary. A second key, set with a
 * PX expiry after an upstream 429, blocks every process until it expires.
 *
 * Each operation is one Lua script (atomic), timed by Redis's own clock (TIME) so worker clocks never
 * need to agree. Keys: `<prefix>:{<source>}:window` and `<prefix>:{<source>}:blocked` (hash tag: one
 * slot per source, should Redis ever be a cluster), where the prefix is always under the deployment's
 * QUEUE_PREFIX (`<QUEUE_PREFIX>:source-budget` for the ingest sources, sourceBudgetPrefix): two
 * deployments, test runs or a dev instance on one Redis never share a budget or a Retry-After block,
 * while every process of one deployment does. Redis errors propagate as they are: a budget that cannot
 * be checked is not spent.
 */

const ACQUIRE_SCRIPT = `
redis.replicate_commands()
local blocked = redis.call('PTTL', KEYS[2])
if blocked > 0 then return {0, blocked} end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local limit = tonumber(ARGV[1])
local windowMs = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - windowMs)
if redis.call('ZCARD', KEYS[1]) >= limit then
  local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  return {0, math.max(1, tonumber(oldest[2]) + windowMs - now)}
end
redis.call('ZADD', KEYS[1], now, ARGV[3])
redis.call('PEXPIRE', KEYS[1], windowMs)
return {1, 0}
`;

// Only ever lengthens a block: two 429s in a row keep the later end.
const BLOCK_SCRIPT = `
local ms = tonumber(ARGV[1])
if redis.call('PTTL', KEYS[1]) < ms then redis.call('SET', KEYS[1], '1', 'PX', ms) end
return redis.call('PTTL', KEYS[1])
`;

const BLOCKED_FOR_SCRIPT = `
local blocked = math.max(0, redis.call('PTTL', KEYS[2]))
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local limit = tonumber(ARGV[1])
local windowMs = tonumber(ARGV[2])
local inWindow = redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. (now - windowMs), '+inf', 'WITHSCORES')
local count = #inWindow / 2
local wait = 0
if count >= limit then
  -- The (count - limit + 1)-th oldest admitted request must leave the window before one more fits.
  local index = (count - limit) * 2 + 2
  wait = math.max(1, tonumber(inWindow[index]) + windowMs - now)
end
return math.max(blocked, wait)
`;

declare module 'ioredis' {
  interface RedisCommander<Context> {
    sourceBudgetAcquire(
      windowKey: string,
      blockedKey: string,
      limit: number,
      windowMs: number,
      member: string,
    ): import('ioredis').Result<[number, number], Context>;
    sourceBudgetBlock(blockedKey: string, ms: number): import('ioredis').Result<number, Context>;
    sourceBudgetBlockedFor(windowKey: string, blockedKey: string, limit: number, windowMs: number): import('ioredis').Result<number, Context>;
  }
}

export type RequestBudget = {
  /** Admits one request, or throws SourceRateLimitedError (origin `budget`) with the wait until one would be admitted. */
  acquire(): Promise<void>;
  /** After an upstream 429: no process acquires before `until` (never shortens an existing block). */
  blockUntil(until: Date): Promise<void>;
  /** Ms until acquire() could admit a request (the longer of an upstream block and a full window); 0 if now. */
  blockedFor(): Promise<number>;
};

export type RequestBudgetSettings = {
  /** Requests admitted in any window of `windowSeconds`, across every process. */
  requests: number;
  windowSeconds: number;
  /**
   * Key namespace, under the deployment's QUEUE_PREFIX (sourceBudgetPrefix for the ingest sources).
   * Required: a budget outside QUEUE_PREFIX would be shared with every other deployment on the Redis.
   */
  keyPrefix: string;
};

export type RequestBudgetOptions = {
  /** Clock for blockUntil's `until` (turned into a duration at once; Redis's clock does the rest). */
  now?: () => Date;
};

/** The key namespace of the ingest sources' request budgets: `<QUEUE_PREFIX>:source-budget`. */
export function sourceBudgetPrefix(queuePrefix: string): string {
  return `${queuePrefix}:source-budget`;
}

/** A budget's two Redis keys: its sliding window and its Retry-After block. */
export function requestBudgetKeys(keyPrefix: string, source: SourceName): { window: string; blocked: string } {
  return { window: `${keyPrefix}:{${source}}:window`, blocked: `${keyPrefix}:{${source}}:blocked` };
}

const defined = new WeakSet<Redis>();

function defineScripts(redis: Redis): void {
  if (defined.has(redis)) return;
  redis.defineCommand('sourceBudgetAcquire', { numberOfKeys: 2, lua: ACQUIRE_SCRIPT });
  redis.defineCommand('sourceBudgetBlock', { numberOfKeys: 1, lua: BLOCK_SCRIPT });
  redis.defineCommand('sourceBudgetBlockedFor', { numberOfKeys: 2, lua: BLOCKED_FOR_SCRIPT });
  defined.add(redis);
}

export function createRequestBudget(redis: Redis, source: SourceName, limits: RequestBudgetSettings, options: RequestBudgetOptions = {}): RequestBudget {
  if (!Number.isInteger(limits.requests) || limits.requests < 1) throw new Error('budget requests must be a positive integer');
  if (!(limits.windowSeconds > 0)) throw new Error('budget window must be positive');
  if (!limits.keyPrefix) throw new Error('budget key prefix must be set (under QUEUE_PREFIX)');
  defineScripts(redis);
  const { window: windowKey, blocked: blockedKey } = requestBudgetKeys(limits.keyPrefix, source);
  const windowMs = Math.round(limits.windowSeconds * 1000);
  const now = options.now ?? (() => new Date());
  return {
    async acquire() {
      const [admitted, waitMs] = await redis.sourceBudgetAcquire(windowKey, blockedKey, limits.requests, windowMs, crypto.randomUUID());
      if (admitted !== 1) throw new SourceRateLimitedError(source, waitMs, { origin: 'budget' });
    },
    async blockUntil(until: Date) {
      const ms = Math.ceil(until.getTime() - now().getTime());
      if (ms > 0) await redis.sourceBudgetBlock(blockedKey, ms);
    },
    async blockedFor() {
      return redis.sourceBudgetBlockedFor(windowKey, blockedKey, limits.requests, windowMs);
    },
  };
}
