import type { ItemSelector } from '../inspect/selector.ts';
import type { Queryable } from '../platform/db.ts';
import type { RenderMode, RenderOutput, RenderRow } from './renders-model.ts';

/**
 * The `renders` table (sql/0009_media.sql), one function per query. The guarded updates (state and
 * lease token in the `where`) make every transition exclusive; renders-service.ts wraps those that
 * record events.
 */
const COLUMNS = `render_id, workspace_id, state, item, scene_id, scene_revision, scene_etag, output, mode, request_key, attempts,
  lease_token, lease_until, blob_key, bytes, sha256, error_code, error_message, created_at, updated_at, completed_at`;

/**
 * Inserts a queued render unless the workspace already has a live one (queued, rendering or
 * succeeded) for the same request: then nothing is inserted and null is returned (the partial unique
 * index decides, so concurrent identical requests create exactly one).
 */
export async function insertRenderUnlessLive(
  db: Queryable,
  input: {
    renderId: string;
    workspaceId: string;
    item: ItemSelector;
    sceneId: string;
    sceneRevision: number;
    sceneEtag: string;
    output: RenderOutput;
    mode: RenderMode;
    requestKey: string;
    now: Date;
  },
): Promise<RenderRow | null> {
  const [row] = await db<RenderRow[]>`
    insert into renders (render_id, workspace_id, state, item, scene_id, scene_revision, scene_etag, output, mode, request_key, created_at, updated_at)
    values (${input.renderId}, ${input.workspaceId}, 'queued', ${db.json(input.item as never)}, ${input.sceneId}, ${input.sceneRevision},
            ${input.sceneEtag}, ${db.json(input.output as never)}, ${input.mode}, ${input.requestKey}, ${input.now}, ${input.now})
    on conflict (workspace_id, request_key) where state in ('queued', 'rendering', 'succeeded') do nothing
    returning ${db.unsafe(COLUMNS)}`;
  return row ?? null;
}

export async function findLiveRenderByRequest(db: Queryable, workspaceId: string, requestKey: string): Promise<RenderRow | null> {
  const [row] = await db<RenderRow[]>`
    select ${db.unsafe(COLUMNS)} from renders
    where workspace_id = ${workspaceId} and request_key = ${requestKey} and state in ('queued', 'rendering', 'succeeded')`;
  return row ?? null;
}

/** A workspace's render; another workspace's id is simply not found. */
export async function findRender(db: Queryable, workspaceId: string, renderId: string): Promise<RenderRow | null> {
  const [row] = await db<RenderRow[]>`select ${db.unsafe(COLUMNS)} from renders where render_id = ${renderId} and workspace_id = ${workspaceId}`;
  return row ?? null;
}

/** For the public image route, which has no workspace: the signature already names the render. */
export async function findRenderById(db: Queryable, renderId: string): Promise<RenderRow | null> {
  const [row] = await db<RenderRow[]>`select ${db.unsafe(COLUMNS)} from renders where render_id = ${renderId}`;
  return row ?? null;
}

/**
 * Takes the lease of a queued render, or of a rendering one whose lease ran out, if attempts remain.
 * Of any number of workers, one gets the row.
 */
export async function leaseRender(
  db: Queryable,
  input: { renderId: string; token: string; now: Date; leaseMs: number; maxAttempts: number },
): Promise<RenderRow | null> {
  const [row] = await db<RenderRow[]>`
    update renders
    set state = 'rendering', attempts = attempts + 1, lease_token = ${input.token},
        lease_until = ${new Date(input.now.getTime() + input.leaseMs)}, updated_at = ${input.now}
    where render_id = ${input.renderId} and attempts < ${input.maxAttempts}
      and (state = 'queued' or (state = 'rendering' and lease_until <= ${input.now}))
    returning ${db.unsafe(COLUMNS)}`;
  return row ?? null;
}

/** The heartbeat: extends the lease while this token still holds it; null means it was lost. */
export async function renewRenderLease(db: Queryable, input: { renderId: string; token: string; now: Date; leaseMs: number }): Promise<Date | null> {
  const [row] = await db<{ lease_until: Date }[]>`
    update renders set lease_until = ${new Date(input.now.getTime() + input.leaseMs)}
    where render_id = ${input.renderId} and state = 'rendering' and lease_token = ${input.token}
    returning lease_until`;
  return row?.lease_until ?? null;
}

/** Marks the render succeeded if this token still holds the lease; null: the lease was lost. */
export async function markRenderSucceeded(
  db: Queryable,
  input: { renderId: string; token: string; now: Date; blobKey: string; bytes: number; sha256: string },
): Promise<RenderRow | null> {
  const [row] = await db<RenderRow[]>`
    update renders
    set state = 'succeeded', blob_key = ${input.blobKey}, bytes = ${input.bytes}, sha256 = ${input.sha256},
        completed_at = ${input.now}, updated_at = ${input.now}, lease_token = null, lease_until = null
    where render_id = ${input.renderId} and state = 'rendering' and lease_token = ${input.token}
    returning ${db.unsafe(COLUMNS)}`;
  return row ?? null;
}

/**
 * Gives up this token's lease after a failed attempt: back to `queued` while attempts remain (unless
 * `final`), else `failed` with the error. Null when this token no longer held the lease.
 */
export async function releaseRenderLease(
  db: Queryable,
  input: { renderId: string; token: string; now: Date; maxAttempts: number; final: boolean; errorCode: string; errorMessage: string },
): Promise<RenderRow | null> {
  const [row] = await db<RenderRow[]>`
    update renders
    set state = case when ${input.final}::boolean or attempts >= ${input.maxAttempts} then 'failed' else 'queued' end,
        error_code = case when ${input.final}::boolean or attempts >= ${input.maxAttempts} then ${input.errorCode} end,
        error_message = case when ${input.final}::boolean or attempts >= ${input.maxAttempts} then ${input.errorMessage} end,
        completed_at = case when ${input.final}::boolean or attempts >= ${input.maxAttempts} then ${input.now}::timestamptz end,
        lease_token = null, lease_until = null, updated_at = ${input.now}
    where render_id = ${input.renderId} and state = 'rendering' and lease_token = ${input.token}
    returning ${db.unsafe(COLUMNS)}`;
  return row ?? null;
}

/** Leases that ran out with attempts left go back to `queued`. */
export async function requeueExpiredRenderLeases(db: Queryable, input: { now: Date; maxAttempts: number }): Promise<RenderRow[]> {
  return [
    ...(await db<RenderRow[]>`
    update renders set state = 'queued', lease_token = null, lease_until = null, updated_at = ${input.now}
    where state = 'rendering' and lease_until <= ${input.now} and attempts < ${input.maxAttempts}
    returning ${db.unsafe(COLUMNS)}`),
  ];
}

/** Leases that ran out on the last attempt: the render fails. */
export async function failExpiredRenderLeases(db: Queryable, input: { now: Date; maxAttempts: number }): Promise<RenderRow[]> {
  return [
    ...(await db<RenderRow[]>`
    update renders
    set state = 'failed', error_code = 'render_failed', completed_at = ${input.now}, updated_at = ${input.now},
        error_message = 'The renderer stopped responding on the last of ' || attempts || ' attempts.',
        lease_token = null, lease_until = null
    where state = 'rendering' and lease_until <= ${input.now} and attempts >= ${input.maxAttempts}
    returning ${db.unsafe(COLUMNS)}`),
  ];
}

/** Queued renders, oldest first, for the sweeper to check that each has its BullMQ job. */
export async function queuedRenders(db: Queryable, limit: number): Promise<Pick<RenderRow, 'render_id' | 'attempts'>[]> {
  return db<Pick<RenderRow, 'render_id' | 'attempts'>[]>`
    select render_id, attempts from renders where state = 'queued' order by updated_at, render_id limit ${limit}`;
}
