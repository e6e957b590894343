/**
 * What the viewer page's server side hands its browser script (docs/design.md §10 "Viewer sessions"): the
 * item selector, the scene settings the page draws with, and the URLs of the item files that exist.
 * Imported by both shared/media/viewer/page.ts (Bun) and client.ts (browser), so it holds types and
 * constants only: no Node, Bun or DOM code.
 */

export type ViewerMode = 'interactive' | 'render';

/** The item files a page can fetch, by kind, under VIEWER_FILES_PATH/<kind>/<integer id>. */
export const VIEWER_FILE_KINDS = ['model', 'paint', 'sticker', 'charm'] as const;
export type ViewerFileKind = (typeof VIEWER_FILE_KINDS)[number];

export const VIEWER_ASSETS_PATH = '/viewer/assets';
export const VIEWER_FILES_PATH = '/viewer/files';
/** Card images (docs/design.md §18): `/viewer/images/<item|sticker|charm>/<id>?size=…`, served from our own origin. */
export const VIEWER_IMAGES_PATH = '/viewer/images';
export const VIEWER_IMAGE_KINDS = ['item', 'sticker', 'charm'] as const;
export type ViewerImageKind = (typeof VIEWER_IMAGE_KINDS)[number];

export type ViewerBackground =
  | { type: 'color'; value: string } // #rrggbb or #rrggbbaa
  | { type: 'gradient'; value: string } // #rrggbb,#rrggbb, top to bottom
  | { type: 'transparent'; value: null };

export type CameraPreset = 'inspect' | 'front' | 'back' | 'left' | 'right' | 'top' | 'closeup';
export type ViewerQuality = 'draft' | 'interactive' | 'high';
export type ViewerLighting = 'studio' | 'soft' | 'dramatic';

/** The part of a scene document (docs/design.md §10) the page reads; the scene's other fields are ignored. */
export type ViewerSceneSettings = {
  name: string;
  presentation: {
    background: ViewerBackground;
    camera: { preset: CameraPreset; fov?: number; autoRotate?: boolean };
    quality: ViewerQuality;
    lighting?: ViewerLighting;
  };
  chrome: { showControls: boolean; allowFullscreen: boolean; watermark: string | null };
};

/** The item selector's fields the page draws (docs/design.md §10: `item.item` and `item.state`). */
export type ViewerItem = {
  item: { family: string; definition_index: number };
  state: {
    paint_index?: number;
    paint_seed?: number;
    wear?: number;
    stattrak?: { value: number };
    name_tag?: string;
    stickers?: Array<{ slot: number; sticker_id: number; wear?: number; scale?: number; rotation?: number; offset_x?: number; offset_y?: number }>;
    charms?: Array<{ slot: number; charm_id: number; pattern?: number; offset_x?: number; offset_y?: number; offset_z?: number }>;
  };
};

/**
 * Item files resolved on the server: a URL for each file that exists, null for a missing sticker or
 * charm file (drawn as a plain placeholder rather than a request that 404s and logs a console error).
 */
export type ViewerFiles = {
  model: string;
  /** `seeded`: the server already baked seed and wear into the texture, so the page must not move it again. */
  paint: { url: string; seeded: boolean } | null;
  stickers: Array<string | null>; // parallel to item.state.stickers
  charms: Array<string | null>; // parallel to item.state.charms
};

/**
 * docs/design.md §18: what an item card shows when the definition has no real 3D model. Built on the server
 * (shared/media/item-card.ts) from the catalog and cs2-lib; every image is a root-relative URL under
 * VIEWER_IMAGES_PATH (null: the item has no image), so the page loads nothing from another origin.
 */
export type ItemCard = {
  /** "AK-47 | Redline", without the exterior. */
  name: string;
  /** The catalog's rarity and its colour in the game (`#rrggbb`); null when the catalog has none. */
  rarity: { name: string; colour: string } | null;
  /** "Field-Tested", from the wear; null for items without wear. */
  exterior: string | null;
  /** The float and the skin's wear range, for the wear bar; null without a wear. */
  wear: { value: number; min: number; max: number } | null;
  stattrak: number | null;
  name_tag: string | null;
  image: string | null;
  stickers: Array<{ slot: number; image: string | null; wear: number; scale: number; rotation: number; offset_x: number; offset_y: number }>;
  charms: Array<{ slot: number; image: string | null; offset_x: number; offset_y: number }>;
};

export type ViewerPageData = {
  mode: ViewerMode;
  /** Render mode: the canvas is exactly width × height CSS pixels at device pixel ratio 1. */
  width: number | null;
  height: number | null;
  /** The background actually drawn: the scene's, or a render's output override. */
  background: ViewerBackground;
  item: ViewerItem;
  scene: ViewerSceneSettings;
  /** 3D: the item files (a real model). Exactly one of `files` and `card` is set. */
  files: ViewerFiles | null;
  /** docs/design.md §18: no real model, so the page draws this item card instead. */
  card: ItemCard | null;
};

/**
 * What the render worker asks a render-mode page to draw (`window.renderViewerItem(request)`):
 * the page data of one item, its canvas exactly width × height CSS pixels.
 */
export type ViewerRenderRequest = Pick<ViewerPageData, 'background' | 'item' | 'scene' | 'files' | 'card'> & { width: number; height: number };

/**
 * A render-mode page's pixels (`window.readViewerPixels()`), base64: `rgba-bottom-up` from WebGL (3D:
 * raw RGBA, rows bottom to top, straight alpha, sRGB), `png` from the item card's 2D canvas.
 */
export type ViewerPixels = { width: number; height: number; base64: string; encoding: 'rgba-bottom-up' | 'png' };

/**
 * The render worker's pool page: no item, only the script, which exposes `window.renderViewerItem`
 * so one loaded page draws item after item without navigating (no script, context or model reload).
 */
export type ViewerRenderPoolData = { mode: 'render-pool' };

/** The id of the `<script type="application/json">` element that carries ViewerPageData. */
export const VIEWER_DATA_ELEMENT_ID = 'viewer-data';
