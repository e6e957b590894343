import { createHash } from 'node:crypto';
import { z } from 'zod';
import { ApiError, type ErrorDetail } from '../http/errors.ts';
import type { SignedUrl } from '../http/signed-url.ts';
import { validateItemSelector } from '../inspect/item-validation.ts';
import type { ItemSelector } from '../inspect/selector.ts';
import { canonicalJson } from '../util/canonical-json.ts';

/**
 * Renders (docs/design.md §10): the stored row, the request's checks, the JSON clients see and the event
 * payloads. The row is the system of record (renders-repository.ts); a BullMQ job only wakes a
 * `render` worker, which must win the row's lease before it draws anything (renders-service.ts).
 */
export const RENDER_STATES = ['queued', 'rendering', 'succeeded', 'failed'] as const;
export type RenderState = (typeof RENDER_STATES)[number];
export const RENDER_FORMATS = ['png', 'webp'] as const;
export type RenderFormat = (typeof RENDER_FORMATS)[number];
export const RENDER_SIZE = { min: 64, max: 2048 } as const;
/** docs/design.md §18: `3d` with a real model of the definition, `card` (the item card) without one. */
export const RENDER_MODES = ['3d', 'card'] as const;
export type RenderMode = (typeof RENDER_MODES)[number];

const side = z.number().int().min(RENDER_SIZE.min).max(RENDER_SIZE.max);
export const renderOutputSchema = z.strictObject({
  width: side,
  height: side,
  format: z.enum(RENDER_FORMATS),
  // Lower-cased, so "#FFFFFF" and "#ffffff" are one request (and one image).
  background: z.union([
    z.literal('transparent'),
    z
      .string()
      .regex(/^#[0-9a-fA-F]{6}$/)
      .transform((value) => value.toLowerCase()),
  ]),
});
export type RenderOutput = z.output<typeof renderOutputSchema>;

export type RenderRow = {
  render_id: string;
  workspace_id: string;
  state: RenderState;
  item: ItemSelector;
  scene_id: string;
  scene_revision: number;
  scene_etag: string;
  output: RenderOutput;
  mode: RenderMode;
  request_key: string;
  attempts: number;
  lease_token: string | null;
  lease_until: Date | null;
  blob_key: string | null;
  bytes: number | null;
  sha256: string | null;
  error_code: string | null;
  error_message: string | null;
  created_at: Date;
  updated_at: Date;
  completed_at: Date | null;
};

/** The render as clients see it (POST receipt and GET). `image` only when succeeded, `error` only when failed. */
export type RenderJson = {
  render_id: string;
  state: RenderState;
  item: ItemSelector;
  scene: { scene_id: string; revision: number; etag: string };
  output: RenderOutput;
  mode: RenderMode;
  created_at: string;
  completed_at: string | null;
  image?: { url: string; expires_at: string; width: number; height: number; format: RenderFormat; bytes: number; sha256: string };
  error?: { code: string; message: string };
};

export function toRenderJson(row: RenderRow, image: SignedUrl | null): RenderJson {
  const json: RenderJson = {
    render_id: row.render_id,
    state: row.state,
    item: row.item,
    scene: { scene_id: row.scene_id, revision: row.scene_revision, etag: row.scene_etag },
    output: row.output,
    mode: row.mode,
    created_at: row.created_at.toISOString(),
    completed_at: row.completed_at ? row.completed_at.toISOString() : null,
  };
  if (row.state === 'succeeded' && image) {
    json.image = {
      url: image.url,
      expires_at: image.expiresAt.toISOString(),
      width: row.output.width,
      height: row.output.height,
      format: row.output.format,
      bytes: row.bytes!,
      sha256: row.sha256!,
    };
  }
  if (row.state === 'failed') json.error = { code: row.error_code ?? 'render_failed', message: row.error_message ?? 'The render failed.' };
  return json;
}

/** Webhook and audit payload of render.completed / render.failed (no URL: it would expire in the outbox). */
export function renderEventPayload(row: RenderRow): Record<string, unknown> {
  const { image: _image, ...json } = toRenderJson(row, null);
  if (row.state === 'succeeded') {
    return { ...json, image: { width: row.output.width, height: row.output.height, format: row.output.format, bytes: row.bytes, sha256: row.sha256 } };
  }
  return json;
}

function issueDetails(prefix: string, issues: readonly z.core.$ZodIssue[]): ErrorDetail[] {
  return issues.slice(0, 20).map((issue) => ({ field: [prefix, ...issue.path.map(String)].join('.'), message: issue.message }));
}

export const renderErrors = {
  invalidItem: (details: ErrorDetail[]) => new ApiError(400, 'invalid_item', 'The item selector is invalid (docs/design.md §10 "Item selector").', details),
  invalidOutput: (details: ErrorDetail[]) =>
    new ApiError(400, 'invalid_output', 'The output is invalid: width and height 64–2048, format png or webp, background transparent or #rrggbb.', details),
  rendererUnavailable: (missing: string[]) =>
    new ApiError(503, 'renderer_unavailable', `The renderer is unavailable (${missing.join(' and ')} missing); retry later.`),
  notFound: () => new ApiError(404, 'not_found', 'No render with this id in your workspace.'),
};

/**
 * docs/design.md §10: only `item.item` and `item.state` are read (other fields of the object are dropped);
 * an unknown definition, a paint the definition does not have or out-of-range state → 400 invalid_item.
 */
export function parseRenderItem(value: unknown): ItemSelector {
  const result = validateItemSelector(value, { field: 'body.item' });
  if (!result.ok) throw renderErrors.invalidItem(result.details);
  return result.selector;
}

export function parseRenderOutput(value: unknown): RenderOutput {
  const parsed = renderOutputSchema.safeParse(value);
  if (!parsed.success) throw renderErrors.invalidOutput(issueDetails('body.output', parsed.error.issues));
  return parsed.data;
}

/**
 * docs/design.md §10: the same item (canonical JSON), scene revision and output is one request. Keys are
 * sorted and the parsed values re-serialised, so key order and spacing in the client's body do not matter.
 */
export function renderRequestKey(input: { item: ItemSelector; sceneId: string; sceneRevision: number; output: RenderOutput; mode: RenderMode }): string {
  // A card is another image than the 3D render of the same request: once real item files arrive, the
  // same request is a new (3D) render. 3D keys are as they were before cards existed.
  const text = canonicalJson({
    item: input.item,
    scene_id: input.sceneId,
    scene_revision: input.sceneRevision,
    output: input.output,
    ...(input.mode === 'card' ? { mode: 'card' } : {}),
  });
  return createHash('sha256').update(text).digest('hex');
}

// Blob layout: one name per render, derived from its id alone, so every attempt of a render writes
// (by rename) the same blob and a retried job can never leave a second image behind.
export function renderBlobKey(row: Pick<RenderRow, 'workspace_id' | 'render_id' | 'output'>): string {
  return `renders/${row.workspace_id}/${row.render_id}.${row.output.format}`;
}

export const RENDER_CONTENT_TYPES: Record<RenderFormat, string> = { png: 'image/png', webp: 'image/webp' };
