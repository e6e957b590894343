import { Elysia } from 'elysia';
import { z } from 'zod';
import {
  COMPAT_WANTED_SECONDS,
  CompatDocuments,
  compatContext,
  compatWantedKey,
  currencyStamp,
  type LoadedCompatDocument,
} from '../../shared/compat/documents.ts';
import { COMPAT_BUILDERS, COMPAT_ROUTES, type CompatRoute } from '../../shared/compat/registry.ts';
import { ApiError, errors } from '../../shared/http/errors.ts';
import { text } from '../../shared/http/validation.ts';
import { latestCurrencyTable } from '../../shared/prices/currency.ts';
import type { EncodedBody, LazyEncodedBody } from '../../shared/prices/public-document.ts';
import { ifNoneMatchMatches, negotiateEncoding } from '../content-negotiation.ts';
import type { AppDeps } from '../deps.ts';
import { routeResponses } from '../openapi.ts';
import { sharedBodyStream } from '../plugins/download-slots.ts';
import { type PublicRateLimitPluginDeps, publicRateLimitPlugin } from '../plugins/public-rate-limit.ts';

const WANTED_RENEW_MS = 60_000;
/** Bodies larger than this are streamed from the kept bytes rather than copied into the response. */
const STREAM_ABOVE_BYTES = 64 * 1024;

/** Path parameters, checked at the edge like every route's (the handlers answer unknown values as the originals do). */
const PARAMS: Record<string, z.ZodObject> = {
  '/compat/csgotrader/latest/:file': z.object({ file: text({ min: 1, max: 64 }).describe('`prices_v6.json`, `<provider>.json` or `exchange_rates.json`') }),
  '/compat/steamapis/market/items/:app_id': z.object({ app_id: text({ min: 1, max: 16 }).describe('The Steam app id: `730`') }),
};

const unavailable = () =>
  new ApiError(503, 'prices_unavailable', 'No price snapshot has been built yet (or it cannot be read); retry shortly.', undefined, { 'retry-after': '5' });

/**
 * Drop-in formats (docs/design.md §20; docs/compat/): each route answers from its document of the current
 * keyless snapshot (shared/compat/), keyless, with the caching of GET /v1/prices (strong ETag and 304,
 * gzip and br, `Cache-Control: public, max-age`), `Last-Modified` (the snapshot's build time) and
 * `X-Source-Age` (seconds since the oldest source time the document used), limited per client address
 * like the keyless prices (`PUBLIC_PRICES_RATE_LIMIT` a minute, a budget of its own).
 */
export function compatRoutes(deps: Pick<AppDeps, 'config' | 'sql' | 'redis' | 'bulkRedis' | 'priceSnapshots' | 'log'> & PublicRateLimitPluginDeps) {
  const maxAge = deps.config.INGEST_INTERVAL_SECONDS ?? 30;
  // Documents are megabytes: the bulk connection, without the 1 s limit of the request connection.
  const documents = new CompatDocuments({ sql: deps.sql, redis: deps.bulkRedis, prefix: deps.config.QUEUE_PREFIX }, COMPAT_BUILDERS, deps.log);
  let wantedAt = Number.NEGATIVE_INFINITY;
  const noteWanted = () => {
    if (performance.now() - wantedAt < WANTED_RENEW_MS) return;
    wantedAt = performance.now();
    deps.redis.set(compatWantedKey(deps.config.QUEUE_PREFIX), '1', 'EX', COMPAT_WANTED_SECONDS).catch(() => undefined);
  };

  /**
   * Answers already made for this snapshot, by the request's exact path and query and the rates in
   * force: a repeated request costs a map lookup, not the handler (a cache-busting parameter only makes
   * another entry; the oldest go first).
   */
  const byRequest = new Map<string, { snapshotId: number; body: EncodedBody | LazyEncodedBody; oldestSourceMs: number | null }>();
  const BY_REQUEST_LIMIT = 512;

  async function answer(route: CompatRoute, request: Request, params: Record<string, string>): Promise<Response> {
    noteWanted();
    const snapshot = await deps.priceSnapshots.current();
    if (!snapshot) throw unavailable();
    const table = await latestCurrencyTable(deps.sql);
    const stamp = currencyStamp(table);
    const url = request.url;
    const requestKey = `${url.slice(url.indexOf('/', url.indexOf('//') + 2))}\u0000${stamp}`;
    const known = byRequest.get(requestKey);
    if (known && known.snapshotId === snapshot.id) return serve(request, known.body, snapshot.createdAt, known.oldestSourceMs);
    let document: LoadedCompatDocument;
    try {
      document = await documents.document({ id: snapshot.id, createdAt: snapshot.createdAt }, route.document);
    } catch (error) {
      // Not the client's fault and not a bug of this request: the build or the store failed (the next
      // request tries again). 503 with the shared body, as before the first snapshot.
      deps.log.warn({ err: (error as Error).message, document: route.document, snapshot_id: snapshot.id }, 'compat document unavailable');
      throw unavailable();
    }
    const context = compatContext(table);
    const result = route.handler(document.parsed, { params, query: new URL(url).searchParams }, context);
    if ('ours' in result) {
      if (result.status === 404) throw errors.notFound(result.ours.message);
      throw errors.invalidRequest(result.ours.message, [{ field: result.ours.field, message: result.ours.message }]);
    }
    if (result.status !== 200) {
      return new Response(JSON.stringify(result.body), { status: result.status, headers: { 'content-type': 'application/json', 'cache-control': 'no-store' } });
    }
    const key = result.memoKey === undefined ? null : `${route.path}\u0000${result.memoKey}\u0000${stamp}`;
    const body = documents.encoded(snapshot.id, key, result.body);
    if (key !== null) {
      if (byRequest.size >= BY_REQUEST_LIMIT || (known && known.snapshotId !== snapshot.id)) {
        for (const [entryKey, entry] of byRequest) if (entry.snapshotId !== snapshot.id || byRequest.size >= BY_REQUEST_LIMIT) byRequest.delete(entryKey);
      }
      byRequest.set(requestKey, { snapshotId: snapshot.id, body, oldestSourceMs: document.oldestSourceMs });
    }
    return serve(request, body, snapshot.createdAt, document.oldestSourceMs);
  }

  async function serve(request: Request, body: EncodedBody | LazyEncodedBody, lastModified: Date, oldestSourceMs: number | null): Promise<Response> {
    const headers: Record<string, string> = {
      etag: body.etag,
      'cache-control': `public, max-age=${maxAge}`,
      vary: 'Accept-Encoding',
      'last-modified': lastModified.toUTCString(),
    };
    if (oldestSourceMs !== null) headers['x-source-age'] = String(Math.max(0, Math.floor((Date.now() - oldestSourceMs) / 1000)));
    if (ifNoneMatchMatches(request.headers.get('if-none-match'), body.etag)) return new Response(null, { status: 304, headers });
    const coding = negotiateEncoding(request.headers.get('accept-encoding'));
    headers['content-type'] = 'application/json';
    if (coding !== 'identity') headers['content-encoding'] = coding;
    const bytes = coding === 'identity' ? body.json : 'encoded' in body ? await body.encoded(coding) : body[coding];
    // Bun copies a Buffer handed to a Response into every answer; views of the kept bytes are written from them (as the keyless list).
    if (bytes.length > STREAM_ABOVE_BYTES)
      return new Response(
        sharedBodyStream(bytes, request.signal, () => undefined),
        { status: 200, headers },
      );
    return new Response(bytes, { status: 200, headers });
  }

  // Error answers (400, 429, 503) must not be cached by shared caches.
  const noStore = ({ set }: { set: { headers: Record<string, string | number | string[] | undefined> } }) => {
    set.headers['cache-control'] = 'no-store';
  };

  const detailOf = (route: CompatRoute, hide: boolean) => ({
    summary: route.summary,
    description: `${route.description}\n\nKeyless; cached like GET /v1/prices (ETag and 304, gzip and br), with \`Last-Modified\` (the snapshot) and \`X-Source-Age\` (seconds since the oldest source time used). Unknown query parameters are ignored, as the original does.`,
    tags: ['compat'],
    ...(hide ? { hide: true } : {}),
    responses: routeResponses({ 200: 'The original’s shape', 304: 'Not modified (If-None-Match)' }, 400, 404, 429, 503),
  });
  let app = new Elysia({ name: 'compat-routes' }).use(publicRateLimitPlugin(deps));
  for (const route of COMPAT_ROUTES) {
    // Steam's own path ends with a slash (`/market/priceoverview/`): both are served, one documented.
    const paths = route.path.endsWith('priceoverview') ? [route.path, `${route.path}/`] : [route.path];
    for (const [index, path] of paths.entries()) {
      app = app.get(path, ({ request, params }) => answer(route, request, params as Record<string, string>), {
        ...(PARAMS[route.path] ? { params: PARAMS[route.path] } : {}),
        publicRateLimit: 'compat',
        transform: noStore,
        detail: detailOf(route, index > 0),
      }) as unknown as typeof app;
    }
  }
  return app;
}
