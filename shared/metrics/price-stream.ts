import { Counter, Gauge, type Registry } from 'prom-client';

/**
 * The price stream of this API process (DESIGN 15): open Server-Sent Events connections, read at
 * scrape time, and connections cut off for not keeping up (they resume with Last-Event-ID).
 */
export function registerPriceStreamMetrics(registry: Registry, openConnections: () => number): { cutOff: () => void } {
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
  return { cutOff: () => cutOff.inc() };
}
