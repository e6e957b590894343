import { Elysia, StatusMap } from 'elysia';
import type { HttpRequestMetrics } from '../../shared/metrics/http.ts';

function statusOf(responseValue: unknown, status: number | string | undefined): number {
  // A route that builds its own Response (files, compressed bodies, 304s) carries its status there.
  if (responseValue instanceof Response) return responseValue.status;
  if (typeof status === 'number') return status;
  return (status && StatusMap[status as keyof typeof StatusMap]) || 200;
}

/**
 * Observes every request into `cs2_http_request_duration_seconds`, labelled by the route template
 * Elysia matched (`/v2/prices/:catalog_id`, never the raw path, whose values are unbounded and
 * client-chosen). Applied once at the root. The observation runs after the response is handed to
 * the client, so it adds no latency; its CPU cost (a timestamp, a WeakMap entry, one histogram
 * update) is measured by `npm run bench:api` (README "Metrics and the queue dashboard").
 */
export function httpMetricsPlugin(metrics: HttpRequestMetrics) {
  const startedAt = new WeakMap<Request, number>();
  return new Elysia({ name: 'http-metrics' })
    .onRequest(({ request }) => {
      startedAt.set(request, performance.now());
    })
    .onAfterResponse({ as: 'global' }, ({ request, route, set, responseValue }) => {
      const started = startedAt.get(request);
      if (started === undefined) return;
      metrics.observe(request.method, route, statusOf(responseValue, set.status), (performance.now() - started) / 1000);
    });
}
