/**
 * The bodies of the sources that list the whole market in one answer from the shared marketplace
 * model (market.ts marketAsk): docs/design.md §13's six marketplaces (csmarket.ts, lisskins.ts, waxpeer.ts,
 * whitemarket.ts, bitskins.ts, csdeals.ts) and skinbaron (skinbaron.ts, docs/design.md §14). Each lists only
 * what is for sale (its seeded absent share left out).
 *
 * One body per endpoint, built once per (bucket, mode) and served to every request of that bucket.
 * It is kept gzipped (level 1: ~4 ms a MB, a fifth of the size; ~5 MB instead of ~28 MB for the six
 * over the real catalog) and sent as is to clients that accept gzip, as the real hosts do.
 * GET /_control shows each cached body's size and build time.
 *
 * Only waxpeer's dopplers endpoint, bitskins' names and skinbaron's phase rows carry phases; the
 * others write the plain name (the `default` version).
 */
import { BodyWriter } from './format.ts';
import type { Market } from './market.ts';
import type { BodySource, Endpoint, Handler, SimulatorMode, SimulatorState, Upstream } from './types.ts';

/** A body: the JSON before its rows, the rows, the JSON after them. */
export type MarketBody = {
  head(bucket: number, market: Market): string;
  rows(market: Market, bucket: number, mode: SimulatorMode, out: BodyWriter): void;
  tail: string;
};

export type MarketplaceSpec = Omit<Upstream, 'create' | 'source'> & {
  source: BodySource;
  /** Each endpoint's body. */
  bodies: Readonly<Partial<Record<Endpoint, MarketBody>>>;
  /** A refusal of the request (its query, headers or body) before the body is served; null: serve it. */
  refuse?(request: Request, url: URL, endpoint: Endpoint): Response | null | Promise<Response | null>;
};

/** A JSON answer as these hosts send it. */
export const json = (text: string | Uint8Array<ArrayBuffer>, status = 200) =>
  new Response(text, { status, headers: { 'content-type': 'application/json; charset=utf-8' } });

/** The body of an endpoint now, from the cache or built. */
function marketBody(state: SimulatorState, endpoint: Endpoint, body: MarketBody, mode: SimulatorMode): { gzip: Uint8Array<ArrayBuffer>; bytes: number } {
  const { market, bodies: cache } = state;
  const bucket = market.bucketOf(market.now());
  const cached = cache.get(endpoint);
  if (cached?.bucket === bucket && cached.mode === mode) return cached;
  const started = performance.now();
  const out = new BodyWriter(body.head(bucket, market), (cached?.bytes ?? 0) + 65_536);
  body.rows(market, bucket, mode, out);
  const bytes = out.end(body.tail);
  const built = performance.now();
  const entry = { bucket, mode, gzip: Bun.gzipSync(bytes, { level: 1 }), bytes: bytes.byteLength, ms: 0, gzipMs: 0 };
  entry.ms = Math.round((built - started) * 10) / 10;
  entry.gzipMs = Math.round((performance.now() - built) * 10) / 10;
  cache.set(endpoint, entry);
  return entry;
}

/** An upstream whose endpoints each serve one cached body of the whole market. */
export function marketplaceUpstream(spec: MarketplaceSpec): Upstream {
  const { bodies, refuse, ...upstream } = spec;
  return {
    ...upstream,
    create(state: SimulatorState): Handler {
      const serve = (request: Request, endpoint: Endpoint): Response => {
        const { gzip } = marketBody(state, endpoint, bodies[endpoint]!, state.modes[spec.source]);
        if (!/\bgzip\b/.test(request.headers.get('accept-encoding') ?? '')) return json(Bun.gunzipSync(gzip));
        return new Response(gzip, { headers: { 'content-type': 'application/json; charset=utf-8', 'content-encoding': 'gzip', vary: 'Accept-Encoding' } });
      };
      return (request, url, endpoint) => {
        const refusal = refuse?.(request, url, endpoint) ?? null;
        if (refusal instanceof Promise) return refusal.then((answer) => answer ?? serve(request, endpoint));
        return refusal ?? serve(request, endpoint);
      };
    },
  };
}
