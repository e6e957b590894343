import { z } from 'zod';
import { ApiError } from '../../http/errors.ts';
import { validateItemSelector } from '../../inspect/item-validation.ts';
import { type ItemSelector, itemSelectorSchema } from '../../inspect/selector.ts';
import type { Queryable, Sql } from '../../platform/db.ts';
import { randomToken, sha256Hex } from '../../util/crypto.ts';
import { newId } from '../../util/ids.ts';
import { renderModeFor } from '../item-files.ts';
import { findSceneRevision, type SceneDocument, sceneErrors } from '../scenes.ts';

/**
 * Viewer sessions (docs/design.md §10): a random token in the page URL, stored only as its SHA-256, pinned to
 * one scene revision and one item. No API key ever appears in the URL: the token is the only
 * credential and opens this one page until it expires.
 */

export const VIEWER_PAGE_PATH = '/viewer';

export const viewerSessionReceiptSchema = z.object({
  session_id: z.uuid(),
  url: z.string().describe('The page: PUBLIC_BASE_URL/viewer/<token>; the token is the only credential and no API key is in it'),
  expires_at: z.iso.datetime().describe('After this the page answers 410 (VIEWER_SESSION_TTL_SECONDS after creation)'),
  item: itemSelectorSchema.describe('The item as it will be drawn: its item and state only'),
  mode: z
    .enum(['3d', 'card'])
    .describe(
      'How the page draws the item (docs/design.md §18): `3d` with a real 3D model of the definition in this deployment, else `card` (the item card). Read when the session is made; the page follows the item files it finds when opened.',
    ),
  scene: z
    .object({
      scene_id: z.uuid(),
      revision: z.number().int().min(1).describe('The exact revision the page draws, the latest when none was asked for'),
      etag: z.string().describe("That revision's ETag header, quotes included"),
    })
    .describe('Receipt of the scene revision used'),
});
export type ViewerSessionReceipt = z.infer<typeof viewerSessionReceiptSchema>;

export type CreateViewerSessionInput = { item: unknown; scene_id: string; scene_revision?: number };

export type ViewerSessionDeps = { sql: Sql; itemFilesDir: string; ttlSeconds: number };

/** 32 random bytes, base64url: 43 characters. Anything else in the URL is not a token we issued. */
const TOKEN_PATTERN = /^[A-Za-z0-9_-]{43}$/;

export const viewerErrors = {
  invalidItem: (details: { field: string; message: string }[]) =>
    new ApiError(400, 'invalid_item', 'The item is not one the renderer can draw; see details.', details),
};

/**
 * Checks the item (400 invalid_item), then the scene revision (404 scene_not_found /
 * revision_not_found, another workspace's scene included), and stores the session. A definition
 * without a real model is shown as an item card (docs/design.md §18), so no item is refused for its files. `baseUrl` is PUBLIC_BASE_URL or the request's origin.
 */
export async function createViewerSession(
  deps: ViewerSessionDeps,
  input: CreateViewerSessionInput,
  context: { workspaceId: string; baseUrl: string; now: Date },
): Promise<ViewerSessionReceipt> {
  const checked = validateItemSelector(input.item);
  if (!checked.ok) throw viewerErrors.invalidItem(checked.details);
  const item = checked.selector;

  const scene = await findSceneRevision(deps.sql, context.workspaceId, input.scene_id, input.scene_revision);
  if (!scene.ok) throw scene.code === 'scene_not_found' ? sceneErrors.sceneNotFound() : sceneErrors.revisionNotFound(input.scene_revision ?? 0);

  const token = randomToken(32);
  const sessionId = newId();
  const expiresAt = new Date(context.now.getTime() + deps.ttlSeconds * 1000);
  await insertViewerSession(deps.sql, {
    sessionId,
    workspaceId: context.workspaceId,
    tokenHash: sha256Hex(token),
    sceneId: input.scene_id,
    sceneRevision: scene.revision,
    item,
    createdAt: context.now,
    expiresAt,
  });
  return {
    session_id: sessionId,
    url: `${context.baseUrl.replace(/\/+$/, '')}${VIEWER_PAGE_PATH}/${token}`,
    expires_at: expiresAt.toISOString(),
    item,
    mode: renderModeFor(deps.itemFilesDir, item.item.definition_index),
    scene: { scene_id: input.scene_id, revision: scene.revision, etag: scene.etag },
  };
}

export type OpenedViewerSession = { state: 'open'; item: ItemSelector; scene: SceneDocument; expiresAt: Date } | { state: 'expired' } | { state: 'unknown' };

/** The session behind a page URL's token: open (with its item and pinned scene revision), expired, or unknown. */
export async function openViewerSession(sql: Sql, token: string, now: Date): Promise<OpenedViewerSession> {
  // A malformed token costs no query.
  if (!TOKEN_PATTERN.test(token)) return { state: 'unknown' };
  const session = await findViewerSessionByTokenHash(sql, sha256Hex(token));
  if (!session) return { state: 'unknown' };
  if (session.expiresAt.getTime() <= now.getTime()) return { state: 'expired' };
  return { state: 'open', item: session.item, scene: session.scene, expiresAt: session.expiresAt };
}

async function insertViewerSession(
  db: Queryable,
  session: {
    sessionId: string;
    workspaceId: string;
    tokenHash: string;
    sceneId: string;
    sceneRevision: number;
    item: ItemSelector;
    createdAt: Date;
    expiresAt: Date;
  },
): Promise<void> {
  await db`
    insert into viewer_sessions (session_id, workspace_id, token_hash, scene_id, scene_revision, item, created_at, expires_at)
    values (${session.sessionId}, ${session.workspaceId}, ${session.tokenHash}, ${session.sceneId}, ${session.sceneRevision},
            ${db.json(session.item)}, ${session.createdAt}, ${session.expiresAt})`;
}

async function findViewerSessionByTokenHash(db: Queryable, tokenHash: string): Promise<{ item: ItemSelector; scene: SceneDocument; expiresAt: Date } | null> {
  const rows = await db<{ item: ItemSelector; document: SceneDocument; expires_at: Date }[]>`
    select s.item, r.document, s.expires_at
    from viewer_sessions s
    join scene_revisions r on r.scene_id = s.scene_id and r.revision = s.scene_revision
    where s.token_hash = ${tokenHash}`;
  const row = rows[0];
  return row ? { item: row.item, scene: row.document, expiresAt: row.expires_at } : null;
}
