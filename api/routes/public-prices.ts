import { Elysia } from 'elysia';
import { z } from 'zod';
import { ApiError, errors } from '../../shared/http/errors.ts';
import { text } from '../../shared/http/validation.ts';
import { SOURCE_NAMES } from '../../shared/platform/source-names.ts';
import { currencyParam, resolveConversion } from '../../shared/prices/currency.ts';
import { loadPublicItemExtras } from '../../shared/prices/current.ts';
import { type EncodedBody, type LazyEncodedBody, publicItemPricesSchema, publicPriceListSchema } from '../../shared/prices/public-document.ts';
import { ifNoneMatchMatches, negotiateEncoding } from '../content-negotiation.ts';
import type { AppDeps } from '../deps.ts';
import { routeResponses } from '../openapi.ts';
import { clientIp } from '../plugins/client-ip.ts';
import { DownloadSlots, sharedBodyStream } from '../plugins/download-slots.ts';
import { type PublicRateLimitPluginDeps, publicRateLimitPlugin } from '../plugins/public-rate-limit.ts';

const allowedSources = SOURCE_NAMES.join(', ');
const listQuery = z
  .object({
    source: z.enum(SOURCE_NAMES, { error: (issue) => `unknown source ${JSON.stringify(issue.input)}; one of ${allowedSources}` }).optional(),
    currency: currencyParam.optional(),
  })
  .strict();
const itemQuery = z.object({ currency: currencyParam.optional() }).strict();
const itemParams = z.object({ market_hash_name: text({ min: 1, max: 512 }).describe("Steam's market_hash_name, URL-encoded") });

const unavailable = () =>
  new ApiError(503, 'prices_unavailable', 'No price snapshot has been built yet (or it cannot be read); retry shortly.', undefined, { 'retry-after': '5' });

// A download slot frees up as soon as one of the address's downloads ends; lists take seconds at most.
const DOWNLOAD_RETRY_AFTER_SECONDS = 2;

export function publicPriceRoutes(deps: Pick<AppDeps, 'config' | 'sql' | 'priceSnapshots'> & PublicRateLimitPluginDeps) {
  const maxAge = deps.config.INGEST_INTERVAL_SECONDS ?? 30;
  const maxDownloads = deps.config.PUBLIC_PRICES_MAX_DOWNLOADS_PER_CLIENT;
  const downloads = new DownloadSlots(maxDownloads);

  /**
   * 304 when If-None-Match matches, else the body in the best encoding the client accepts. With
   * `client` (the lists, megabytes each) the body is streamed from the snapshot's shared buffer
   * under one of that address's download slots; small item bodies are sent as they are. A derived
   * list's encodings are made when first asked for (LazyEncodedBody): this waits only for the one
   * negotiated, and a 304 or identity answer for none.
   */
  async function serve(request: Request, body: EncodedBody | LazyEncodedBody, lastModified: Date, client?: string): Promise<Response> {
    const headers: Record<string, string> = {
      etag: body.etag,
      'cache-control': `public, max-age=${maxAge}`,
      vary: 'Accept-Encoding',
      'last-modified': lastModified.toUTCString(),
    };
    if (ifNoneMatchMatches(request.headers.get('if-none-match'), body.etag)) return new Response(null, { status: 304, headers });
    const coding = negotiateEncoding(request.headers.get('accept-encoding'));
    headers['content-type'] = 'application/json';
    if (coding !== 'identity') headers['content-encoding'] = coding;
    const bytes = coding === 'identity' ? body.json : 'encoded' in body ? await body.encoded(coding) : body[coding];
    if (client === undefined) return new Response(bytes, { status: 200, headers });
    const release = downloads.acquire(client);
    if (!release) {
      throw errors.tooManyRequests(
        'too_many_concurrent_downloads',
        `At most ${maxDownloads} downloads of the price list may run at once from one address; retry when one has finished.`,
        DOWNLOAD_RETRY_AFTER_SECONDS,
      );
    }
    return new Response(sharedBodyStream(bytes, request.signal, release), { status: 200, headers });
  }

  // Error answers (400, 429, 503) of these endpoints must not be cached by shared caches.
  const noStore = ({ set }: { set: { headers: Record<string, string | number | string[] | undefined> } }) => {
    set.headers['cache-control'] = 'no-store';
  };

  return new Elysia({ name: 'public-price-routes' })
    .use(publicRateLimitPlugin(deps))
    .get(
      '/v1/prices',
      async ({ query, request, server }) => {
        const conversion = await resolveConversion(deps.sql, query.currency);
        const snapshot = await deps.priceSnapshots.current();
        if (!snapshot) throw unavailable();
        const body = await snapshot.lazyDerivedBody(query.source, conversion);
        return serve(request, body, snapshot.createdAt, clientIp(deps, request, server) ?? 'unknown');
      },
      {
        query: listQuery,
        publicRateLimit: 'prices',
        transform: noStore,
        detail: {
          summary: 'Every priced item with its latest prices',
          description:
            'The whole price list of the current price snapshot (rebuilt after every ingest): every priced item with its latest price per source for the default version, other versions under `versions`, and min/median/max. `source` keeps one marketplace. An `ETag` comes with it: `If-None-Match` gives a 304; `gzip` and `br` are sent when accepted. 503 `prices_unavailable` (with `Retry-After`) until the first snapshot is built.\n\n' +
            '`?currency=` converts every price from USD at the newest ECB rates (one body per currency per snapshot, built at its first request, with its own ETag; ' +
            '400 `invalid_request` for an unsupported currency, 503 `fx_unavailable` before any rates were fetched). ' +
            'Limited per client address: `PUBLIC_PRICES_RATE_LIMIT` requests per minute (429 `rate_limited`), and at most ' +
            '`PUBLIC_PRICES_MAX_DOWNLOADS_PER_CLIENT` (default 4) downloads running at once per API process; one more is answered ' +
            '429 `too_many_concurrent_downloads` with `Retry-After` and `Cache-Control: no-store`. A 304 does not take a download slot.',
          tags: ['keyless'],
          responses: routeResponses(
            { 200: { description: 'The price list of the current snapshot', body: publicPriceListSchema }, 304: 'Not modified (If-None-Match)' },
            400,
            429,
            503,
          ),
        },
      },
    )
    .get(
      '/v1/prices/:market_hash_name',
      async ({ params, query, request }) => {
        const conversion = await resolveConversion(deps.sql, query.currency);
        const snapshot = await deps.priceSnapshots.current();
        if (!snapshot) throw unavailable();
        // docs/design.md §18 and §19: the item's image, sales windows and liquidity, looked up once per snapshot (kept with the body).
        const body = await snapshot.itemBodyWithExtras(params.market_hash_name, conversion, (catalogId) =>
          loadPublicItemExtras(deps.sql, deps.config, catalogId, new Date()),
        );
        if (!body) throw errors.notFound('No prices for an item of this market_hash_name.');
        return serve(request, body, snapshot.createdAt);
      },
      {
        params: itemParams,
        query: itemQuery,
        publicRateLimit: 'prices',
        transform: noStore,
        detail: {
          summary: 'One item’s prices by market_hash_name',
          description: [
            'Every stored price version of one item, by its exact market_hash_name (URL-encoded), from the current price snapshot: the latest price per source with min/median/max, and the item’s `image` (docs/design.md §18: the newest icon Steam showed it with, else @ianlucas/cs2-lib’s, else null; the art is Valve’s). `ETag` and `If-None-Match` (304) as for GET /v1/prices; `currency` converts (see Conventions). No key: limited per client address (`PUBLIC_PRICES_RATE_LIMIT` requests per minute, shared with GET /v1/prices).',
            'Errors: 400 `invalid_request` (an unsupported currency), 404 `not_found` (no prices for this name), 429 `rate_limited` (with `Retry-After`), 503 `prices_unavailable` (no snapshot yet), 503 `fx_unavailable`.',
          ].join('\n\n'),
          tags: ['keyless'],
          responses: routeResponses(
            { 200: { description: 'The item’s prices in the current snapshot', body: publicItemPricesSchema }, 304: 'Not modified (If-None-Match)' },
            400,
            404,
            503,
          ),
        },
      },
    );
}
