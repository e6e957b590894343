import { z } from 'zod';
import { ApiError, type ErrorDetail } from '../http/errors.ts';
import { text } from '../http/validation.ts';
import { sha256Hex } from '../util/crypto.ts';
import { jcsCanonicalize } from '../util/jcs.ts';

/**
 * The viewer scene, schema 3 (docs/interface.md §2.4, docs/design.md §10): presentation settings only. Every object is
 * strict, so an unknown field anywhere (and with it any item identity or item state) is refused.
 */

export const SCENE_SCHEMA_VERSION = 3;
export const SCENE_KIND = 'service-viewer-scene';
export const BACKGROUND_TYPES = ['color', 'gradient', 'transparent'] as const;
export const CAMERA_PRESETS = ['inspect', 'front', 'back', 'left', 'right', 'top', 'closeup'] as const;
export const SCENE_QUALITIES = ['draft', 'interactive', 'high'] as const;
export const SCENE_LIGHTINGS = ['studio', 'soft', 'dramatic'] as const;
export const CAMERA_FOV = { min: 20, max: 90, default: 45 } as const;
export const SCENE_NAME_MAX_LENGTH = 120;
export const WATERMARK_MAX_LENGTH = 40;

const HEX = '#[0-9a-fA-F]{6}';
const colorValue = z.string().regex(new RegExp(`^${HEX}([0-9a-fA-F]{2})?$`), 'must be a color #rrggbb or #rrggbbaa');
const gradientValue = z.string().regex(new RegExp(`^${HEX},${HEX}$`), 'must be two colors #rrggbb,#rrggbb (top to bottom)');

const background = z.discriminatedUnion(
  'type',
  [
    z.strictObject({ type: z.literal('color'), value: colorValue }),
    z.strictObject({ type: z.literal('gradient'), value: gradientValue }),
    z.strictObject({ type: z.literal('transparent'), value: z.null({ error: 'must be null for a transparent background' }) }),
  ],
  { error: `type must be one of ${BACKGROUND_TYPES.join(', ')}` },
);

const camera = z.strictObject({
  preset: z.enum(CAMERA_PRESETS),
  fov: z
    .number()
    .min(CAMERA_FOV.min)
    .max(CAMERA_FOV.max)
    .default(CAMERA_FOV.default)
    .describe(`Vertical field of view in degrees, ${CAMERA_FOV.min} to ${CAMERA_FOV.max} (default ${CAMERA_FOV.default})`),
  autoRotate: z.boolean().default(false).describe('Turn the item slowly (default false)'),
});

export const scenePresentationSchema = z.strictObject({
  background,
  camera,
  quality: z.enum(SCENE_QUALITIES),
  lighting: z.enum(SCENE_LIGHTINGS).default('studio').describe('Lighting rig (default studio)'),
});

export const sceneChromeSchema = z.strictObject({
  showControls: z.boolean(),
  allowFullscreen: z.boolean(),
  watermark: text({ min: 1, max: WATERMARK_MAX_LENGTH }).nullable().describe(`null, or 1 to ${WATERMARK_MAX_LENGTH} characters drawn over the view`),
});

const sceneFields = {
  schema: z.literal(SCENE_SCHEMA_VERSION, { error: `must be ${SCENE_SCHEMA_VERSION}` }),
  kind: z.literal(SCENE_KIND, { error: `must be "${SCENE_KIND}"` }),
  name: text({ min: 1, max: SCENE_NAME_MAX_LENGTH }).describe(`Scene name, 1 to ${SCENE_NAME_MAX_LENGTH} characters`),
  presentation: scenePresentationSchema,
  chrome: sceneChromeSchema,
};

/** The body of POST /v2/scenes and PUT /v2/scenes/{scene_id}. */
export const sceneBodySchema = z.strictObject({
  ...sceneFields,
  // docs/design.md §10: optional and ignored; the server assigns 1, then n+1.
  revision: z.number().int().min(1).optional().describe('Ignored: the server assigns the revision'),
});
export type SceneBody = z.output<typeof sceneBodySchema>;

/** The scene document every scene endpoint answers with, defaults filled in (the viewer reads these). */
export const sceneDocumentSchema = z.strictObject({
  scene_id: z.uuid(),
  ...sceneFields,
  revision: z.number().int().min(1),
  created_at: z.string().describe('When this revision was made (RFC 3339)'),
});
export type SceneDocument = z.output<typeof sceneDocumentSchema>;
export type ScenePresentation = SceneDocument['presentation'];
export type SceneChrome = SceneDocument['chrome'];

export function sceneDocument(sceneId: string, revision: number, body: SceneBody, createdAt: Date): SceneDocument {
  return {
    scene_id: sceneId,
    schema: SCENE_SCHEMA_VERSION,
    kind: SCENE_KIND,
    name: body.name,
    revision,
    presentation: body.presentation,
    chrome: body.chrome,
    created_at: createdAt.toISOString(),
  };
}

/** docs/design.md §10: `"` + lowercase hex SHA-256 of the RFC 8785 canonical JSON of the exact body + `"`. */
export function etagOf(body: unknown): string {
  return `"${sha256Hex(jcsCanonicalize(body))}"`;
}

// Names of item identity and item state (the item selector of docs/design.md §10, inventory and catalog
// fields): a scene is reused across items, so these get a message saying why, not just "unknown".
const ITEM_FIELDS = new Set([
  'item',
  'items',
  'state',
  'family',
  'definition_index',
  'defindex',
  'paint_index',
  'paintindex',
  'paint_seed',
  'paintseed',
  'seed',
  'wear',
  'float',
  'paint_wear',
  'stattrak',
  'kill_count',
  'killeatervalue',
  'name_tag',
  'nametag',
  'custom_name',
  'stickers',
  'sticker',
  'charms',
  'charm',
  'keychains',
  'asset_id',
  'assetid',
  'item_id',
  'itemid',
  'catalog_id',
  'market_hash_name',
  'inspect_link',
  'certificate',
  'rarity',
  'quality',
  'origin',
  'phase',
  'exterior',
]);

function fieldOf(path: PropertyKey[]): string {
  return ['body', ...path.map(String)].join('.');
}

/** Zod issues of a scene body as `invalid_scene` details, one per field. */
export function sceneIssueDetails(issues: readonly z.core.$ZodIssue[]): ErrorDetail[] {
  const details: ErrorDetail[] = [];
  for (const issue of issues) {
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) {
        details.push({
          field: fieldOf([...issue.path, key]),
          message: ITEM_FIELDS.has(key.toLowerCase())
            ? 'item identity and item state do not belong in a scene (pass the item to viewer sessions or renders)'
            : 'unknown field',
        });
      }
    } else if (issue.code === 'invalid_union' && issue.path.length > 0 && issue.path[issue.path.length - 1] !== 'type') {
      // A discriminated union reports an unknown `type` at the union's own path.
      details.push({ field: fieldOf([...issue.path, 'type']), message: issue.message });
    } else {
      details.push({ field: fieldOf(issue.path), message: issue.message });
    }
  }
  return details;
}

export function invalidScene(details: ErrorDetail[]): ApiError {
  const fields = [...new Set(details.map((detail) => detail.field))];
  return new ApiError(400, 'invalid_scene', `The scene is invalid: ${fields.slice(0, 5).join(', ')}${fields.length > 5 ? ', …' : ''}.`, details);
}

/** Parses a create/update body, or throws 400 invalid_scene naming each offending field. */
export function parseSceneBody(body: unknown): SceneBody {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw invalidScene([{ field: 'body', message: 'must be a JSON object (the scene)' }]);
  }
  const parsed = sceneBodySchema.safeParse(body);
  if (!parsed.success) throw invalidScene(sceneIssueDetails(parsed.error.issues));
  return parsed.data;
}

/**
 * Whether a conditional header's list names `etag` (RFC 9110 13.1). If-Match compares strongly (a
 * weak `W/` tag never matches); If-None-Match weakly, and its `*` matches any current scene. `*` is
 * not accepted for If-Match: an update must name the revision it was made from (docs/design.md §10: 412 when
 * it is not the latest), or two writers could overwrite each other.
 */
export function conditionNames(header: string, etag: string, comparison: 'strong' | 'weak'): boolean {
  return header.split(',').some((raw) => {
    let tag = raw.trim();
    if (comparison === 'weak' && tag === '*') return true;
    if (tag.startsWith('W/')) {
      if (comparison === 'strong') return false;
      tag = tag.slice(2);
    }
    return tag === etag;
  });
}
