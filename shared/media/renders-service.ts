import { type AuditActor, insertAuditEvent } from '../audit/events.ts';
import { insertOutboxEvent } from '../events/outbox.ts';
import type { ItemSelector } from '../inspect/selector.ts';
import { enqueue, type JobQueues } from '../jobs/queues.ts';
import type { Queryable, Sql } from '../platform/db.ts';
import { newId } from '../util/ids.ts';
import { type RenderMode, type RenderOutput, type RenderRow, renderEventPayload, renderRequestKey } from './renders-model.ts';
import {
  failExpiredRenderLeases,
  findLiveRenderByRequest,
  insertRenderUnlessLive,
  markRenderSucceeded,
  releaseRenderLease,
  requeueExpiredRenderLeases,
} from './renders-repository.ts';

/**
 * The render lifecycle (docs/design.md §10, docs/design.md §7): each transition clients can observe records its audit
 * event (and, when it ends the render, its outbox event for webhooks) in the same transaction; jobs
 * are enqueued after commit and a sweeper re-enqueues any that went missing.
 */
const SYSTEM: AuditActor = { type: 'system', id: null };

/** One BullMQ job per attempt, so a re-enqueue after a lost lease never collides with a dead worker's job. */
export function renderJobId(row: Pick<RenderRow, 'render_id' | 'attempts'>): string {
  return `render-${row.render_id}-${row.attempts}`;
}

export async function enqueueRender(queues: JobQueues, row: Pick<RenderRow, 'render_id' | 'attempts'>, delay?: number): Promise<void> {
  await enqueue(queues, 'renders.render', { render_id: row.render_id }, { jobId: renderJobId(row), ...(delay ? { delay } : {}) });
}

/**
 * A new queued render with its `render.requested` audit event, or the workspace's live render of the
 * same request (`created: false`; docs/design.md §10 answers it with 200). The unique partial index decides
 * between concurrent identical requests; a render that turned `failed` meanwhile frees the key, so
 * the loop tries again.
 */
export async function createRender(
  sql: Sql,
  input: {
    workspaceId: string;
    item: ItemSelector;
    scene: { sceneId: string; revision: number; etag: string };
    output: RenderOutput;
    mode: RenderMode;
    actor: AuditActor;
    requestId: string | null;
    now: Date;
  },
): Promise<{ row: RenderRow; created: boolean }> {
  const requestKey = renderRequestKey({
    item: input.item,
    sceneId: input.scene.sceneId,
    sceneRevision: input.scene.revision,
    output: input.output,
    mode: input.mode,
  });
  for (let tries = 0; tries < 3; tries += 1) {
    const outcome = await sql.begin(async (tx) => {
      const renderId = newId();
      const row = await insertRenderUnlessLive(tx, {
        renderId,
        workspaceId: input.workspaceId,
        item: input.item,
        sceneId: input.scene.sceneId,
        sceneRevision: input.scene.revision,
        sceneEtag: input.scene.etag,
        output: input.output,
        mode: input.mode,
        requestKey,
        now: input.now,
      });
      if (!row) return null;
      await insertAuditEvent(tx, {
        workspaceId: input.workspaceId,
        eventType: 'render.requested',
        resourceType: 'render',
        resourceId: renderId,
        outcome: 'accepted',
        actor: input.actor,
        requestId: input.requestId,
        metadata: {
          scene_id: input.scene.sceneId,
          scene_revision: input.scene.revision,
          definition_index: input.item.item.definition_index,
          output: input.output,
          mode: input.mode,
        },
        occurredAt: input.now,
      });
      return row;
    });
    if (outcome) return { row: outcome, created: true };
    const existing = await findLiveRenderByRequest(sql, input.workspaceId, requestKey);
    if (existing) return { row: existing, created: false };
  }
  throw new Error('could not create or find the render after three tries');
}

async function recordRenderEnd(tx: Queryable, row: RenderRow, now: Date): Promise<void> {
  const succeeded = row.state === 'succeeded';
  const payload = renderEventPayload(row);
  await insertAuditEvent(tx, {
    workspaceId: row.workspace_id,
    eventType: succeeded ? 'render.completed' : 'render.failed',
    resourceType: 'render',
    resourceId: row.render_id,
    outcome: succeeded ? 'succeeded' : 'failed',
    actor: SYSTEM,
    metadata: { ...payload, attempts: row.attempts },
    occurredAt: now,
  });
  await insertOutboxEvent(tx, { type: succeeded ? 'render.completed' : 'render.failed', workspaceId: row.workspace_id, payload, at: now });
}

/** Commits the image if this token still holds the lease, with render.completed (audit + outbox). Null: lease lost. */
export async function completeRender(
  sql: Sql,
  input: { renderId: string; token: string; now: Date; blobKey: string; bytes: number; sha256: string },
): Promise<RenderRow | null> {
  return sql.begin(async (tx) => {
    const row = await markRenderSucceeded(tx, input);
    if (row) await recordRenderEnd(tx, row, input.now);
    return row;
  });
}

/**
 * After a failed attempt: back to `queued` while attempts remain and the failure may pass (`final`
 * false), else `failed` with render.failed (audit + outbox). Null when the lease was already lost.
 */
export async function releaseFailedRender(
  sql: Sql,
  input: { renderId: string; token: string; now: Date; maxAttempts: number; final: boolean; errorCode: string; errorMessage: string },
): Promise<RenderRow | null> {
  return sql.begin(async (tx) => {
    const row = await releaseRenderLease(tx, input);
    if (row?.state === 'failed') await recordRenderEnd(tx, row, input.now);
    return row;
  });
}

/** The sweeper's first duty: run-out leases back to `queued`, or `failed` (with its events) on the last attempt. */
export async function expireRenderLeases(sql: Sql, input: { now: Date; maxAttempts: number }): Promise<{ requeued: RenderRow[]; failed: RenderRow[] }> {
  return sql.begin(async (tx) => {
    const requeued = await requeueExpiredRenderLeases(tx, input);
    const failed = await failExpiredRenderLeases(tx, input);
    for (const row of failed) await recordRenderEnd(tx, row, input.now);
    return { requeued, failed };
  });
}
