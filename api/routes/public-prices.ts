import { Elysia } from 'elysia';
import { z } from 'zod';
import { ApiError, errors } from '../../shared/errors.ts';
import type { EncodedBody } from '../../shared/prices/public-document.ts';
import { SOURCE_NAMES } from '../../shared/sources/types.ts';
import type { AppDeps } from '../deps.ts';
import { publicRateLimitPlugin } from '../plugins/public-rate-limit.ts';

const allowedSources = SOURCE_NAMES.join(', ');
const listQuery = z
  .object({
    source: z.enum(SOURCE_NAMES, { error: (issue) => `unknown source ${JSON.stringify(issue.input)}; one of ${allowedSources}` }).optional(),
  })
  .strict();
const itemParams = z.object({ market_hash_name: z.string().min(1).max(512).describe("Steam's market_hash_name, URL-encoded") });

export type ContentCoding = 'br' | 'gzip' | 'identity';

/** br when acceptable, then gzip, else identity (q=0 refuses a coding; `*` covers unnamed ones). */
export function negotiateEncoding(acceptEncoding: string | null): ContentCoding {
  if (!acceptEncoding) return 'identity';
  const qualities = new Map<string, number>();
  for (const part of acceptEncoding.toLowerCase().split(',')) {
    const [coding, ...parameters] = part.split(';').map((piece) => piece.trim());
    if (!coding) continue;
    let quality = 1;
    for (const parameter of parameters) {
      const [name, value] = parameter.split('=').map((piece) => piece.trim());
      if (name === 'q') quality = Number.isFinite(Number(value)) ? Number(value) : 0;
    }
    qualities.set(coding, quality);
  }
  const accepts = (coding: string) => (qualities.get(coding) ?? qualities.get('*') ?? 0) > 0;
  if (accepts('br')) return 'br';
  if (accepts('gzip') || (qualities.get('x-gzip') ?? 0) > 0) return 'gzip';
  return 'identity';
}

/** If-None-Match uses the weak comparison (RFC 9110 13.1.2): `W/` is ignored, `*` matches any. */
export function ifNoneMatchMatches(ifNoneMatch: string | null, etag: string): boolean {
  if (!ifNoneMatch) return false;
  if (ifNoneMatch.trim() === '*') return true;
  return ifNoneMatch.split(',').some((tag) => tag.trim().replace(/^W\//, '') === etag);
}

const unavailable = () =>
  new ApiError(503, 'prices_unavailable', 'No price snapshot has been built yet (or it cannot be read); retry shortly.', undefined, { 'retry-after': '5' });

export function publicPriceRoutes(deps: AppDeps) {
  const maxAge = deps.config.INGEST_INTERVAL_SECONDS ?? 30;

  /** 304 when If-None-Match matches, else the body in the best encoding the client accepts. */
  function serve(request: Request, body: EncodedBody, lastModified: Date): Response {
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
    return new Response(coding === 'br' ? body.br : coding === 'gzip' ? body.gzip : body.json, { status: 200, headers });
  }

  // Error answers (400, 429, 503) of these endpoints must not be cached by shared caches.
  const noStore = ({ set }: { set: { headers: Record<string, string | number | string[] | undefined> } }) => {
    set.headers['cache-control'] = 'no-store';
  };

  return new Elysia({ name: 'public-price-routes' })
    .use(publicRateLimitPlugin(deps))
    .get(
      '/v1/prices',
      async ({ query, request }) => {
        const snapshot = await deps.priceSnapshots.current();
        if (!snapshot) throw unavailable();
        const body = query.source ? await snapshot.sourceBody(query.source) : snapshot.body;
        return serve(request, body, snapshot.createdAt);
      },
      {
        query: listQuery,
        publicRateLimit: 'prices',
        transform: noStore,
        detail: {
          summary: 'Every priced item: latest price per source (default version; other versions under `versions`) with min/median/max. No key; limited per client address.',
          tags: ['public'],
        },
      },
    )
    .get(
      '/v1/prices/:market_hash_name',
      async ({ params, request }) => {
        const snapshot = await deps.priceSnapshots.current();
        if (!snapshot) throw unavailable();
        const body = snapshot.itemBody(params.market_hash_name);
        if (!body) throw errors.notFound('No prices for an item of this market_hash_name.');
        return serve(request, body, snapshot.createdAt);
      },
      {
        params: itemParams,
        publicRateLimit: 'prices',
        transform: noStore,
        detail: { summary: 'Every stored price version of one item by its exact market_hash_name. No key; limited per client address.', tags: ['public'] },
      },
    );
}
