import { join } from 'node:path';
import { sha256Hex } from '../../util/crypto.ts';
import { itemFileFor } from '../item-files.ts';
import {
  type ItemCard,
  VIEWER_ASSETS_PATH,
  VIEWER_DATA_ELEMENT_ID,
  VIEWER_FILE_KINDS,
  VIEWER_FILES_PATH,
  type ViewerBackground,
  type ViewerFileKind,
  type ViewerFiles,
  type ViewerItem,
  type ViewerMode,
  type ViewerPageData,
  type ViewerRenderPoolData,
  type ViewerRenderRequest,
  type ViewerSceneSettings,
} from './contract.ts';

/**
 * The viewer page (docs/design.md §10) as plain functions with no HTTP framework, so the API (session URLs)
 * and the render worker (its own private Bun.serve) serve the very same page, script and item files.
 * Every URL the page uses is root-relative: whatever origin serves the page serves all it loads.
 */

const CLIENT_ENTRY = join(import.meta.dir, 'client.ts');
const SCRIPT_PATTERN = new RegExp(`^${VIEWER_ASSETS_PATH}/viewer\\.([0-9a-f]{16})\\.js$`);

type ViewerBundle = { path: string; code: string };
let bundle: Promise<ViewerBundle> | undefined;

/**
 * The client script with three, bundled once per process at first use (about a second) and kept in
 * memory (~700 KB). Its URL carries a hash of the code, so it can be cached for a year.
 */
export function viewerBundle(): Promise<ViewerBundle> {
  bundle ??= (async () => {
    const result = await Bun.build({ entrypoints: [CLIENT_ENTRY], target: 'browser', format: 'esm', minify: true });
    if (!result.success || !result.outputs[0]) {
      bundle = undefined; // let a later request try again rather than caching the failure
      throw new AggregateError(result.logs, 'the viewer script did not build');
    }
    const code = await result.outputs[0].text();
    return { path: `${VIEWER_ASSETS_PATH}/viewer.${sha256Hex(code).slice(0, 16)}.js`, code };
  })();
  return bundle;
}

/** The viewer script at `path` (`/viewer/assets/viewer.<hash>.js`), or 404 for any other path or an old hash. */
export async function viewerAssetResponse(path: string): Promise<Response> {
  const { path: current, code } = await viewerBundle();
  if (!SCRIPT_PATTERN.test(path) || path !== current)
    return new Response('Not found', { status: 404, headers: { 'content-type': 'text/plain; charset=utf-8' } });
  return new Response(code, {
    headers: { 'content-type': 'text/javascript; charset=utf-8', 'cache-control': 'public, max-age=31536000, immutable' },
  });
}

const CONTENT_TYPES: Record<ViewerFileKind, string> = {
  model: 'model/gltf-binary',
  paint: 'image/png',
  sticker: 'image/png',
  charm: 'model/gltf-binary',
};

const isFileKind = (kind: string): kind is ViewerFileKind => (VIEWER_FILE_KINDS as readonly string[]).includes(kind);

/**
 * One item file by kind and integer id (`/viewer/files/<kind>/<id>`), streamed from ITEM_FILES_DIR;
 * 404 for an unknown kind, a non-integer id (no path can be named) or a file that is not there.
 * Cached for an hour, not forever: real extracted files may replace the stand-ins.
 */
export function itemFileResponse(dir: string, kind: string, id: string): Response {
  const file = isFileKind(kind) ? itemFileFor(dir, kind, id) : null;
  if (!file) return new Response('Not found', { status: 404, headers: { 'content-type': 'text/plain; charset=utf-8' } });
  return new Response(Bun.file(file), { headers: { 'content-type': CONTENT_TYPES[kind as ViewerFileKind], 'cache-control': 'public, max-age=3600' } });
}

/** `itemFileResponse` for a request path under /viewer/files/, for servers that route by hand. */
export function itemFileResponseForPath(dir: string, path: string): Response | null {
  const match = new RegExp(`^${VIEWER_FILES_PATH}/([a-z]+)/([^/]+)$`).exec(path);
  return match ? itemFileResponse(dir, match[1]!, match[2]!) : null;
}

const fileUrl = (kind: ViewerFileKind, id: number) => `${VIEWER_FILES_PATH}/${kind}/${id}`;

/**
 * The item files a page will load, or null when the definition has no model (the API's 404
 * `renderer_item_not_found`; renders fail the same way). Missing stickers, charms or paints only
 * lose that detail: the page skips them instead of requesting a file that is not there.
 */
export function resolveViewerFiles(dir: string, item: ViewerItem): ViewerFiles | null {
  if (!itemFileFor(dir, 'model', item.item.definition_index)) return null;
  const has = (kind: ViewerFileKind, id: number) => (itemFileFor(dir, kind, id) ? fileUrl(kind, id) : null);
  const paintIndex = item.state.paint_index;
  // Paint index 0 is "no paint" in the game's data.
  const paint = paintIndex !== undefined && paintIndex > 0 ? has('paint', paintIndex) : null;
  return {
    model: fileUrl('model', item.item.definition_index),
    // The seed and wear are applied by the page (pattern placement, grime), not baked into the file.
    paint: paint ? { url: paint, seeded: false } : null,
    stickers: (item.state.stickers ?? []).map((sticker) => has('sticker', sticker.sticker_id)),
    charms: (item.state.charms ?? []).map((charm) => has('charm', charm.charm_id)),
  };
}

const escapeHtml = (text: string): string => text.replace(/[&<>"']/g, (char) => `&#${char.charCodeAt(0)};`);

/** JSON safe inside a <script> element: no `</script>`, `<!--` or line separators can end or bend it. */
export function scriptJson(value: unknown): string {
  return JSON.stringify(value)
    .replace(/</g, '\\u003c')
    .replace(/>/g, '\\u003e')
    .replace(/&/g, '\\u0026')
    .replace(/\u2028/g, '\\u2028')
    .replace(/\u2029/g, '\\u2029');
}

/**
 * Headers of every viewer page. The CSP keeps the page on its own origin (no CDN, no beacon can
 * load even if a file tried), and no-referrer keeps the session token out of any Referer.
 */
export const VIEWER_PAGE_HEADERS = {
  'content-type': 'text/html; charset=utf-8',
  'cache-control': 'no-store',
  'referrer-policy': 'no-referrer',
  'x-content-type-options': 'nosniff',
  // blob:/data: are the textures glTF embeds and the labels drawn on canvases.
  'content-security-policy':
    "default-src 'none'; script-src 'self'; connect-src 'self' blob: data:; img-src 'self' blob: data:; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors *",
} as const;

export type ViewerPageOptions = {
  item: ViewerItem;
  scene: ViewerSceneSettings;
  /** 3D: from resolveViewerFiles (a real model). Null when the page draws `card`. */
  files: ViewerFiles | null;
  /** docs/design.md §18: the item card drawn instead of a model (shared/media/item-card.ts); null or absent in 3D. */
  card?: ItemCard | null;
  mode: ViewerMode;
  /** Render mode: the canvas size in CSS pixels (the renders' output size). */
  width?: number;
  height?: number;
  /** Render mode: the output's background (`transparent` or `#rrggbb`) instead of the scene's. */
  background?: 'transparent' | string;
};

function pageBackground(options: Pick<ViewerPageOptions, 'scene' | 'background'>): ViewerBackground {
  if (options.background === undefined) return options.scene.presentation.background;
  return options.background === 'transparent' ? { type: 'transparent', value: null } : { type: 'color', value: options.background };
}

/**
 * What the render worker hands a pool page (`window.renderViewerItem`, see viewerRenderPoolHtml):
 * the same data a render-mode page carries, for one item at exactly width × height.
 */
export function viewerRenderRequest(options: Omit<ViewerPageOptions, 'mode'> & { width: number; height: number }): ViewerRenderRequest {
  if (!(Number.isInteger(options.width) && Number.isInteger(options.height))) throw new Error('render mode needs an integer width and height');
  return {
    width: options.width,
    height: options.height,
    background: pageBackground(options),
    // Only the fields the page draws: the scene's id, revision and dates stay on the server.
    item: { item: options.item.item, state: options.item.state },
    scene: { name: options.scene.name, presentation: options.scene.presentation, chrome: options.scene.chrome },
    files: options.card ? null : options.files,
    card: options.card ?? null,
  };
}

/** The page's HTML: one script from our origin, and the item, scene and files as escaped JSON. */
export async function viewerPageHtml(options: ViewerPageOptions): Promise<string> {
  const render = options.mode === 'render';
  if (render && !(Number.isInteger(options.width) && Number.isInteger(options.height))) throw new Error('render mode needs an integer width and height');
  const data: ViewerPageData = {
    mode: options.mode,
    width: render ? options.width! : null,
    height: render ? options.height! : null,
    background: pageBackground(options),
    // Only the fields the page draws: the scene's id, revision and dates stay on the server.
    item: { item: options.item.item, state: options.item.state },
    scene: { name: options.scene.name, presentation: options.scene.presentation, chrome: options.scene.chrome },
    files: options.card ? null : options.files,
    card: options.card ?? null,
  };
  if (!data.files && !data.card) throw new Error('a viewer page needs item files or an item card');
  const canvasSize = render ? `width:${options.width}px;height:${options.height}px` : 'width:100vw;height:100vh';
  return pageHtml(options.scene.name, canvasSize, data);
}

/**
 * The render worker's pool page: the viewer script in render mode with no item. Loaded once per
 * warm page; each render then calls `window.renderViewerItem(viewerRenderRequest(...))`, which sizes
 * the canvas and resolves after the item's first frame, so no render reloads the script, re-creates
 * the WebGL context or re-parses a model the page already has.
 */
export async function viewerRenderPoolHtml(): Promise<string> {
  const data: ViewerRenderPoolData = { mode: 'render-pool' };
  return pageHtml('Renders', 'width:0;height:0', data);
}

async function pageHtml(title: string, canvasSize: string, data: ViewerPageData | ViewerRenderPoolData): Promise<string> {
  const { path: scriptPath } = await viewerBundle();
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex">
<title>${escapeHtml(title)}</title>
<link rel="icon" href="data:,">
<style>
html,body{margin:0;padding:0;overflow:hidden;background:transparent}
#viewer-canvas{display:block;${canvasSize}}
#viewer-fullscreen{position:fixed;top:12px;right:12px;padding:6px 10px;font:14px sans-serif;border:0;border-radius:4px;background:rgba(0,0,0,.55);color:#fff;cursor:pointer}
#viewer-watermark{position:fixed;right:12px;bottom:10px;font:600 13px sans-serif;color:rgba(255,255,255,.75);text-shadow:0 1px 2px rgba(0,0,0,.6);pointer-events:none}
#viewer-error{position:fixed;inset:0;display:flex;align-items:center;justify-content:center;font:16px sans-serif;color:#888}
[hidden]{display:none!important}
</style>
</head>
<body>
<canvas id="viewer-canvas"></canvas>
<button id="viewer-fullscreen" type="button" hidden>Fullscreen</button>
<div id="viewer-watermark" hidden></div>
<div id="viewer-error" hidden></div>
<script type="application/json" id="${VIEWER_DATA_ELEMENT_ID}">${scriptJson(data)}</script>
<script type="module" src="${scriptPath}"></script>
</body>
</html>
`;
}

/** A plain page for a session that cannot be shown (404 unknown, 410 expired): no script, no item. */
export function viewerMessagePage(status: 404 | 410): Response {
  const [title, text] =
    status === 410
      ? ['Viewer session expired', 'This viewer session has expired. Ask for a new link.']
      : ['Viewer session not found', 'There is no viewer session at this address.'];
  const html = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="robots" content="noindex"><title>${title}</title><link rel="icon" href="data:,">
<style>body{font:16px/1.5 sans-serif;margin:0;display:flex;min-height:100vh;align-items:center;justify-content:center;color:#333}</style></head>
<body><main><h1>${title}</h1><p>${text}</p></main></body></html>
`;
  return new Response(html, { status, headers: VIEWER_PAGE_HEADERS });
}
