import { Elysia } from 'elysia';
import { z } from 'zod';
import { isCatalogId, isPriceVersion } from '../../shared/catalog/identity.ts';
import { ApiError, errors } from '../../shared/http/errors.ts';
import { text } from '../../shared/http/validation.ts';
import { IMAGE_FORMATS, ImageUnavailableError, MAX_IMAGE_SIZE, MIN_IMAGE_SIZE } from '../../shared/media/images/image-cache.ts';
import { type ItemImageAnswer, ItemImageService } from '../../shared/media/images/image-service.ts';
import { ifNoneMatchMatches } from '../content-negotiation.ts';
import type { AppDeps } from '../deps.ts';
import { type ResponsesObject, routeResponses } from '../openapi.ts';
import { type PublicRateLimitPluginDeps, publicRateLimitPlugin } from '../plugins/public-rate-limit.ts';

/** docs/design.md §18: an image is served for a day; what the item's image is may change with Valve's next icon. */
const IMAGE_CACHE_CONTROL = 'public, max-age=86400';
/** The 302 of IMAGE_PROXY=false names the current upstream url, which a newer Steam icon replaces. */
const REDIRECT_CACHE_CONTROL = 'public, max-age=3600';
const DEFAULT_SIZE = 256;

const versionMessage = 'unknown version: default, phase-1…phase-4, ruby, sapphire, black-pearl, emerald, pattern-<0…1000> or tier-<n>';
const sizeMessage = `must be an integer from ${MIN_IMAGE_SIZE} to ${MAX_IMAGE_SIZE}`;

// Checked as text (digits only: no `1e3`, `0x100`, `256.0` or blanks), documented as an integer.
const sizeParam = z
  .string()
  .refine((value) => /^[0-9]{1,4}$/.test(value) && Number(value) >= MIN_IMAGE_SIZE && Number(value) <= MAX_IMAGE_SIZE, sizeMessage)
  .transform(Number)
  // The default is the text a client would send, so it is checked like one (and documented as a number).
  .prefault(String(DEFAULT_SIZE))
  .meta({
    type: 'integer',
    minimum: MIN_IMAGE_SIZE,
    maximum: MAX_IMAGE_SIZE,
    description: `The largest side in px, ${MIN_IMAGE_SIZE} to ${MAX_IMAGE_SIZE} (default ${DEFAULT_SIZE}); rounded up to a power of two (64, 128, 256, 512, 1024)`,
  });

const imageParams = z.object({ catalog_id: text({ max: 128 }).describe('A catalog id as returned by the catalog API (itm_…), passed back unchanged') });
const imageQuery = z
  .object({
    version: z
      .string()
      .max(32)
      .refine(isPriceVersion, versionMessage)
      .optional()
      .describe('A price version of the item (e.g. phase-2); default: the item’s own image'),
    size: sizeParam,
    format: z
      .enum(IMAGE_FORMATS, { error: (issue) => `unknown format ${JSON.stringify(issue.input)}; one of ${IMAGE_FORMATS.join(', ')}` })
      .default('png')
      .describe('png (default) or webp'),
  })
  .strict();

/** Checked before validation, as on the prices routes: a malformed id is a 400 with its own code. */
function checkCatalogId({ params }: { params: Record<string, string | undefined> }) {
  if (!isCatalogId(params.catalog_id ?? '')) {
    throw new ApiError(400, 'invalid_catalog_id', 'The catalog id is malformed; pass back a catalog_id from the catalog API unchanged.', [
      { field: 'params.catalog_id', message: 'malformed catalog id' },
    ]);
  }
}

const imageResponses: ResponsesObject = {
  ...routeResponses({ 302: 'IMAGE_PROXY=false: the upstream image url in `Location`', 304: 'Not modified (If-None-Match)' }, 400, 404, 503),
  200: {
    description: 'The image, fitted into size×size on a transparent background (sRGB)',
    content: {
      'image/png': { schema: { type: 'string', contentMediaType: 'image/png' } },
      'image/webp': { schema: { type: 'string', contentMediaType: 'image/webp' } },
    },
  },
};

export function imageRoutes(deps: Pick<AppDeps, 'config' | 'sql' | 'log' | 'now'> & PublicRateLimitPluginDeps) {
  const images = new ItemImageService({ config: deps.config, sql: deps.sql, log: deps.log, now: deps.now });

  // Errors (400, 404, 429, 503) must not be kept by shared caches; a 200, 302 or 304 sets its own.
  const noStore = ({ set }: { set: { headers: Record<string, string | number | string[] | undefined> } }) => {
    set.headers['cache-control'] = 'no-store';
  };

  return new Elysia({ name: 'image-routes' }).use(publicRateLimitPlugin(deps)).get(
    '/v2/images/:catalog_id',
    async ({ params, query, request, set }) => {
      let answer: ItemImageAnswer;
      try {
        answer = await images.answer({ catalogId: params.catalog_id, version: query.version, size: query.size, format: query.format });
      } catch (error) {
        if (!(error instanceof ImageUnavailableError)) throw error;
        throw new ApiError(503, 'image_unavailable', 'The item’s image could not be fetched from its source; retry shortly.', undefined, {
          'retry-after': String(error.retryAfterSeconds),
        });
      }
      switch (answer.kind) {
        case 'unknown_item':
          throw errors.notFound('No catalog item has this catalog id.');
        case 'no_image':
          throw new ApiError(404, 'image_not_found', 'This catalog item has no image: no Steam icon has been seen for it and @ianlucas/cs2-lib has none.');
        case 'redirect':
          return new Response(null, { status: 302, headers: { location: answer.url, 'cache-control': REDIRECT_CACHE_CONTROL } });
        case 'image': {
          const { image } = answer;
          const headers: Record<string, string> = { etag: image.etag, 'cache-control': IMAGE_CACHE_CONTROL, 'x-content-type-options': 'nosniff' };
          if (ifNoneMatchMatches(request.headers.get('if-none-match'), image.etag)) return new Response(null, { status: 304, headers });
          // The bytes themselves, not a Response: Elysia copies a returned Response (its body as a
          // stream) to merge the request's headers (request id, rate limit) into it.
          Object.assign(set.headers, headers, { 'content-type': image.contentType });
          return image.bytes;
        }
      }
    },
    {
      params: imageParams,
      query: imageQuery,
      publicRateLimit: 'images',
      transform: (context) => {
        noStore(context);
        checkCatalogId(context);
      },
      detail: {
        summary: 'An item’s image, resized',
        description: [
          'The image of a catalog item (and `version`), as `image.url` of the catalog and price records names it: Steam’s icon of the item, else @ianlucas/cs2-lib’s image. Fetched once from its source, fitted into `size`×`size` (rounded up to a power of two) on a transparent background, encoded as `format`, and kept; served with a strong `ETag` (`If-None-Match` gives a 304) and `Cache-Control: public, max-age=86400`. No key: limited per client address (`IMAGE_RATE_LIMIT` requests per minute, default 600, a budget apart from the keyless prices’). The art is Valve’s; a deployment with `IMAGE_PROXY=false` answers 302 to the source url instead.',
          'Errors: 400 `invalid_catalog_id` (pass a catalog_id from the catalog unchanged), 400 `invalid_request` (a size that is not an integer from 64 to 1024, an unknown format or version, an unknown parameter), 404 `not_found` (no catalog item has this id), 404 `image_not_found` (the item has no image), 429 `rate_limited` (with `Retry-After`), 503 `image_unavailable` (its source failed and nothing is stored yet; with `Retry-After`).',
        ].join('\n\n'),
        tags: ['keyless'],
        responses: imageResponses,
      },
    },
  );
}
