import { existsSync } from 'node:fs';
import { Elysia } from 'elysia';
import { z } from 'zod';
import { text, uuid } from '../../shared/http/validation.ts';
import { itemSelectorRequestSchema } from '../../shared/inspect/item-validation.ts';
import { renderModeFor } from '../../shared/media/item-files.ts';
import { checkImageSignature, signImageUrl } from '../../shared/media/renders-download.ts';
import {
  parseRenderItem,
  parseRenderOutput,
  RENDER_CONTENT_TYPES,
  RENDER_FORMATS,
  RENDER_MODES,
  RENDER_SIZE,
  RENDER_STATES,
  type RenderRow,
  renderErrors,
  toRenderJson,
} from '../../shared/media/renders-model.ts';
import { findRender, findRenderById } from '../../shared/media/renders-repository.ts';
import { createRender, enqueueRender } from '../../shared/media/renders-service.ts';
import { findSceneRevision, sceneErrors } from '../../shared/media/scenes.ts';
import type { AppDeps } from '../deps.ts';
import { routeResponses } from '../openapi.ts';
import { type ApiKeyPluginDeps, apiKeyPlugin } from '../plugins/api-key.ts';
import { requestIdOf } from '../plugins/errors.ts';
import { type IdempotencyPluginDeps, idempotencyPlugin } from '../plugins/idempotency.ts';
import { signedDownload, signedUrlQuery } from '../signed-download.ts';

const outputSchema = z
  .object({
    width: z.number().int().min(RENDER_SIZE.min).max(RENDER_SIZE.max),
    height: z.number().int().min(RENDER_SIZE.min).max(RENDER_SIZE.max),
    format: z.enum(RENDER_FORMATS),
    background: z.string().describe('`transparent` or `#rrggbb`'),
  })
  .describe('Output image: exact size in pixels, format and background');
// item and output are checked in the handler, so their errors carry the codes of docs/design.md §10
// (`invalid_item`, `invalid_output`) rather than the generic body validation's.
const createBody = z
  .object({
    item: z.unknown().describe(itemSelectorRequestSchema.description ?? 'docs/design.md §10 item selector'),
    scene_id: uuid('The scene (uuid)'),
    scene_revision: z.number().int().min(1).optional().describe("A revision of the scene; default: the scene's latest"),
    output: z.unknown().describe('{width, height (64–2048), format (png | webp), background (transparent | #rrggbb)}'),
  })
  .strict();
const renderParams = z.object({ render_id: uuid('The render id (uuid)') });
// The image URL is its own credential: its id is not checked for shape before the signature is.
const imageParams = z.object({ render_id: text({ max: 64 }).describe('The render id (uuid)') });

const renderSchema = z.object({
  render_id: z.uuid(),
  state: z.enum(RENDER_STATES),
  item: itemSelectorRequestSchema,
  scene: z.object({ scene_id: z.uuid(), revision: z.number().int(), etag: z.string() }),
  output: outputSchema,
  mode: z
    .enum(RENDER_MODES)
    .describe(
      'How the item is drawn (docs/design.md §18): `3d` with a real 3D model of the definition in this deployment, `card` (an item card: the item image, stickers, name tag, StatTrak counter, wear bar) without one. Decided when the render is accepted.',
    ),
  created_at: z.string(),
  completed_at: z.string().nullable(),
  image: z
    .object({
      url: z.string().describe('Signed, valid 5 minutes, works without an API key; each read returns a new one'),
      expires_at: z.string(),
      width: z.number().int(),
      height: z.number().int(),
      format: z.enum(RENDER_FORMATS),
      bytes: z.number().int(),
      sha256: z.string(),
    })
    .optional()
    .describe('Only when succeeded'),
  error: z.object({ code: z.string(), message: z.string() }).optional().describe('Only when failed'),
});

export function renderRoutes(deps: Pick<AppDeps, 'config' | 'sql' | 'log' | 'now' | 'queues'> & ApiKeyPluginDeps & IdempotencyPluginDeps) {
  const signingKey = deps.config.SIGNING_KEY!;

  const renderJson = (row: RenderRow, request: Request) => {
    const now = deps.now();
    const base = deps.config.PUBLIC_BASE_URL ?? new URL(request.url).origin;
    return toRenderJson(row, row.state === 'succeeded' && row.blob_key ? signImageUrl(base, signingKey, row.render_id, now) : null);
  };

  const image = signedDownload({
    blobDir: deps.config.BLOB_DIR,
    url: 'image',
    resource: 'render',
    gone: 'The image is no longer available.',
    check: (id, query) => checkImageSignature(signingKey, id, query.expires, query.signature, deps.now()),
    find: (id) => findRenderById(deps.sql, id),
    file: (row) =>
      row.state === 'succeeded' && row.blob_key
        ? { blobKey: row.blob_key, sha256: row.sha256, contentType: RENDER_CONTENT_TYPES[row.output.format], cacheControl: 'private, max-age=300' }
        : null,
  });

  /**
   * docs/design.md §10: without Chromium no render can finish, so none is accepted. Item files are not needed
   * any more (docs/design.md §18): a definition without a real model is drawn as an item card.
   */
  const checkRendererAvailable = () => {
    if (!existsSync(deps.config.CHROMIUM_PATH)) throw renderErrors.rendererUnavailable(['Chromium']);
  };

  return new Elysia({ name: 'render-routes' })
    .use(apiKeyPlugin(deps))
    .use(idempotencyPlugin(deps))
    .post(
      '/v2/renders',
      async ({ principal, body, set, request }) => {
        checkRendererAvailable();
        const item = parseRenderItem(body.item);
        const output = parseRenderOutput(body.output);
        const scene = await findSceneRevision(deps.sql, principal.workspace.id, body.scene_id, body.scene_revision);
        if (!scene.ok) throw scene.code === 'scene_not_found' ? sceneErrors.sceneNotFound() : sceneErrors.revisionNotFound(body.scene_revision!);
        const { row, created } = await createRender(deps.sql, {
          workspaceId: principal.workspace.id,
          item,
          scene: { sceneId: body.scene_id, revision: scene.revision, etag: scene.etag },
          output,
          mode: renderModeFor(deps.config.ITEM_FILES_DIR, item.item.definition_index),
          actor: { type: 'api_key', id: principal.keyId },
          requestId: requestIdOf(set),
          now: deps.now(),
        });
        if (created) {
          // After commit. If Redis fails us here the render is still recorded, and the sweeper enqueues it.
          await enqueueRender(deps.queues.render, row).catch((error: Error) =>
            deps.log.warn({ err: error.message, render_id: row.render_id, request_id: requestIdOf(set) }, 'could not enqueue a render; the sweeper will'),
          );
        }
        // docs/design.md §10: the same live request is answered with the existing render (200), a new one with 202.
        set.status = created ? 202 : 200;
        return renderJson(row, request);
      },
      {
        operation: 'renders.create',
        idempotent: { operation: 'renders.create', required: true },
        body: createBody,
        response: { 200: renderSchema, 202: renderSchema },
        detail: {
          summary: 'Render an item to an image',
          description: [
            'Queues a render of `item` (the item selector, as POST /v2/inspect/decode answers it) with a scene revision of the workspace (the latest unless `scene_revision`) to a PNG or WebP of `output` (width and height 64 to 2048, `png` or `webp`, background transparent or `#rrggbb`), and answers 202 with the render (`state: queued`). The same live request again is answered 200 with the existing render. Read GET /v2/renders/{render_id} until it has `succeeded`.',
            '`mode` says how it is drawn: `3d` when this deployment has a real 3D model of the definition, else `card`: an item card with the item image, its stickers at their slots and its charm, the name tag, the StatTrak counter, a wear bar with the float marked, the rarity colour and the scene background and watermark. A card whose item image cannot be fetched fails with `error.code` `item_image_unavailable` after its attempts.',
            'Requires an `Idempotency-Key`.',
            'Errors: 400 `invalid_item`, 400 `invalid_output`, 400 `idempotency_key_required`, 404 `scene_not_found`, 404 `revision_not_found`, 409 `idempotency_key_reused` or `idempotency_key_in_use`, 503 `renderer_unavailable` (no Chromium in this deployment).',
          ].join('\n\n'),
          tags: ['media'],
          responses: routeResponses({}, 404, 503),
        },
      },
    )
    .get(
      '/v2/renders/:render_id',
      async ({ principal, params, request }) => {
        const row = await findRender(deps.sql, principal.workspace.id, params.render_id);
        // Another workspace's render is as absent as a missing one.
        if (!row) throw renderErrors.notFound();
        return renderJson(row, request);
      },
      {
        operation: 'renders.get',
        params: renderParams,
        response: { 200: renderSchema },
        detail: {
          summary: 'One render',
          description: [
            'One render and its `state` (`queued`, `rendering`, `succeeded`, `failed`). Once succeeded, every read signs a new `image.url`, valid for 5 minutes, that works without an API key.',
            'Errors: 404 `not_found` (no such render in your workspace).',
          ].join('\n\n'),
          tags: ['media'],
          responses: routeResponses({}, 404),
        },
      },
    )
    .get('/v2/renders/:render_id/image', async ({ params, query }) => image(params.render_id, query), {
      params: imageParams,
      query: signedUrlQuery,
      detail: {
        summary: 'A render image',
        description: [
          'The rendered image as stored (`image/png` or `image/webp`). The signed URL from GET /v2/renders/{render_id} (`expires`, `signature`) is the only credential.',
          'Errors: 403 `invalid_download_url`, 403 `download_url_expired` (read the render again for a new URL), 404 `not_found`.',
        ].join('\n\n'),
        tags: ['media'],
        responses: routeResponses({ 200: 'The image as stored (image/png or image/webp)' }, 403, 404),
      },
    });
}
