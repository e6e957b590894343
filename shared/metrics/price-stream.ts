import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

/**
 * The price stream of this API process (docs/design.md §15): open Server-Sent Events connections, read at
 * scrape time, and connections cut off for not keeping up (they resume with Last-Event-ID).
 */
export function registerPriceStreamMetrics(registry: Registry, openConnections: () => number): { cutOff: () => void; fannedOut: (seconds: number) => void } {
  new Gauge({
    name: 'cs2_price_stream_connections',
    help: 'Open price stream connections (GET /v1/prices/stream and /v2/prices/stream) of this API process',
    registers: [registry],
    collect() {
      this.set(openConnections());
    },
  });
  const cutOff = new Counter({
    name: 'cs2_price_stream_cut_off_total',
    help: 'Price stream connections cut off because more than 1 MiB was queued for a client that did not read it',
    registers: [registry],
  });
  // The server's share of commit-to-client latency: from an entry's stream id (its XADD, right after
  // the run committed, by Redis's clock) to its frames queued on every connection of this process.
  const fanOut = new Histogram({
    name: 'cs2_price_stream_fanout_seconds',
    help: 'Seconds from a price stream entry being appended (its id time) to its frames queued on every open connection of this API process',
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 1.5, 2, 3, 5, 10, 30],
    registers: [registry],
  });
  return { cutOff: () => cutOff.inc(), fannedOut: (seconds) => fanOut.observe(seconds) };
}
