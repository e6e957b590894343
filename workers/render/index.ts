import { Histogram } from 'prom-client';
import { buildItemCard } from '../../shared/media/item-card.ts';
import { type RenderRow, renderBlobKey } from '../../shared/media/renders-model.ts';
import { leaseRender, queuedRenders, renewRenderLease } from '../../shared/media/renders-repository.ts';
import { completeRender, expireRenderLeases, releaseFailedRender, renderJobId } from '../../shared/media/renders-service.ts';
import { findSceneRevision } from '../../shared/media/scenes.ts';
import { viewerImageResponse } from '../../shared/media/viewer/images.ts';
import { resolveViewerFiles, type ViewerRenderRequest, viewerRenderRequest } from '../../shared/media/viewer/index.ts';
import { newId } from '../../shared/util/ids.ts';
import { holdLease, LeaseLostError, lostLease, sweepLeases } from '../lease.ts';
import { handle, type PoolContext, type PoolDefinition } from '../pool.ts';
import { BrowserCrashedError, RenderEngine, ViewerPageError } from './engine.ts';
import { type DrawnPixels, finishImage, storeImage } from './image.ts';

/**
 * The `render` pool (docs/design.md §10): `renders.render` leases one render, draws it on a warm Chromium
 * page already showing the viewer in render mode, post-processes with sharp and stores the image, then commits the row under the
 * lease with render.completed (audit + outbox). `renders.sweep` (scheduled) returns expired leases
 * to `queued` (or `failed` on the last attempt) and re-enqueues queued renders whose job went missing.
 */
const SWEEP_BATCH = 500;
// Relaunches of a crashed browser within one attempt before the attempt itself is given up.
const CRASH_RETRIES = 2;
// A released (retryable) attempt waits this long before its next job, so a sick browser is not hammered.
const RETRY_DELAY_MS = 1_000;

/** docs/design.md §12 render durations: drawing on the page plus sharp's post-processing, by format and outcome. */
const renderDurations = new Histogram({
  name: 'cs2_render_duration_seconds',
  help: 'Time to draw one render on a Chromium page and post-process it with sharp, by output format and outcome (succeeded or failed)',
  labelNames: ['format', 'outcome'] as const,
  buckets: [0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
  registers: [],
});

/** Why an attempt failed, as the client will read it when it was the last one. */
class RenderFailure extends Error {
  constructor(
    readonly code: string,
    message: string,
    /** True when another attempt would fail the same way (the render fails at once). */
    readonly final: boolean,
  ) {
    super(message);
  }
}

function settings(config: PoolContext['config']) {
  return {
    leaseMs: config.RENDER_LEASE_SECONDS * 1000,
    maxAttempts: config.RENDER_MAX_ATTEMPTS,
    blobRoot: config.BLOB_DIR,
  };
}

/** Draws the page; a crashed browser is replaced (the engine relaunches on the next call) and the render retried. */
async function drawWithRecovery(engine: RenderEngine, request: ViewerRenderRequest, log: PoolContext['log']): Promise<DrawnPixels> {
  for (let crash = 0; ; crash += 1) {
    try {
      return await engine.render(request);
    } catch (error) {
      if (!(error instanceof BrowserCrashedError) || crash >= CRASH_RETRIES) throw error;
      log.warn({ crash: crash + 1 }, 'chromium crashed during a render; retrying on a new browser');
    }
  }
}

/** The page's request: the 3D item files, or (docs/design.md §18, `mode: card`) the item card. */
async function renderRequestOf(context: PoolContext, row: RenderRow, scene: Parameters<typeof viewerRenderRequest>[0]['scene']): Promise<ViewerRenderRequest> {
  const { width, height, background } = row.output;
  if (row.mode === 'card') {
    // The item image fills at most the card's width: ask the cache for that size (rounded up to a power of two).
    const card = await buildItemCard(context, row.item, { imageSize: Math.max(width, (height * 4) / 3) });
    return viewerRenderRequest({ item: row.item, scene, files: null, card, width, height, background });
  }
  const files = resolveViewerFiles(context.config.ITEM_FILES_DIR, row.item);
  if (!files) throw new RenderFailure('renderer_item_not_found', `The renderer has no model for definition ${row.item.item.definition_index}.`, true);
  return viewerRenderRequest({ item: row.item, scene, files, width, height, background });
}

async function drawRender(context: PoolContext, engine: RenderEngine, row: RenderRow): Promise<Buffer> {
  const scene = await findSceneRevision(context.sql, row.workspace_id, row.scene_id, row.scene_revision);
  if (!scene.ok) throw new RenderFailure(scene.code, 'The scene revision of this render no longer exists.', true);
  const { format } = row.output;
  const request = await renderRequestOf(context, row, scene.document);
  const started = performance.now();
  let outcome: 'succeeded' | 'failed' = 'failed';
  try {
    const pixels = await drawWithRecovery(engine, request, context.log);
    const image = await finishImage(pixels, row.output);
    outcome = 'succeeded';
    return image;
  } catch (error) {
    // docs/design.md §18: an item image that cannot be fetched may come back; the next attempt tries again, the last one fails with this code.
    if (error instanceof ViewerPageError && error.code === 'item_image_unavailable') {
      throw new RenderFailure('item_image_unavailable', "The item's image could not be fetched from its upstream; the card was not drawn.", false);
    }
    if (error instanceof ViewerPageError) throw new RenderFailure('render_failed', 'The item could not be drawn.', true);
    throw error;
  } finally {
    const ms = performance.now() - started;
    renderDurations.observe({ format, outcome }, ms / 1000);
    context.log.debug({ render_id: row.render_id, format, ms: Math.round(ms) }, 'render drawn');
  }
}

export async function runRender(context: PoolContext, engine: RenderEngine, renderId: string): Promise<Record<string, unknown>> {
  const { sql, log, now, config, enqueue } = context;
  const { leaseMs, maxAttempts, blobRoot } = settings(config);
  const token = newId();
  const row = await leaseRender(sql, { renderId, token, now: now(), leaseMs, maxAttempts });
  // Finished, held by a live worker, or out of attempts (the sweeper fails it): nothing to do here.
  if (!row) return { render_id: renderId, leased: false };
  const renderLog = log.child({ render_id: row.render_id, attempt: row.attempts });
  // Renewed while the page draws (workers/lease.ts); confirmed once more right before the image is committed.
  const lease = holdLease({
    what: 'render',
    leasedUntil: row.lease_until!,
    leaseMs,
    renew: () => renewRenderLease(sql, { renderId: row.render_id, token, now: now(), leaseMs }),
    now,
    log: renderLog,
  });
  try {
    const image = await drawRender(context, engine, row);
    // A draw cannot be interrupted midway: a lease lost meanwhile stops the attempt here, before any write.
    lease.signal.throwIfAborted();
    const key = renderBlobKey(row);
    const written = await storeImage(blobRoot, key, token, image, () => lease.confirm());
    lease.stop();
    const completed = await completeRender(sql, { renderId: row.render_id, token, now: now(), blobKey: key, ...written });
    if (!completed) throw new LeaseLostError('render');
    renderLog.info({ bytes: written.bytes }, 'render succeeded');
    return { render_id: row.render_id, state: 'succeeded', bytes: written.bytes };
  } catch (error) {
    lease.stop();
    if (lostLease(error, lease)) {
      renderLog.warn('render lease lost; another worker or the sweeper has it');
      return { render_id: row.render_id, leased: false };
    }
    const failure = error instanceof RenderFailure ? error : null;
    if (!failure) renderLog.error({ err: error }, 'render attempt failed');
    const released = await releaseFailedRender(sql, {
      renderId: row.render_id,
      token,
      now: now(),
      maxAttempts,
      final: failure?.final ?? false,
      errorCode: failure?.code ?? 'render_failed',
      errorMessage: failure?.message ?? `The renderer failed on each of ${row.attempts} attempts.`,
    });
    // Attempts remain: the next one is queued now rather than at the next sweep.
    if (released?.state === 'queued')
      await enqueue('renders.render', { render_id: released.render_id }, { jobId: renderJobId(released), delay: RETRY_DELAY_MS });
    return { render_id: row.render_id, state: released?.state ?? 'unknown' };
  }
}

export async function sweepRenders(context: PoolContext): Promise<Record<string, number>> {
  const { sql, log, now, config, queue, enqueue } = context;
  const swept = await sweepLeases(queue, {
    expire: () => expireRenderLeases(sql, { now: now(), maxAttempts: config.RENDER_MAX_ATTEMPTS }),
    queued: () => queuedRenders(sql, SWEEP_BATCH),
    jobId: renderJobId,
    enqueue: (row, jobId) => enqueue('renders.render', { render_id: row.render_id }, { jobId }),
  });
  const result = { leases_requeued: swept.requeued.length, leases_failed: swept.failed.length, jobs_enqueued: swept.enqueued };
  if (Object.values(result).some((value) => value > 0)) log.info(result, 'render sweep');
  return result;
}

/** The engine of this process: one browser, created at the first render (a pool without jobs never launches Chromium). */
export function createRenderEngine(context: Pick<PoolContext, 'config' | 'log' | 'sql'>): RenderEngine {
  return new RenderEngine({
    chromiumPath: context.config.CHROMIUM_PATH,
    pages: context.config.RENDER_PAGES,
    itemFilesDir: context.config.ITEM_FILES_DIR,
    timeoutMs: context.config.RENDER_TIMEOUT_MS,
    log: context.log,
    images: (path, search) => viewerImageResponse(context, path, search),
  });
}

export function renderHandlers(context: PoolContext, engine: RenderEngine) {
  return [handle('renders.render', ({ render_id }) => runRender(context, engine, render_id)), handle('renders.sweep', () => sweepRenders(context))];
}

export const renderPool: PoolDefinition = {
  pool: 'render',
  schedules: (config) => [{ id: 'render-sweep', job: 'renders.sweep', everyMs: config.RENDER_SWEEP_SECONDS * 1000 }],
  // Enough jobs in flight to keep RENDER_PAGES pages busy (the engine's page slots are the real bound;
  // a job waiting for a page holds its heartbeated lease) and a sweep never waits behind renders:
  // twice the pages, and never fewer than 8.
  concurrency: (config) => Math.max(8, 2 * config.RENDER_PAGES),
  metrics: [renderDurations],
  handlers: (context) => renderHandlers(context, createRenderEngine(context)),
};
