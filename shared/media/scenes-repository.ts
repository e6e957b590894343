import type { Queryable } from '../platform/db.ts';
import type { SceneDocument } from './scenes-model.ts';

/** Scenes and their immutable revisions (sql/0009_media.sql): one function per query. */

export type StoredRevision = { document: SceneDocument; etag: string; revision: number };
export type ScenePosition = { created_at: string; scene_id: string };

export async function insertScene(db: Queryable, scene: { sceneId: string; workspaceId: string; createdAt: Date }): Promise<void> {
  await db`
    insert into scenes (scene_id, workspace_id, latest_revision, created_at, updated_at)
    values (${scene.sceneId}, ${scene.workspaceId}, 1, ${scene.createdAt}, ${scene.createdAt})`;
}

export async function insertSceneRevision(
  db: Queryable,
  revision: { sceneId: string; revision: number; document: SceneDocument; etag: string; createdAt: Date },
): Promise<void> {
  await db`
    insert into scene_revisions (scene_id, revision, document, etag, created_at)
    values (${revision.sceneId}, ${revision.revision}, ${db.json(revision.document as never)}, ${revision.etag}, ${revision.createdAt})`;
}

/**
 * The workspace's scene with its latest revision's ETag, its row locked for the rest of the
 * transaction: concurrent updates of one scene queue here, so each compares If-Match against the
 * revision the previous one made. Another workspace's scene finds nothing.
 */
export async function lockSceneForUpdate(db: Queryable, workspaceId: string, sceneId: string): Promise<{ latestRevision: number; etag: string } | null> {
  // The scene row alone: a lock taken through a join would, after waiting, re-check the joined
  // revision row it read before the wait, find the revision moved on, and return nothing.
  const [scene] = await db<{ latest_revision: number }[]>`
    select latest_revision from scenes where scene_id = ${sceneId} and workspace_id = ${workspaceId} for update`;
  if (!scene) return null;
  const [revision] = await db<{ etag: string }[]>`
    select etag from scene_revisions where scene_id = ${sceneId} and revision = ${scene.latest_revision}`;
  return { latestRevision: scene.latest_revision, etag: revision!.etag };
}

export async function setLatestRevision(db: Queryable, sceneId: string, revision: number, updatedAt: Date): Promise<void> {
  await db`update scenes set latest_revision = ${revision}, updated_at = ${updatedAt} where scene_id = ${sceneId}`;
}

/**
 * A revision of the workspace's scene (the latest when `revision` is undefined). `sceneFound`
 * tells a missing scene from a missing revision of an existing one.
 */
export async function findRevision(
  db: Queryable,
  workspaceId: string,
  sceneId: string,
  revision: number | undefined,
): Promise<{ sceneFound: boolean; stored: StoredRevision | null }> {
  const [found] = await db<{ document: SceneDocument | null; etag: string | null; revision: number | null }[]>`
    select r.document, r.etag, r.revision
    from scenes s
    left join scene_revisions r
      on r.scene_id = s.scene_id and r.revision = ${revision === undefined ? db`s.latest_revision` : db`${revision}::int4`}
    where s.scene_id = ${sceneId} and s.workspace_id = ${workspaceId}`;
  if (!found) return { sceneFound: false, stored: null };
  if (found.document === null || found.etag === null || found.revision === null) return { sceneFound: true, stored: null };
  return { sceneFound: true, stored: { document: found.document, etag: found.etag, revision: found.revision } };
}

/** Latest revisions of the workspace's scenes, newest scene first, keyset on (created_at, scene_id). */
export async function listScenes(
  db: Queryable,
  workspaceId: string,
  after: ScenePosition | null,
  limit: number,
): Promise<{ scenes: StoredRevision[]; next: ScenePosition | null }> {
  const rows = await db<(StoredRevision & { scene_id: string; created_at_text: string })[]>`
    select r.document, r.etag, r.revision, s.scene_id,
           to_char(s.created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as created_at_text
    from scenes s join scene_revisions r on r.scene_id = s.scene_id and r.revision = s.latest_revision
    where s.workspace_id = ${workspaceId}
      ${after ? db`and (s.created_at, s.scene_id) < (${after.created_at}::timestamptz, ${after.scene_id}::uuid)` : db``}
    order by s.created_at desc, s.scene_id desc
    limit ${limit + 1}`;
  const page = rows.slice(0, limit);
  const last = page[page.length - 1];
  return {
    scenes: page.map(({ document, etag, revision }) => ({ document, etag, revision })),
    next: rows.length > limit && last ? { created_at: last.created_at_text, scene_id: last.scene_id } : null,
  };
}
