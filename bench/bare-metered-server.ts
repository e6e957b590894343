// Second baseline for bench/api.ts: a bare Bun.serve in its own process doing, per request, only the
// work docs/design.md §5 requires of every keyed request and that a bare server cannot skip: find the key by
// its SHA-256 hash (here in a Map of one), debit one unit through the same metering code as the API
// (shared/usage/metering.ts: the same batched Lua script on the same Redis), and answer with the
// RateLimit headers, the X-Request-Id every response carries (docs/design.md §6) and the body GET /v2/me sent
// for that key. No framework, log context or metrics: what the API spends above this on /v2/me is its
// request path, not the metering.
// PORT, REDIS_URL, BARE_KEY, BARE_WORKSPACE_ID, BARE_KEY_ID, BARE_MINUTE_BUDGET, BARE_DAY_BUDGET and
// BARE_BODY are required.
import { requestIdFor } from '../api/plugins/request-context.ts';
import { hashKey } from '../shared/identity/api-keys.ts';
import { CounterRedis } from '../shared/platform/redis-counters.ts';
import { rateLimitHeaders, UsageMeter } from '../shared/usage/metering.ts';

function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`bench/bare-metered-server.ts: ${name} must be set`);
  return value;
}

const port = Number(required('PORT'));
const redis = new CounterRedis(required('REDIS_URL'));
await redis.ready();
const meter = new UsageMeter(redis);
const principal = {
  workspaceId: required('BARE_WORKSPACE_ID'),
  keyId: required('BARE_KEY_ID'),
  budgets: { minute: Number(required('BARE_MINUTE_BUDGET')), day: Number(required('BARE_DAY_BUDGET')) },
};
const keys = new Map([[hashKey(required('BARE_KEY')), principal]]);
const body = required('BARE_BODY');

const server = Bun.serve({
  port,
  hostname: '127.0.0.1',
  async fetch(request) {
    const requestId = requestIdFor(request);
    const raw = request.headers.get('x-api-key');
    const found = raw === null ? undefined : keys.get(hashKey(raw));
    if (!found)
      return new Response('{"error":{"code":"unauthorized"}}', { status: 401, headers: { 'content-type': 'application/json', 'x-request-id': requestId } });
    const usage = await meter.debit({
      workspaceId: found.workspaceId,
      keyId: found.keyId,
      operation: 'me.get',
      units: 1,
      budgets: found.budgets,
      now: new Date(),
    });
    return new Response(body, { headers: { 'content-type': 'application/json;charset=utf-8', 'x-request-id': requestId, ...rateLimitHeaders(usage) } });
  },
});

const stop = () => {
  void server.stop(true);
  redis.close();
  process.exit(0);
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
