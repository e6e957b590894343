/**
 * Local market simulator (docs/design.md §9, §13 and §14, test/fakes/): one Bun.serve speaking the ten upstream
 * formats the adapters read, over a given item list, so tests and `npm start` run with no internet.
 * Each source lives under a path prefix equal to its name (an adapter's base URL is `<url>/<source>`),
 * and each upstream's routes and body format are in its own file:
 *
 *   skinport.ts     /skinport/v1/items, /skinport/v1/sales/history (skinport-sales.ts)
 *   steam.ts        /steam/market/priceoverview/ (steam-currencies.ts), /steam/market/search/render/ (steam-search.ts)
 *   csfloat.ts      /csfloat/api/v1/listings
 *   csmarket.ts     /csmarket/api/v2/prices/class_instance/USD.json
 *   lisskins.ts     /lisskins/market_export_json/csgo.json
 *   waxpeer.ts      /waxpeer/v1/prices, /waxpeer/v1/prices/dopplers
 *   whitemarket.ts  /whitemarket/export/v1/prices/730.json
 *   bitskins.ts     /bitskins/market/insell/730
 *   csdeals.ts      /csdeals/API/IPricing/GetLowestPrices/v1
 *   skinbaron.ts    POST /skinbaron/GetExtendedPriceList
 *   fx.ts           /fx/stats/eurofxref/eurofxref-daily.xml (the ECB's daily reference rates, docs/design.md §14)
 *   POST /_control/<source|fx|all>/<mode>          switch a source's mode from another process
 *   GET  /_control                                 current modes, and the marketplace bodies' sizes and build times
 *
 * market.ts holds the catalog and the price walk every upstream reads (prices, coverage, pins);
 * marketplaces.ts the cached bodies of the six marketplaces and skinbaron; format.ts the writing of
 * money and broken rows; options.newItems: items off the market until their time (new-items.ts).
 *
 * Modes per source: ok, fail (500), stall (never answers until stop or the client gives up),
 * rate_limit (429 + Retry-After, steam's body `null`), malformed (truncated, invalid JSON), partial
 * (valid JSON where every third row, index % 3 === 1, is broken in turn: missing name, price of the
 * wrong type, negative price; for steam, every third request since the mode was set; for csmarket a
 * row is one key of `items`, for waxpeer each endpoint counts its own rows), wrong_types (valid JSON,
 * right envelope, but in every row each price field has a type the format never uses: an object
 * `{"amount":…}` on even rows and `true` on odd rows, and counts are strings (`"quantity":"3"`;
 * steam's `volume` a number, csmarket's `popularity_7d` an object); names are kept, so an adapter
 * sees only malformed rows). The "wrong type" of partial is one no reading accepts: an object
 * `{"amount":…}` where the upstream writes a string or a number (docs/design.md §13 lets adapters take either),
 * a string for skinport and csfloat (which only write numbers) and a number for steam.
 * A mode applies to every endpoint of its source (both of waxpeer's).
 */
import type { Server } from 'bun';
import { BITSKINS } from './bitskins.ts';
import { CSDEALS } from './csdeals.ts';
import { CSFLOAT } from './csfloat.ts';
import { CSMARKET } from './csmarket.ts';
import { FX } from './fx.ts';
import { LISSKINS } from './lisskins.ts';
import { createMarket } from './market.ts';
import { SKINBARON } from './skinbaron.ts';
import { SKINPORT } from './skinport.ts';
import { STEAM } from './steam.ts';
import {
  type Endpoint,
  type Handler,
  type MarketSimulator,
  type MarketSimulatorOptions,
  SIMULATOR_MODES,
  SIMULATOR_TARGETS,
  type SimulatorMode,
  type SimulatorState,
  type SimulatorTarget,
  type Upstream,
} from './types.ts';
import { WAXPEER } from './waxpeer.ts';
import { WHITEMARKET } from './whitemarket.ts';

export {
  ABSENT_SHARE,
  type FixedPrice,
  MARKETPLACE_SOURCES,
  type MarketplaceSource,
  type MarketSimulator,
  type MarketSimulatorOptions,
  SIMULATED_SOURCES,
  SIMULATOR_MODES,
  SIMULATOR_TARGETS,
  type SimulatedSource,
  type SimulatorItem,
  type SimulatorMode,
  type SimulatorTarget,
} from './types.ts';

const UPSTREAMS: readonly Upstream[] = [SKINPORT, STEAM, CSFLOAT, CSMARKET, LISSKINS, WAXPEER, WHITEMARKET, BITSKINS, CSDEALS, SKINBARON, FX];

export function startMarketSimulator(options: MarketSimulatorOptions): MarketSimulator {
  const market = createMarket(options);
  const modes = Object.fromEntries(SIMULATOR_TARGETS.map((source) => [source, 'ok'])) as Record<SimulatorTarget, SimulatorMode>;
  const counts = Object.fromEntries(SIMULATOR_TARGETS.map((source) => [source, 0])) as Record<SimulatorTarget, number>;
  const last: Partial<Record<SimulatorTarget, { url: string; headers: Record<string, string> }>> = {};
  let retryAfter: string | null = '30';
  const stalled = new Set<(response: Response) => void>();
  const state: SimulatorState = { market, modes, steamPartialCounter: 0, bodies: new Map() };

  const upstreams = new Map(UPSTREAMS.map((upstream) => [upstream.source, upstream]));
  const handlers = new Map<SimulatorTarget, Handler>(UPSTREAMS.map((upstream) => [upstream.source, upstream.create(state)]));
  const ROUTES = new Map<string, [SimulatorTarget, Endpoint]>();
  for (const upstream of UPSTREAMS) for (const [path, endpoint] of Object.entries(upstream.routes)) ROUTES.set(path, [upstream.source, endpoint]);

  function forMode(source: SimulatorTarget, endpoint: Endpoint, request: Request): Response | Promise<Response> | null {
    switch (modes[source]) {
      case 'fail':
        return new Response('<html><body><h1>500 Internal Server Error</h1></body></html>', { status: 500, headers: { 'content-type': 'text/html' } });
      case 'stall':
        return new Promise<Response>((resolve) => {
          const finish = (response: Response) => {
            stalled.delete(finish);
            resolve(response);
          };
          stalled.add(finish);
          request.signal.addEventListener('abort', () => finish(new Response(null, { status: 499 })));
        });
      case 'rate_limit': {
        const headers: Record<string, string> = { 'content-type': 'application/json; charset=utf-8' };
        if (retryAfter !== null) headers['retry-after'] = retryAfter;
        return new Response(upstreams.get(source)!.rateLimited, { status: 429, headers });
      }
      case 'malformed':
        return new Response(upstreams.get(source)!.malformed[endpoint], {
          headers: { 'content-type': upstreams.get(source)!.malformedContentType ?? 'application/json; charset=utf-8' },
        });
      default:
        return null;
    }
  }

  function setMode(source: SimulatorTarget | 'all', mode: SimulatorMode): void {
    for (const name of source === 'all' ? SIMULATOR_TARGETS : [source]) modes[name] = mode;
    if (source === 'all' || source === 'steam') state.steamPartialCounter = 0;
  }

  /** The last build of each marketplace body: bucket, mode, size and build time (GET /_control shows them). */
  const bodyStats = () =>
    Object.fromEntries(
      [...state.bodies].map(([endpoint, { bucket, mode, gzip, bytes, ms, gzipMs }]) => [
        endpoint,
        { bucket, mode, bytes, gzip_bytes: gzip.byteLength, build_ms: ms, gzip_ms: gzipMs },
      ]),
    );

  const server: Server<undefined> = Bun.serve({
    port: options.port ?? 0,
    hostname: options.hostname ?? '127.0.0.1',
    // A stalled answer must stay stalled: no idle timeout closes it.
    idleTimeout: 0,
    async fetch(request) {
      const url = new URL(request.url);
      const path = url.pathname.replace(/\/+$/, '');
      if (path.startsWith('/_control')) {
        if (request.method === 'GET' && path === '/_control') return Response.json({ modes, retry_after: retryAfter, bodies: bodyStats() });
        const [, , source, mode] = path.split('/');
        if (request.method !== 'POST') return new Response(null, { status: 405 });
        if (
          !(source === 'all' || (SIMULATOR_TARGETS as readonly string[]).includes(source ?? '')) ||
          !(SIMULATOR_MODES as readonly string[]).includes(mode ?? '')
        ) {
          return Response.json({ error: `use POST /_control/<${SIMULATOR_TARGETS.join('|')}|all>/<${SIMULATOR_MODES.join('|')}>` }, { status: 400 });
        }
        setMode(source as SimulatorTarget | 'all', mode as SimulatorMode);
        return Response.json({ modes });
      }
      const route = ROUTES.get(path);
      // Skinbaron's one endpoint is a POST; every other upstream's a GET.
      if (!route || request.method !== (upstreams.get(route[0])!.method ?? 'GET')) return new Response('not found', { status: 404 });
      const [source, endpoint] = route;
      counts[source] += 1;
      last[source] = { url: request.url, headers: Object.fromEntries(request.headers) };
      const special = forMode(source, endpoint, request);
      if (special) return special;
      return handlers.get(source)!(request, url, endpoint, path);
    },
  });

  const port = server.port!;
  return {
    url: `http://${options.hostname ?? '127.0.0.1'}:${port}`,
    port,
    setMode,
    mode: (source) => modes[source],
    setRetryAfter(value) {
      retryAfter = value;
    },
    requestCount: (source) => counts[source],
    lastRequest: (source) => last[source],
    newItemsAt: market.newItems.newItemsAt,
    async stop() {
      for (const finish of [...stalled]) finish(new Response('simulator stopped', { status: 503 }));
      await server.stop(true);
    },
  };
}
