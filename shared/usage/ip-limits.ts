import type { CounterRedis } from '../platform/redis-counters.ts';

/**
 * Per-client-address request budget of the keyless endpoints (docs/design.md §9): a fixed one-minute window
 * per address, one INCR (with its expiry set when the counter is created) per request.
 */
const HIT_SCRIPT = `
local count = redis.call('INCR', KEYS[1])
if count == 1 then redis.call('EXPIRE', KEYS[1], ARGV[1]) end
return count
`;

export type IpLimitResult = { allowed: boolean; limit: number; remaining: number; resetSeconds: number };

export class IpRateLimiter {
  constructor(
    private readonly redis: CounterRedis,
    private readonly name: string,
    private readonly limitPerMinute: number,
    // The deployment's Redis namespace (QUEUE_PREFIX): two deployments or test runs on one Redis
    // never count each other's requests from the same address.
    private readonly keyPrefix: string,
  ) {}

  /** Counts one request from `address` (null: unknown, all such requests share one counter). Throws when Redis fails. */
  async hit(address: string | null, now: Date): Promise<IpLimitResult> {
    const minute = Math.floor(now.getTime() / 60_000);
    const count = Number(await this.redis.evalScript(HIT_SCRIPT, [`${this.keyPrefix}:iplimit:${this.name}:${address ?? 'unknown'}:${minute}`], ['120']));
    return {
      allowed: count <= this.limitPerMinute,
      limit: this.limitPerMinute,
      remaining: Math.max(0, this.limitPerMinute - count),
      resetSeconds: Math.max(1, Math.ceil(((minute + 1) * 60_000 - now.getTime()) / 1000)),
    };
  }
}

/** IETF RateLimit headers, in the form the metered endpoints use. */
export function ipRateLimitHeaders(result: IpLimitResult): Record<string, string> {
  return {
    'ratelimit-policy': `"ip-minute";q=${result.limit};w=60`,
    ratelimit: `"ip-minute";r=${result.remaining};t=${result.resetSeconds}`,
  };
}
