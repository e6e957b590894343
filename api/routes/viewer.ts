import { Elysia } from 'elysia';
import { z } from 'zod';
import { uuid } from '../../shared/http/validation.ts';
import { itemSelectorRequestSchema } from '../../shared/inspect/item-validation.ts';
import { buildItemCard, CARD_MAX_IMAGE_SIZE } from '../../shared/media/item-card.ts';
import { renderModeFor } from '../../shared/media/item-files.ts';
import { viewerImageResponse } from '../../shared/media/viewer/images.ts';
import {
  itemFileResponse,
  resolveViewerFiles,
  VIEWER_PAGE_HEADERS,
  viewerAssetResponse,
  viewerMessagePage,
  viewerPageHtml,
} from '../../shared/media/viewer/index.ts';
import { createViewerSession, openViewerSession, viewerSessionReceiptSchema } from '../../shared/media/viewer/sessions.ts';
import type { AppDeps } from '../deps.ts';
import { requestJsonSchema, routeResponses } from '../openapi.ts';
import { type ApiKeyPluginDeps, apiKeyPlugin } from '../plugins/api-key.ts';

// The item is checked by validateItemSelector (400 invalid_item naming the field), not by Elysia's
// validation (which answers invalid_request), so it passes through here as it came.
const createBody = z
  .object({
    item: z.unknown().meta(requestJsonSchema(itemSelectorRequestSchema)),
    scene_id: uuid('A scene of your workspace'),
    scene_revision: z.number().int().min(1).max(2_147_483_647).optional().describe('The revision to draw (default: the latest)'),
  })
  .strict();

/**
 * docs/design.md §10 viewer sessions: `POST /v2/viewer/sessions` issues a page URL; the page, its script,
 * the item files and the item card's images (docs/design.md §18) are public (the token in the URL is the
 * credential) and come from shared/media/viewer, which the render worker serves too.
 */
export function viewerRoutes(deps: Pick<AppDeps, 'config' | 'sql' | 'now' | 'log'> & ApiKeyPluginDeps) {
  const itemFilesDir = deps.config.ITEM_FILES_DIR;
  return new Elysia({ name: 'viewer-routes' })
    .use(apiKeyPlugin(deps))
    .post(
      '/v2/viewer/sessions',
      async ({ principal, body, request, set }) => {
        const receipt = await createViewerSession(
          { sql: deps.sql, itemFilesDir, ttlSeconds: deps.config.VIEWER_SESSION_TTL_SECONDS },
          body,
          // Under PUBLIC_BASE_URL, or the request's own origin when it is unset (development).
          { workspaceId: principal.workspace.id, baseUrl: deps.config.PUBLIC_BASE_URL ?? new URL(request.url).origin, now: deps.now() },
        );
        set.status = 201;
        return receipt;
      },
      {
        operation: 'viewer_sessions.create',
        body: createBody,
        detail: {
          summary: 'Create a viewer session',
          description: [
            'Creates a viewer session and answers 201 with its `url` (`PUBLIC_BASE_URL/viewer/<token>`): a page that draws `item` (the item selector, as POST /v2/inspect/decode answers it) with a scene of the workspace (its latest revision unless `scene_revision`) until `expires_at` (`VIEWER_SESSION_TTL_SECONDS`, default 900), after which the page answers 410. The token in the URL is its only credential: the page holds no API key. No Idempotency-Key.',
            '`mode` says how: `3d` when this deployment has a real 3D model of the definition, else `card`, an item card (the item image, stickers at their slots, charm, name tag, StatTrak counter, wear bar with the float, rarity colour, the scene background and watermark). The page loads everything from this origin.',
            'Errors: 400 `invalid_item`, 404 `scene_not_found`, 404 `revision_not_found`.',
          ].join('\n\n'),
          tags: ['media'],
          responses: routeResponses({ 201: { description: 'The session; open `url` in a browser until `expires_at`', body: viewerSessionReceiptSchema } }, 404),
        },
      },
    )
    .get(
      '/viewer/:token',
      async ({ params }) => {
        const session = await openViewerSession(deps.sql, params.token, deps.now());
        if (session.state !== 'open') return viewerMessagePage(session.state === 'expired' ? 410 : 404);
        // docs/design.md §18: 3D with a real model (as the item files are now), else the item card.
        const files = renderModeFor(itemFilesDir, session.item.item.definition_index) === '3d' ? resolveViewerFiles(itemFilesDir, session.item) : null;
        const card = files ? null : await buildItemCard(deps, session.item, { imageSize: CARD_MAX_IMAGE_SIZE });
        const html = await viewerPageHtml({ item: session.item, scene: session.scene, files, card, mode: 'interactive' });
        return new Response(html, { headers: VIEWER_PAGE_HEADERS });
      },
      { detail: { hide: true } },
    )
    .get(
      '/viewer/images/:kind/:id',
      ({ request }) => {
        const url = new URL(request.url);
        return viewerImageResponse(deps, url.pathname, url.searchParams);
      },
      { detail: { hide: true } },
    )
    .get('/viewer/assets/:file', ({ request }) => viewerAssetResponse(new URL(request.url).pathname), { detail: { hide: true } })
    .get('/viewer/files/:kind/:id', ({ params }) => itemFileResponse(itemFilesDir, params.kind, params.id), { detail: { hide: true } });
}
