import { type AuditActor, insertAuditEvent } from '../audit/events.ts';
import { ApiError } from '../http/errors.ts';
import type { Queryable, Sql } from '../platform/db.ts';
import { newId } from '../util/ids.ts';
import { conditionNames, etagOf, type SceneBody, type SceneDocument, sceneDocument } from './scenes-model.ts';
import { findRevision, insertScene, insertSceneRevision, lockSceneForUpdate, setLatestRevision } from './scenes-repository.ts';

export { type SceneChrome, type SceneDocument, type ScenePresentation, sceneDocumentSchema } from './scenes-model.ts';

/** Scenes with immutable revisions (docs/design.md §10): the service the routes, viewer sessions and renders call. */

type RequestMeta = { workspaceId: string; actor: AuditActor; requestId: string; now: Date };
export type SceneAnswer = { document: SceneDocument; etag: string; revision: number };
export type SceneLookup = ({ ok: true } & SceneAnswer) | { ok: false; code: 'scene_not_found' | 'revision_not_found' };

export const sceneErrors = {
  sceneNotFound: () => new ApiError(404, 'scene_not_found', 'No scene with this id in your workspace.'),
  revisionNotFound: (revision: number) => new ApiError(404, 'revision_not_found', `The scene has no revision ${revision}.`),
  preconditionRequired: () =>
    new ApiError(428, 'precondition_required', "Updating a scene requires an If-Match header with the scene's current ETag (from GET /v2/scenes/{scene_id})."),
  etagMismatch: () =>
    new ApiError(412, 'etag_mismatch', "If-Match does not name the scene's latest revision: it changed since you read it. Read it again, then retry."),
};

/**
 * A revision of a workspace's scene, the latest when `revision` is omitted, with its ETag as stored
 * (equal to the ETag header of GET /v2/scenes/{scene_id}, quotes included: viewer-session and render
 * receipts quote it). Another workspace's scene is `scene_not_found`.
 */
export async function findSceneRevision(db: Queryable, workspaceId: string, sceneId: string, revision?: number): Promise<SceneLookup> {
  const found = await findRevision(db, workspaceId, sceneId, revision);
  if (!found.sceneFound) return { ok: false, code: 'scene_not_found' };
  if (!found.stored) return { ok: false, code: 'revision_not_found' };
  return { ok: true, ...found.stored };
}

/** Creates a scene at revision 1 and records `scene.created` in the same transaction (docs/design.md §7). */
export async function createScene(sql: Sql, body: SceneBody, meta: RequestMeta): Promise<SceneAnswer> {
  const sceneId = newId();
  const document = sceneDocument(sceneId, 1, body, meta.now);
  const etag = etagOf(document);
  await sql.begin(async (tx) => {
    await insertScene(tx, { sceneId, workspaceId: meta.workspaceId, createdAt: meta.now });
    await insertSceneRevision(tx, { sceneId, revision: 1, document, etag, createdAt: meta.now });
    await insertAuditEvent(tx, {
      workspaceId: meta.workspaceId,
      eventType: 'scene.created',
      resourceType: 'scene',
      resourceId: sceneId,
      outcome: 'succeeded',
      actor: meta.actor,
      requestId: meta.requestId,
      occurredAt: meta.now,
      metadata: { revision: 1, etag, name: document.name },
    });
  });
  return { document, etag, revision: 1 };
}

/**
 * Writes revision n+1 when `ifMatch` names revision n's ETag, recording `scene.updated` in the same
 * transaction. The scene row is locked first, so of two updates made from the same revision one
 * wins and the other, comparing against the winner's ETag, gets 412 (recorded as rejected, docs/design.md §7).
 */
export async function updateScene(sql: Sql, sceneId: string, ifMatch: string, body: SceneBody, meta: RequestMeta): Promise<SceneAnswer> {
  const outcome = await sql.begin(async (tx) => {
    const scene = await lockSceneForUpdate(tx, meta.workspaceId, sceneId);
    if (!scene) return { kind: 'not_found' as const };
    if (!conditionNames(ifMatch, scene.etag, 'strong')) return { kind: 'mismatch' as const, latestRevision: scene.latestRevision };
    const revision = scene.latestRevision + 1;
    const document = sceneDocument(sceneId, revision, body, meta.now);
    const etag = etagOf(document);
    await insertSceneRevision(tx, { sceneId, revision, document, etag, createdAt: meta.now });
    await setLatestRevision(tx, sceneId, revision, meta.now);
    await insertAuditEvent(tx, {
      workspaceId: meta.workspaceId,
      eventType: 'scene.updated',
      resourceType: 'scene',
      resourceId: sceneId,
      outcome: 'succeeded',
      actor: meta.actor,
      requestId: meta.requestId,
      occurredAt: meta.now,
      metadata: { revision, previous_etag: scene.etag, etag, name: document.name },
    });
    return { kind: 'updated' as const, answer: { document, etag, revision } };
  });
  if (outcome.kind === 'updated') return outcome.answer;
  if (outcome.kind === 'not_found') throw sceneErrors.sceneNotFound();
  await insertAuditEvent(sql, {
    workspaceId: meta.workspaceId,
    eventType: 'request.denied',
    resourceType: 'operation',
    resourceId: 'scenes.update',
    outcome: 'rejected',
    actor: meta.actor,
    requestId: meta.requestId,
    occurredAt: meta.now,
    metadata: { status: 412, reason: 'etag_mismatch', scene_id: sceneId, latest_revision: outcome.latestRevision },
  });
  throw sceneErrors.etagMismatch();
}
