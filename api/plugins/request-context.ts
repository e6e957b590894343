import { Elysia, StatusMap } from 'elysia';
import type { HttpRequestMetrics } from '../../shared/metrics/http.ts';
import { bindLogContext } from '../../shared/platform/log-context.ts';
import type { Logger } from '../../shared/platform/logger.ts';

const REQUEST_ID_PATTERN = /^[A-Za-z0-9._:-]{1,128}$/;

/** A request's id: the caller's `X-Request-Id` when it is a sane token, else a fresh UUID. */
export function requestIdFor(request: Request): string {
  const incoming = request.headers.get('x-request-id');
  return incoming !== null && REQUEST_ID_PATTERN.test(incoming) ? incoming : crypto.randomUUID();
}

/** When the request arrived (performance.now()), kept on Elysia's per-request `set` object, and what observes its end. */
const ARRIVED = Symbol('arrived');
const FINISH = Symbol('finish');
type Finish = (request: Request, route: string | undefined, set: Stamped, responseValue: unknown) => void;
type Stamped = { [ARRIVED]?: number; [FINISH]?: Finish; status?: number | string; headers: Record<string, unknown> };

function statusOf(responseValue: unknown, status: number | string | undefined): number {
  // A route that builds its own Response (files, compressed bodies, 304s) carries its status there.
  if (responseValue instanceof Response) return responseValue.status;
  if (typeof status === 'number') return status;
  return (status && StatusMap[status as keyof typeof StatusMap]) || 200;
}

/**
 * What every request pays before and after its route, in two synchronous hooks and nothing else
 * (`npm run bench:api` measures them against a bare Bun.serve; docs/performance.md):
 *
 * - on arrival: its request id (the caller's `X-Request-Id` when it is a sane token, else a fresh
 *   UUID), set on the response and bound to every log line written while it is handled
 *   (shared/platform/log-context.ts), and the arrival time;
 * - once its response is ready (success, thrown error or no such route alike): one observation in
 *   `cs2_http_request_duration_seconds`, labelled by the route template Elysia matched, never the
 *   raw path; and, at debug level only, one access-log line.
 *
 * A `mapResponse` hook, not an after-response one: Elysia schedules an after-response hook with
 * setImmediate and an async closure on every request, which cost more than the rest of this plugin.
 * Applied once at the root.
 */
export function requestContextPlugin(deps: { log: Logger; metrics: { http: HttpRequestMetrics } }) {
  const { log } = deps;
  const metrics = deps.metrics.http;
  const accessLog = log.isLevelEnabled('debug');
  const finish: Finish = (request, route, set, responseValue) => {
    const arrived = set[ARRIVED];
    // Once per request: Elysia may map an error's body again after a route's own mapping failed.
    if (arrived === undefined) return;
    set[ARRIVED] = undefined;
    const status = statusOf(responseValue, set.status);
    const ms = performance.now() - arrived;
    metrics.observe(request.method, route, status, ms / 1000);
    if (accessLog) {
      log.debug(
        { request_id: set.headers['x-request-id'], method: request.method, path: new URL(request.url).pathname, status, ms: Math.round(ms * 10) / 10 },
        'request',
      );
    }
  };
  return new Elysia({ name: 'request-context' })
    .onRequest(({ request, set }) => {
      const requestId = requestIdFor(request);
      set.headers['x-request-id'] = requestId;
      // Every line logged while this request is handled carries its id, whichever logger writes it.
      bindLogContext({ request_id: requestId });
      (set as Stamped)[ARRIVED] = performance.now();
      (set as Stamped)[FINISH] = finish;
    })
    .mapResponse({ as: 'global' }, ({ request, route, set, responseValue }) => {
      finish(request, route, set as Stamped, responseValue);
      // The value is handed back unchanged, never undefined: Elysia's handler of failures outside a
      // route (no such route) answers whatever this hook returns. (Typed Response for Elysia: it is
      // whatever the route returned, which Elysia maps after this hook as before.)
      return responseValue as Response;
    });
}

/**
 * For a resolve hook that answers itself (`return status(…)`, an idempotent replay): Elysia sends
 * such an answer without the mapResponse hooks, so the request is observed here.
 */
export function answeredEarly(context: { request: Request; route: string; set: { headers: Record<string, unknown> } }, status: number): void {
  const set = context.set as Stamped;
  set.status = status;
  set[FINISH]?.(context.request, context.route, set, undefined);
}
