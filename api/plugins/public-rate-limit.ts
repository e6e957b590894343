import { Elysia } from 'elysia';
import { errors } from '../../shared/http/errors.ts';
import { type IpLimitResult, IpRateLimiter, ipRateLimitHeaders } from '../../shared/usage/ip-limits.ts';
import type { AppDeps } from '../deps.ts';
import { errorResponses } from '../openapi.ts';
import { clientIp } from './client-ip.ts';
import { requestIdOf } from './errors.ts';

const OUTAGE_LOG_INTERVAL_MS = 30_000;

/**
 * `publicRateLimit: '<name>'` on a keyless route: one request from the client address against that
 * named per-minute budget (429 rate_limited with Retry-After and RateLimit headers). When Redis is
 * unreachable the request is served anyway (fail open): the keyless price list is read-only and
 * cached, and refusing everyone during an outage would be worse than an unlimited minute.
 */
export type PublicRateLimitPluginDeps = Pick<AppDeps, 'config' | 'counters' | 'log' | 'now'>;

export function publicRateLimitPlugin(deps: PublicRateLimitPluginDeps) {
  const limiters = new Map<string, IpRateLimiter>();
  let lastOutageLogAt = Number.NEGATIVE_INFINITY;
  const limiterFor = (name: string) => {
    let limiter = limiters.get(name);
    if (!limiter) {
      // Images have a budget of their own: a page shows dozens of them at once, each fetched once and then cached by the browser.
      const limit = name === 'images' ? deps.config.IMAGE_RATE_LIMIT : deps.config.PUBLIC_PRICES_RATE_LIMIT;
      limiter = new IpRateLimiter(deps.counters, name, limit, deps.config.QUEUE_PREFIX);
      limiters.set(name, limiter);
    }
    return limiter;
  };

  return new Elysia({ name: 'public-rate-limit' }).macro({
    publicRateLimit: (name: string) => ({
      detail: { responses: errorResponses(429) },
      async resolve({ request, server, set }) {
        let result: IpLimitResult;
        try {
          result = await limiterFor(name).hit(clientIp(deps, request, server), deps.now());
        } catch (error) {
          if (performance.now() - lastOutageLogAt > OUTAGE_LOG_INTERVAL_MS) {
            lastOutageLogAt = performance.now();
            deps.log.warn({ err: (error as Error).message, request_id: requestIdOf(set) }, 'per-address limit unavailable: serving keyless requests unlimited');
          }
          return {};
        }
        Object.assign(set.headers, ipRateLimitHeaders(result));
        if (!result.allowed) {
          throw errors.tooManyRequests(
            'rate_limited',
            `At most ${result.limit} keyless requests per minute are allowed from one address; use an API key for more.`,
            result.resetSeconds,
          );
        }
        return {};
      },
    }),
  });
}
