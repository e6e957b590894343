import { Elysia } from 'elysia';
import { z } from 'zod';
import { decodeCursor, encodeCursor } from '../../shared/http/cursor.ts';
import { cursorInstant, integerPathParam, pageCursor, pageLimit, uuid } from '../../shared/http/validation.ts';
import type { ApiKeyPrincipal } from '../../shared/identity/api-keys.ts';
import { createScene, findSceneRevision, sceneErrors, updateScene } from '../../shared/media/scenes.ts';
import { conditionNames, etagOf, parseSceneBody, sceneBodySchema, sceneDocumentSchema } from '../../shared/media/scenes-model.ts';
import { listScenes, type ScenePosition } from '../../shared/media/scenes-repository.ts';
import type { AppDeps } from '../deps.ts';
import { requestJsonSchema, routeResponses } from '../openapi.ts';
import { type ApiKeyPluginDeps, apiKeyPlugin } from '../plugins/api-key.ts';
import { type IdempotencyPluginDeps, idempotencyPlugin } from '../plugins/idempotency.ts';
import { type RequestMeta, requestMetaPlugin } from '../plugins/request-meta.ts';

export const SCENE_PAGE_LIMIT = { default: 25, max: 100 } as const;

/**
 * docs/design.md §10: a bad scene is 400 `invalid_scene`, not the generic `invalid_request` that Elysia's
 * validation errors become. So the body is checked here by parseSceneBody, which throws the
 * `invalid_scene` ApiError (zod lets it through and the errors plugin answers it as is), while the
 * OpenAPI document still shows the scene schema that check applies.
 */
const sceneRequestBody = z
  .unknown()
  .transform((value, context) => {
    // An empty body reaches here as null (and answers invalid_scene); undefined only comes from the
    // OpenAPI builder asking whether a body is required.
    if (value === undefined) {
      context.issues.push({ code: 'custom', message: 'a scene is required', input: value });
      return z.NEVER;
    }
    return parseSceneBody(value);
  })
  .meta(requestJsonSchema(sceneBodySchema));

const sceneParams = z.object({ scene_id: uuid('The scene id (uuid)') });
const revisionParams = z.object({
  scene_id: uuid('The scene id (uuid)'),
  revision: integerPathParam(2_147_483_647n, 'Revision number, from 1', Number),
});
const listQuery = z.object({ limit: pageLimit(SCENE_PAGE_LIMIT), cursor: pageCursor }).strict();
const position: z.ZodType<ScenePosition> = z.object({ scene_id: uuid('position scene id'), created_at: cursorInstant });
const scenePage = z.object({ data: z.array(sceneDocumentSchema), next_cursor: z.string().nullable() });

const notModified = { 304: 'Not modified: If-None-Match names this ETag' } as const;

/** docs/design.md §10: scenes of the key's workspace, their immutable revisions and ETags. */
export function sceneRoutes(deps: Pick<AppDeps, 'config' | 'sql' | 'now'> & ApiKeyPluginDeps & IdempotencyPluginDeps) {
  const signingKey = deps.config.SIGNING_KEY!;
  const meta = (principal: ApiKeyPrincipal, requestMeta: RequestMeta) => ({
    ...requestMeta,
    workspaceId: principal.workspace.id,
    actor: { type: 'api_key' as const, id: principal.keyId },
  });

  return (
    new Elysia({ name: 'scene-routes' })
      .use(apiKeyPlugin(deps))
      .use(idempotencyPlugin(deps))
      .use(requestMetaPlugin(deps))
      // docs/design.md §10: every scene answer carries its ETag, the hash of the body sent, computed here for
      // all of them (idempotent replays, answered before the handler, get it from `replayHeaders`).
      // A GET whose If-None-Match names it is answered 304 without a body.
      .onAfterHandle(({ request, response, set }) => {
        if (response === null || typeof response !== 'object' || response instanceof Response) return;
        const etag = etagOf(response);
        set.headers.etag = etag;
        const ifNoneMatch = request.headers.get('if-none-match');
        if (request.method === 'GET' && ifNoneMatch !== null && conditionNames(ifNoneMatch, etag, 'weak')) {
          set.status = 304;
          return new Response(null, { status: 304 });
        }
      })
      .post(
        '/v2/scenes',
        async ({ principal, body, set, requestMeta }) => {
          const created = await createScene(deps.sql, body, meta(principal, requestMeta));
          set.status = 201;
          return created.document;
        },
        {
          operation: 'scenes.create',
          idempotent: { operation: 'scenes.create', required: true, replayHeaders: (body: unknown) => ({ etag: etagOf(body) }) },
          body: sceneRequestBody,
          detail: {
            summary: 'Create a scene',
            description: [
              "Creates a scene at revision 1: how renders and viewer sessions present an item (background, camera, quality) and the viewer's chrome (controls, fullscreen, watermark). The `ETag` header is the quoted SHA-256 of the RFC 8785 canonical body; send it as `If-Match` to update the scene.",
              'Requires an `Idempotency-Key` (a replay carries the ETag too).',
              'Errors: 400 `invalid_scene` (details name each field), 400 `idempotency_key_required`, 409 `idempotency_key_reused` or `idempotency_key_in_use`.',
            ].join('\n\n'),
            tags: ['media'],
            responses: routeResponses({ 201: { description: 'Scene created (revision 1)', body: sceneDocumentSchema } }),
          },
        },
      )
      .get(
        '/v2/scenes',
        async ({ principal, query }) => {
          const filters = { workspace: principal.workspace.id };
          const after = query.cursor ? decodeCursor(signingKey, 'scenes', filters, query.cursor, position) : null;
          const page = await listScenes(deps.sql, principal.workspace.id, after, query.limit);
          return { data: page.scenes.map((scene) => scene.document), next_cursor: page.next ? encodeCursor(signingKey, 'scenes', filters, page.next) : null };
        },
        {
          operation: 'scenes.list',
          query: listQuery,
          response: { 200: scenePage },
          detail: {
            summary: 'Scenes, newest first',
            description: [
              "Scenes of the workspace at their latest revision, newest first. `If-None-Match` with the answer's `ETag` gives a 304.",
              '`limit` 1 to 100 (default 25).',
              'Errors: 400 `invalid_cursor`.',
            ].join('\n\n'),
            tags: ['media'],
            responses: routeResponses(notModified),
          },
        },
      )
      .get(
        '/v2/scenes/:scene_id',
        async ({ principal, params }) => {
          const found = await findSceneRevision(deps.sql, principal.workspace.id, params.scene_id);
          if (!found.ok) throw sceneErrors.sceneNotFound();
          return found.document;
        },
        {
          operation: 'scenes.get',
          params: sceneParams,
          response: { 200: sceneDocumentSchema },
          detail: {
            summary: "A scene's latest revision",
            description: ["A scene's latest revision, with its `ETag`; `If-None-Match` with it gives a 304.", 'Errors: 404 `scene_not_found`.'].join('\n\n'),
            tags: ['media'],
            responses: routeResponses(notModified, 404),
          },
        },
      )
      .get(
        '/v2/scenes/:scene_id/revisions/:revision',
        async ({ principal, params }) => {
          const found = await findSceneRevision(deps.sql, principal.workspace.id, params.scene_id, params.revision);
          if (!found.ok) throw found.code === 'scene_not_found' ? sceneErrors.sceneNotFound() : sceneErrors.revisionNotFound(params.revision);
          return found.document;
        },
        {
          operation: 'scenes.revision',
          params: revisionParams,
          response: { 200: sceneDocumentSchema },
          detail: {
            summary: 'One revision of a scene',
            description: [
              'One revision of a scene, with its `ETag`; a revision never changes.',
              'Errors: 404 `scene_not_found`, 404 `revision_not_found`.',
            ].join('\n\n'),
            tags: ['media'],
            responses: routeResponses(notModified, 404),
          },
        },
      )
      .put(
        '/v2/scenes/:scene_id',
        async ({ principal, params, body, request, requestMeta }) => {
          const ifMatch = request.headers.get('if-match');
          if (ifMatch === null) throw sceneErrors.preconditionRequired();
          const updated = await updateScene(deps.sql, params.scene_id, ifMatch, body, meta(principal, requestMeta));
          return updated.document;
        },
        {
          operation: 'scenes.update',
          params: sceneParams,
          body: sceneRequestBody,
          response: { 200: sceneDocumentSchema },
          detail: {
            summary: "Write a scene's next revision",
            description: [
              "Writes the body as the scene's next revision and answers it with its new `ETag`. `If-Match` must name the latest revision's ETag, so two writers never overwrite each other unknowingly.",
              'Errors: 400 `invalid_scene`, 404 `scene_not_found`, 412 `etag_mismatch` (another revision was written since: read the scene again), 428 `precondition_required` (no If-Match).',
            ].join('\n\n'),
            tags: ['media'],
            responses: routeResponses({}, 404, 412, 428),
          },
        },
      )
  );
}
