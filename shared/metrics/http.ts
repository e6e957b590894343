import { Histogram, type Registry } from 'prom-client';

/** The label of requests that matched no route: raw paths would make the label unbounded. */
export const UNMATCHED_ROUTE = 'unmatched';

// Any other method token a client sends is counted as one, so the label stays bounded.
const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

export type HttpRequestMetrics = {
  /** One finished request: `route` is the matched route template (`/v2/prices/:catalog_id`), or undefined. */
  observe: (method: string, route: string | undefined, status: number, seconds: number) => void;
};

/**
 * `cs2_http_request_duration_seconds{method,route,status}` (DESIGN 12: HTTP latency by route).
 * Buckets start below a millisecond: most keyed and keyless reads answer in well under one.
 */
export function httpRequestMetrics(registry: Registry): HttpRequestMetrics {
  const histogram = new Histogram({
    name: 'cs2_http_request_duration_seconds',
    help: 'HTTP requests by method, route template and status: time from arrival to the response being handed to the client',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });
  return {
    observe(method, route, status, seconds) {
      histogram.observe({ method: METHODS.has(method) ? method : 'other', route: route || UNMATCHED_ROUTE, status: String(status) }, seconds);
    },
  };
}
