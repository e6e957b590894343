import type { Metric, Registry } from 'prom-client';

/** The label of requests that matched no route: raw paths would make the label unbounded. */
export const UNMATCHED_ROUTE = 'unmatched';

// Any other method token a client sends is counted as one, so the label stays bounded.
const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

const NAME = 'cs2_http_request_duration_seconds';
const HELP = 'HTTP requests by method, route template and status: time from arrival to the response being ready to send';
// Buckets start below a millisecond: most keyed and keyless reads answer in well under one.
const BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

export type HttpRequestMetrics = {
  /** One finished request: `route` is the matched route template (`/v2/prices/:catalog_id`), or undefined. */
  observe: (method: string, route: string | undefined, status: number, seconds: number) => void;
};

/** One label set: per-bucket (not yet cumulative) counts, the last slot for values above every bound. */
type Series = { method: string; status: number; labels: { method: string; route: string; status: string }; counts: Float64Array; sum: number; count: number };

/**
 * `cs2_http_request_duration_seconds{method,route,status}` (docs/design.md §12: HTTP latency by route), in
 * Prometheus text through the process registry exactly as a prom-client Histogram would write it.
 * Not a prom-client Histogram because this runs on every request: prom-client validates the label
 * object and builds a string key for it on each observation (~0.3 µs); here the series of a route
 * is found by the route template the router hands over (a constant string) and a short scan, and
 * the bucket counts only become cumulative when scraped.
 */
export function httpRequestMetrics(registry: Registry): HttpRequestMetrics {
  let byRoute = new Map<string, Series[]>();

  function seriesOf(method: string, route: string, status: number): Series {
    let list = byRoute.get(route);
    if (list === undefined) {
      list = [];
      byRoute.set(route, list);
    }
    for (const series of list) if (series.status === status && series.method === method) return series;
    const series: Series = {
      method,
      status,
      labels: { method, route, status: String(status) },
      counts: new Float64Array(BUCKETS.length + 1),
      sum: 0,
      count: 0,
    };
    list.push(series);
    return series;
  }

  const metric = {
    name: NAME,
    help: HELP,
    type: 'histogram',
    aggregator: 'sum',
    async get() {
      const values: { labels: Record<string, string | number>; sharedLabels: Record<string, string>; value: number; metricName: string }[] = [];
      for (const list of byRoute.values()) {
        for (const series of list) {
          let cumulative = 0;
          for (let index = 0; index < BUCKETS.length; index++) {
            cumulative += series.counts[index]!;
            values.push({ labels: { le: BUCKETS[index]! }, sharedLabels: series.labels, value: cumulative, metricName: `${NAME}_bucket` });
          }
          values.push({ labels: { le: '+Inf' }, sharedLabels: series.labels, value: series.count, metricName: `${NAME}_bucket` });
          values.push({ labels: {}, sharedLabels: series.labels, value: series.sum, metricName: `${NAME}_sum` });
          values.push({ labels: {}, sharedLabels: series.labels, value: series.count, metricName: `${NAME}_count` });
        }
      }
      return { name: NAME, help: HELP, type: 'histogram', aggregator: 'sum', values };
    },
    reset() {
      byRoute = new Map();
    },
  };
  // The registry reads a metric through get() (and reset()); the cast is for prom-client's types,
  // which list only its own metric classes.
  registry.registerMetric(metric as unknown as Metric);

  return {
    observe(method, route, status, seconds) {
      const series = seriesOf(METHODS.has(method) ? method : 'other', route || UNMATCHED_ROUTE, status);
      let index = 0;
      while (index < BUCKETS.length && seconds > BUCKETS[index]!) index++;
      series.counts[index] = series.counts[index]! + 1;
      series.sum += seconds;
      series.count++;
    },
  };
}
