/**
 * The viewer page's browser script (docs/design.md §10), bundled with three by page.ts and served from our
 * own origin. It reads ViewerPageData from the page, loads the item files it names, draws the item
 * with the scene's settings and sets `window.viewerReady = true` once a frame with every file
 * applied has been drawn (the render worker and the tests wait on it).
 */
import * as THREE from 'three';
import { OrbitControls } from 'three/examples/jsm/controls/OrbitControls.js';
import { GLTFLoader } from 'three/examples/jsm/loaders/GLTFLoader.js';
import { mulberry32 } from '../../util/random.ts';
import { type Canvas2D, drawItemCard } from './card.ts';
import {
  type CameraPreset,
  VIEWER_DATA_ELEMENT_ID,
  type ViewerBackground,
  type ViewerPageData,
  type ViewerPixels,
  type ViewerQuality,
  type ViewerRenderPoolData,
  type ViewerRenderRequest,
} from './contract.ts';

// The few browser APIs this script uses, declared here: the project compiles for Bun (no DOM lib,
// whose globals clash with Bun's), and this file is the only browser code.
type Canvas = {
  width: number;
  height: number;
  style: { display: string; width: string; height: string };
  getContext(kind: '2d', options?: { willReadFrequently?: boolean; alpha?: boolean }): Canvas2D | null;
};
type PageElement = { textContent: string | null; hidden: boolean; addEventListener(type: 'click', listener: () => void): void };
declare const document: {
  getElementById(id: string): PageElement | null;
  createElement(tag: 'canvas'): Canvas;
  body: { appendChild<T>(node: T): T };
  fullscreenEnabled: boolean;
  fullscreenElement: unknown;
  exitFullscreen(): Promise<void>;
  documentElement: { requestFullscreen(): Promise<void> };
};
declare const window: {
  innerWidth: number;
  innerHeight: number;
  devicePixelRatio: number;
  addEventListener(type: 'resize', listener: () => void): void;
  viewerReady?: boolean;
  viewerError?: string;
  /** Render mode: draws another item on this page (the render worker's warm pages). */
  renderViewerItem?: (request: ViewerRenderRequest) => Promise<RenderOutcome>;
  /** Render mode: the last item's pixels (see readPixels). */
  readViewerPixels?: () => Promise<ViewerPixels | null>;
};
declare function requestAnimationFrame(callback: () => void): number;

/** What drawing one item answers: `code` names a failure the render reports as its own (docs/design.md §18 `item_image_unavailable`). */
type RenderOutcome = { error: string | null; code?: string };

const QUALITY: Record<ViewerQuality, { antialias: boolean; maxPixelRatio: number; shadowMapSize: number | null }> = {
  draft: { antialias: false, maxPixelRatio: 1, shadowMapSize: null },
  interactive: { antialias: true, maxPixelRatio: 1.5, shadowMapSize: 1024 },
  high: { antialias: true, maxPixelRatio: 2, shadowMapSize: 2048 },
};

// Directions the camera looks from, toward the item's centre. Models lie along +x with their
// right side facing +z and +y up (the glTF convention), so "front" is the side view a player inspects.
const CAMERA_DIRECTIONS: Record<CameraPreset, [number, number, number]> = {
  inspect: [0.35, 0.25, 1],
  front: [0, 0, 1],
  back: [0, 0, -1],
  left: [-1, 0, 0.001],
  right: [1, 0, 0.001],
  top: [0, 1, 0.001],
  closeup: [0.35, 0.2, 1],
};

/** '#rrggbb' or '#rrggbbaa' → colour and alpha. */
function parseColor(value: string): { color: THREE.Color; alpha: number } {
  const hex = value.slice(1);
  const color = new THREE.Color(`#${hex.slice(0, 6)}`);
  const alpha = hex.length === 8 ? parseInt(hex.slice(6, 8), 16) / 255 : 1;
  return { color, alpha };
}

function gradientTexture(top: string, bottom: string): THREE.CanvasTexture {
  const canvas = document.createElement('canvas');
  canvas.width = 2;
  canvas.height = 256;
  const context = canvas.getContext('2d')!;
  const gradient = context.createLinearGradient(0, 0, 0, canvas.height);
  gradient.addColorStop(0, top);
  gradient.addColorStop(1, bottom);
  context.fillStyle = gradient;
  context.fillRect(0, 0, canvas.width, canvas.height);
  const texture = new THREE.CanvasTexture(canvas);
  texture.colorSpace = THREE.SRGBColorSpace;
  return texture;
}

function applyBackground(renderer: THREE.WebGLRenderer, scene: THREE.Scene, background: ViewerBackground) {
  if (background.type === 'color') {
    const { color, alpha } = parseColor(background.value);
    renderer.setClearColor(color, alpha);
  } else if (background.type === 'gradient') {
    const [top, bottom] = background.value.split(',') as [string, string];
    scene.background = gradientTexture(top, bottom);
  } else {
    renderer.setClearColor(0x000000, 0);
  }
}

function addLights(scene: THREE.Scene, lighting: string, castShadows: boolean, radius: number) {
  const key = new THREE.DirectionalLight(0xffffff, 1);
  key.castShadow = castShadows;
  key.shadow.camera.left = key.shadow.camera.bottom = -radius * 2;
  key.shadow.camera.right = key.shadow.camera.top = radius * 2;
  key.shadow.camera.far = radius * 20;
  if (lighting === 'dramatic') {
    // One hard light from high on one side and a cool rim: deep shadows, strong contrast.
    key.intensity = 3.2;
    key.position.set(-radius * 4, radius * 5, radius * 2);
    const rim = new THREE.DirectionalLight(0x88aaff, 1.2);
    rim.position.set(radius * 4, radius, -radius * 4);
    scene.add(new THREE.AmbientLight(0xffffff, 0.12), key, rim);
  } else if (lighting === 'soft') {
    // Mostly sky light from every side, a weak key: flat, even, few shadows.
    key.intensity = 0.8;
    key.position.set(radius * 2, radius * 6, radius * 4);
    scene.add(new THREE.HemisphereLight(0xffffff, 0x8d8d8d, 2.4), key);
  } else {
    // studio: key, fill and rim, the usual three-point setup.
    key.intensity = 2.2;
    key.position.set(radius * 3, radius * 5, radius * 4);
    const fill = new THREE.DirectionalLight(0xffffff, 0.8);
    fill.position.set(-radius * 4, radius * 2, radius * 3);
    const rim = new THREE.DirectionalLight(0xffffff, 1);
    rim.position.set(0, radius * 3, -radius * 5);
    scene.add(new THREE.HemisphereLight(0xffffff, 0x444444, 0.9), key, fill, rim);
  }
}

/** A small text label on a transparent quad (StatTrak counter, name tag), `height` tall in model units. */
function textLabel(text: string, options: { color: string; background: string; font: string; height: number }): THREE.Mesh {
  const canvas = document.createElement('canvas');
  const context = canvas.getContext('2d')!;
  const fontSize = 48;
  context.font = `${fontSize}px ${options.font}`;
  const width = Math.ceil(context.measureText(text).width) + fontSize;
  canvas.width = Math.max(width, fontSize * 2);
  canvas.height = Math.round(fontSize * 1.5);
  context.fillStyle = options.background;
  context.fillRect(0, 0, canvas.width, canvas.height);
  context.font = `${fontSize}px ${options.font}`;
  context.fillStyle = options.color;
  context.textBaseline = 'middle';
  context.fillText(text, fontSize / 2, canvas.height / 2);
  const texture = new THREE.CanvasTexture(canvas);
  texture.colorSpace = THREE.SRGBColorSpace;
  const aspect = canvas.width / canvas.height;
  const material = new THREE.MeshBasicMaterial({ map: texture, transparent: true, depthWrite: false });
  return new THREE.Mesh(new THREE.PlaneGeometry(options.height * aspect, options.height), material);
}

/** Planar UVs from the x/y extent for geometry that has none, so a paint texture still shows. */
function ensureUvs(geometry: THREE.BufferGeometry) {
  if (geometry.getAttribute('uv')) return;
  geometry.computeBoundingBox();
  const box = geometry.boundingBox!;
  const size = box.getSize(new THREE.Vector3());
  const positions = geometry.getAttribute('position');
  const uvs = new Float32Array(positions.count * 2);
  for (let index = 0; index < positions.count; index += 1) {
    uvs[index * 2] = (positions.getX(index) - box.min.x) / (size.x || 1);
    uvs[index * 2 + 1] = (positions.getY(index) - box.min.y) / (size.y || 1);
  }
  geometry.setAttribute('uv', new THREE.BufferAttribute(uvs, 2));
}

const clamp = (value: number, min: number, max: number) => Math.min(max, Math.max(min, value));

/**
 * Item files parsed once per page and shared by every item drawn on it: a render page draws many
 * items, and fetching and parsing a model or decoding a texture again costs more than drawing it.
 * Models are handed out as clones (their geometry and materials shared, never mutated); textures as
 * they are (a paint texture is cloned by its user, which moves it per seed).
 */
const modelCache = new Map<string, Promise<THREE.Group>>();
const textureCache = new Map<string, Promise<THREE.Texture>>();
// Enough distinct files for a busy catalogue between clears, small next to a page's memory.
const FILE_CACHE_LIMIT = 96;
const textureLoader = new THREE.TextureLoader();
const gltfLoader = new GLTFLoader();

function cached<T>(cache: Map<string, Promise<T>>, url: string, load: () => Promise<T>): Promise<T> {
  let entry = cache.get(url);
  if (!entry) {
    entry = load();
    cache.set(url, entry);
    // A failed load is not remembered: the next item retries it.
    entry.catch(() => cache.delete(url));
  }
  return entry;
}

const loadModel = async (url: string): Promise<THREE.Group> =>
  (await cached(modelCache, url, () => gltfLoader.loadAsync(url).then((gltf) => gltf.scene))).clone(true);

const loadTexture = (url: string): Promise<THREE.Texture> =>
  cached(textureCache, url, async () => {
    const texture = await textureLoader.loadAsync(url);
    texture.colorSpace = THREE.SRGBColorSpace;
    return texture;
  });

/** Drops every cached file (the cache is full); called only between items, when none is in use. */
async function trimFileCache() {
  const models = [...modelCache.values()];
  const textures = [...textureCache.values()];
  modelCache.clear();
  textureCache.clear();
  for (const texture of await Promise.allSettled(textures)) if (texture.status === 'fulfilled') texture.value.dispose();
  for (const model of await Promise.allSettled(models)) {
    if (model.status !== 'fulfilled') continue;
    model.value.traverse((object) => {
      const mesh = object as THREE.Mesh;
      if (!mesh.isMesh) return;
      mesh.geometry.dispose();
      for (const material of Array.isArray(mesh.material) ? mesh.material : [mesh.material]) material.dispose();
    });
  }
}

/** What drawing one item needs: the page data without the page's mode (a render page draws many). */
type ItemDrawing = Pick<ViewerPageData, 'item' | 'scene' | 'files' | 'background'>;

type BuiltItem = { scene: THREE.Scene; camera: THREE.PerspectiveCamera; item: THREE.Group; centre: THREE.Vector3; dispose(): void };

/**
 * The item's scene, lit and framed for a canvas of `size`: models and textures from the page's file
 * cache, everything else (materials, labels, lights, the shadow floor) owned by this scene and freed
 * by `dispose`, so a render page can draw item after item on one renderer.
 */
async function buildItemScene(
  data: ItemDrawing,
  renderer: THREE.WebGLRenderer,
  size: { width: number; height: number },
  quality: (typeof QUALITY)[ViewerQuality],
): Promise<BuiltItem> {
  const { presentation } = data.scene;
  const state = data.item.state;
  const files = data.files;
  if (!files) throw new Error('a 3D item needs its item files');
  const castShadows = quality.shadowMapSize !== null;
  const owned: { dispose(): void }[] = [];
  const own = <T extends { dispose(): void }>(resource: T): T => {
    owned.push(resource);
    return resource;
  };
  const ownLabel = (label: THREE.Mesh) => {
    const material = label.material as THREE.MeshBasicMaterial;
    own(label.geometry);
    own(material);
    if (material.map) own(material.map);
  };

  const scene = new THREE.Scene();
  // A reused renderer keeps the last item's clear colour: start from three's default (transparent black).
  renderer.setClearColor(0x000000, 0);
  applyBackground(renderer, scene, data.background);
  if (scene.background instanceof THREE.Texture) own(scene.background);

  const [model, sharedPaint, stickerTextures, charmModels] = await Promise.all([
    loadModel(files.model),
    files.paint ? loadTexture(files.paint.url) : Promise.resolve(null),
    Promise.all(files.stickers.map((url) => (url ? loadTexture(url) : Promise.resolve(null)))),
    Promise.all(files.charms.map((url) => (url ? loadModel(url) : Promise.resolve(null)))),
  ]);
  // This item moves its paint by seed: a clone of the cached texture (same image, uploaded once).
  const paint = sharedPaint ? own(sharedPaint.clone()) : null;

  const item = new THREE.Group();
  item.add(model);
  const bounds = new THREE.Box3().setFromObject(model);
  const extent = bounds.getSize(new THREE.Vector3());
  const length = Math.max(extent.x, extent.y, extent.z) || 1;

  // Paint: the pattern's placement follows the seed (as the game offsets and rotates the pattern
  // per seed), and wear dulls and darkens it, unless the server already baked both in.
  const wear = state.wear ?? 0;
  if (paint) {
    paint.wrapS = paint.wrapT = THREE.RepeatWrapping;
    if (!files.paint!.seeded) {
      const random = mulberry32(state.paint_seed ?? 0);
      paint.offset.set(random(), random());
      paint.center.set(0.5, 0.5);
      paint.rotation = random() * Math.PI * 2;
    }
  }
  model.traverse((object) => {
    const mesh = object as THREE.Mesh;
    if (!mesh.isMesh) return;
    mesh.castShadow = castShadows;
    mesh.receiveShadow = castShadows;
    if (!paint) return;
    ensureUvs(mesh.geometry);
    const grime = new THREE.Color(1, 1, 1).lerp(new THREE.Color(0.55, 0.5, 0.44), files.paint!.seeded ? 0 : wear * 0.7);
    mesh.material = own(new THREE.MeshStandardMaterial({ map: paint, color: grime, roughness: 0.35 + wear * 0.55, metalness: 0.15 }));
  });

  // Stickers: textured quads on the item's +z side, slots spaced along its front three quarters
  // (the StatTrak counter and name tag sit on the last quarter), then the
  // selector's offsets (fractions of the item's size), scale and rotation (degrees).
  const face = bounds.max.z + length * 0.002;
  (state.stickers ?? []).forEach((sticker, index) => {
    const texture = stickerTextures[index] ?? null;
    const side = length * 0.14 * clamp(sticker.scale ?? 1, 0.1, 4);
    const material = own(
      new THREE.MeshBasicMaterial({
        map: texture,
        color: texture ? 0xffffff : 0xbbbbbb,
        transparent: true,
        opacity: 1 - clamp(sticker.wear ?? 0, 0, 1) * 0.8,
        depthWrite: false,
        polygonOffset: true,
        polygonOffsetFactor: -4,
      }),
    );
    const quad = new THREE.Mesh(own(new THREE.PlaneGeometry(side, side)), material);
    // Stand-in models (and real ones that name them) carry `sticker_slot_<n>` nodes: use them when present.
    const slotNode = model.getObjectByName(`sticker_slot_${sticker.slot}`);
    const anchor = slotNode
      ? slotNode.getWorldPosition(new THREE.Vector3())
      : new THREE.Vector3(bounds.min.x + extent.x * (0.15 + sticker.slot * 0.075), bounds.min.y + extent.y * 0.55, face);
    quad.position.set(anchor.x + clamp(sticker.offset_x ?? 0, -1, 1) * extent.x * 0.5, anchor.y + clamp(sticker.offset_y ?? 0, -1, 1) * extent.y * 0.5, face);
    quad.rotation.z = THREE.MathUtils.degToRad(sticker.rotation ?? 0);
    quad.renderOrder = 1;
    item.add(quad);
  });

  // Charms hang below the rear of the item, each scaled to a fixed share of its length.
  (state.charms ?? []).forEach((charm, index) => {
    const charmModel = charmModels[index];
    if (!charmModel) return;
    const charmBounds = new THREE.Box3().setFromObject(charmModel);
    const charmSize = charmBounds.getSize(new THREE.Vector3());
    const scale = (length * 0.16) / (Math.max(charmSize.x, charmSize.y, charmSize.z) || 1);
    charmModel.scale.setScalar(scale);
    const charmCentre = charmBounds.getCenter(new THREE.Vector3()).multiplyScalar(scale);
    // Hung from the model's `charm_attachment` node when it has one, else below its rear quarter.
    const attachment = model.getObjectByName('charm_attachment')?.getWorldPosition(new THREE.Vector3());
    const hook = attachment ?? new THREE.Vector3(bounds.min.x + extent.x * 0.25, bounds.min.y, bounds.max.z);
    charmModel.position.set(
      hook.x + index * length * 0.12 - charmCentre.x + (charm.offset_x ?? 0) * length * 0.05,
      hook.y - length * 0.08 - charmCentre.y + (charm.offset_y ?? 0) * length * 0.05,
      hook.z - charmCentre.z + (charm.offset_z ?? 0) * length * 0.05,
    );
    charmModel.traverse((object) => {
      if ((object as THREE.Mesh).isMesh) object.castShadow = castShadows;
    });
    item.add(charmModel);
  });

  if (state.stattrak) {
    const counter = textLabel(`StatTrak™ ${String(state.stattrak.value).padStart(6, '0')}`, {
      color: '#ff8a1f',
      background: 'rgba(20,20,20,0.85)',
      font: 'monospace',
      height: length * 0.045,
    });
    ownLabel(counter);
    counter.position.set(bounds.min.x + extent.x * 0.82, bounds.max.y - extent.y * 0.2, face);
    item.add(counter);
  }
  if (state.name_tag) {
    const tag = textLabel(`“${state.name_tag}”`, { color: '#f2f2f2', background: 'rgba(40,40,40,0.85)', font: 'sans-serif', height: length * 0.05 });
    ownLabel(tag);
    tag.position.set(bounds.min.x + extent.x * 0.82, bounds.min.y + extent.y * 0.2, face);
    item.add(tag);
  }
  scene.add(item);

  // Camera: framed on the whole item (labels and charms included) from the preset's direction.
  const frame = new THREE.Box3().setFromObject(item);
  const centre = frame.getCenter(new THREE.Vector3());
  const radius = frame.getBoundingSphere(new THREE.Sphere()).radius || 1;
  const { width, height } = size;
  const camera = new THREE.PerspectiveCamera(presentation.camera.fov ?? 45, width / height, radius / 100, radius * 100);
  const verticalHalf = THREE.MathUtils.degToRad(camera.fov / 2);
  const horizontalHalf = Math.atan(Math.tan(verticalHalf) * camera.aspect);
  const fitDistance = (radius / Math.sin(Math.min(verticalHalf, horizontalHalf))) * (presentation.camera.preset === 'closeup' ? 0.55 : 1.02);
  const direction = new THREE.Vector3(...CAMERA_DIRECTIONS[presentation.camera.preset]).normalize();
  camera.position.copy(centre).addScaledVector(direction, fitDistance);
  camera.lookAt(centre);

  addLights(scene, presentation.lighting ?? 'studio', castShadows, radius);
  if (castShadows) {
    // An invisible floor that only shows the item's shadow, so every background keeps its colour.
    const floor = new THREE.Mesh(own(new THREE.PlaneGeometry(radius * 8, radius * 8)), own(new THREE.ShadowMaterial({ opacity: 0.25 })));
    floor.rotation.x = -Math.PI / 2;
    floor.position.y = frame.min.y - radius * 0.05;
    floor.receiveShadow = true;
    scene.add(floor);
    scene.traverse((object) => {
      const light = object as THREE.DirectionalLight;
      if (light.isDirectionalLight && light.castShadow) light.shadow.mapSize.set(quality.shadowMapSize!, quality.shadowMapSize!);
    });
  }

  return {
    scene,
    camera,
    item,
    centre,
    dispose() {
      for (const resource of owned) resource.dispose();
      // Lights own their shadow maps (render targets of the shadow map's size).
      scene.traverse((object) => {
        if ((object as THREE.Light).isLight) (object as THREE.Light).dispose();
      });
    },
  };
}

/** Resolves once the frame drawn so far has been presented (the next animation frame has started). */
const nextFrame = () => new Promise<void>((resolve) => requestAnimationFrame(() => resolve()));

/**
 * Render mode: one WebGL renderer per antialias setting (fixed when a context is created), each on a
 * canvas of its own, reused for every item the page draws, so shaders compile once per page and the
 * context is never re-created. Only the canvas of the current item is shown.
 */
const renderers = new Map<boolean, { renderer: THREE.WebGLRenderer; canvas: Canvas }>();

function renderModeRenderer(antialias: boolean): THREE.WebGLRenderer {
  let entry = renderers.get(antialias);
  if (!entry) {
    const pageCanvas = document.getElementById('viewer-canvas') as unknown as Canvas;
    const taken = [...renderers.values()].some((other) => other.canvas === pageCanvas);
    const canvas = taken ? document.body.appendChild(document.createElement('canvas')) : pageCanvas;
    const renderer = new THREE.WebGLRenderer({
      canvas,
      antialias,
      alpha: true,
      // The worker reads the drawn pixels after the frame, and a transparent background must reach
      // the screenshot as alpha.
      preserveDrawingBuffer: true,
      premultipliedAlpha: false,
    });
    renderer.outputColorSpace = THREE.SRGBColorSpace;
    renderer.setPixelRatio(1);
    // three 0.187 dropped PCFSoftShadowMap; 'high' softens through its larger shadow map instead.
    renderer.shadowMap.type = THREE.PCFShadowMap;
    entry = { renderer, canvas };
    renderers.set(antialias, entry);
  }
  for (const other of renderers.values()) other.canvas.style.display = other === entry ? 'block' : 'none';
  if (cardSurface) cardSurface.canvas.style.display = 'none';
  activeRenderer = entry.renderer;
  activeCard = null;
  return entry.renderer;
}

let activeRenderer: THREE.WebGLRenderer | null = null;

/**
 * Render mode, docs/design.md §18: item cards are drawn on one 2D canvas of their own, reused for every card
 * (its pixels read back each render, so the context is kept on the CPU: willReadFrequently).
 */
let cardSurface: { canvas: Canvas; context: Canvas2D } | null = null;
let activeCard: { canvas: Canvas; context: Canvas2D } | null = null;

function renderModeCardSurface(width: number, height: number): { canvas: Canvas; context: Canvas2D } {
  if (!cardSurface) {
    const pageCanvas = document.getElementById('viewer-canvas') as unknown as Canvas;
    // The page's own canvas is free unless a WebGL renderer took it.
    const canvas = renderers.size === 0 ? pageCanvas : document.body.appendChild(document.createElement('canvas'));
    const context = canvas.getContext('2d', { willReadFrequently: true });
    if (!context) throw new Error('no 2D canvas context');
    cardSurface = { canvas, context };
  }
  for (const other of renderers.values()) other.canvas.style.display = 'none';
  const { canvas } = cardSurface;
  canvas.style.display = 'block';
  // Resizing clears and reallocates the canvas: only when the size changes (drawing repaints it all).
  if (canvas.width !== width || canvas.height !== height) {
    canvas.width = width;
    canvas.height = height;
    canvas.style.width = `${width}px`;
    canvas.style.height = `${height}px`;
  }
  activeCard = cardSurface;
  activeRenderer = null;
  return cardSurface;
}

/** A byte array as base64: the native encoder where the browser has one. */
function toBase64(bytes: Uint8Array): string {
  const native = (bytes as Uint8Array & { toBase64?: () => string }).toBase64;
  if (native) return native.call(bytes);
  let binary = '';
  for (let offset = 0; offset < bytes.length; offset += 0x8000) binary += String.fromCharCode(...bytes.subarray(offset, offset + 0x8000));
  return btoa(binary);
}

type Blob = { arrayBuffer(): Promise<ArrayBuffer> };

/**
 * Render mode: the pixels of the item last drawn, read straight from its canvas rather than from a
 * page screenshot (which would composite and PNG-encode the whole page, ~100 ms a render under
 * SwiftShader). 3D: RGBA rows bottom to top (WebGL's order), straight alpha (the context is not
 * premultiplied), sRGB, base64. A card: the 2D canvas as a PNG (lossless, straight alpha), base64:
 * a card is mostly flat colour, so its PNG is a tenth of the raw 786 KB of a 512×384 canvas, and
 * carrying those through DevTools as base64 cost more than drawing the card.
 */
async function readPixels(): Promise<ViewerPixels | null> {
  if (activeCard) {
    const { canvas } = activeCard;
    const png = await new Promise<Blob | null>((resolve) =>
      (canvas as unknown as { toBlob(done: (blob: Blob | null) => void, type: string): void }).toBlob(resolve, 'image/png'),
    );
    if (!png) return null;
    return { width: canvas.width, height: canvas.height, base64: toBase64(new Uint8Array(await png.arrayBuffer())), encoding: 'png' };
  }
  if (!activeRenderer) return null;
  const gl = activeRenderer.getContext();
  const width = gl.drawingBufferWidth;
  const height = gl.drawingBufferHeight;
  const bytes = new Uint8Array(width * height * 4);
  gl.readPixels(0, 0, width, height, gl.RGBA, gl.UNSIGNED_BYTE, bytes);
  return { width, height, base64: toBase64(bytes), encoding: 'rgba-bottom-up' };
}

let drawn: BuiltItem | null = null;
let drawing: Promise<unknown> = Promise.resolve();

/**
 * Draws one item at exactly width × height CSS pixels (device pixel ratio 1) on this page's reused
 * renderer, and resolves after the frame with every file applied has been presented: the render
 * worker screenshots then. Never rejects: a failure is `{error}` and the page stays usable. Calls
 * are drawn one after another (a page shows one item).
 */
function renderItem(request: ViewerRenderRequest): Promise<RenderOutcome> {
  const result = drawing.then(async (): Promise<RenderOutcome> => {
    try {
      if (request.card) {
        // docs/design.md §18: no real model, an item card. The last 3D item's resources stay until the next 3D item.
        const surface = renderModeCardSurface(request.width, request.height);
        const { itemImageMissing } = await drawItemCard(
          surface.context,
          { card: request.card, background: request.background, watermark: request.scene.chrome.watermark },
          { margin: 0 },
        );
        if (itemImageMissing) return { error: 'the item image could not be loaded', code: 'item_image_unavailable' };
        return { error: null };
      }
      // The previous item's resources go only after this item is drawn: its paint texture's upload
      // (shared by every clone of the cached image) would otherwise be freed and made again.
      let previous = drawn;
      drawn = null;
      if (modelCache.size + textureCache.size > FILE_CACHE_LIMIT) {
        // The cache is cleared (uploads and all): nothing of the previous item is worth keeping.
        previous?.dispose();
        previous = null;
        await trimFileCache();
      }
      const quality = QUALITY[request.scene.presentation.quality];
      const renderer = renderModeRenderer(quality.antialias);
      // Resizing reallocates the drawing buffer (even to the same size): only when the size changes.
      const current = renderer.getSize(new THREE.Vector2());
      if (current.x !== request.width || current.y !== request.height) renderer.setSize(request.width, request.height);
      renderer.shadowMap.enabled = quality.shadowMapSize !== null;
      try {
        drawn = await buildItemScene(request, renderer, { width: request.width, height: request.height }, quality);
        // Deterministic: a fixed camera, one frame, no animation loop.
        renderer.render(drawn.scene, drawn.camera);
      } finally {
        previous?.dispose();
      }
      await nextFrame();
      return { error: null };
    } catch (error) {
      return { error: error instanceof Error ? error.message : String(error) };
    }
  });
  drawing = result;
  return result;
}

async function main() {
  const data = JSON.parse(document.getElementById(VIEWER_DATA_ELEMENT_ID)!.textContent!) as ViewerPageData | ViewerRenderPoolData;
  if (data.mode === 'render-pool') {
    // The render worker's page: loaded once, then told what to draw, item after item.
    window.renderViewerItem = renderItem;
    window.readViewerPixels = readPixels;
    return;
  }
  if (data.mode === 'render') {
    window.renderViewerItem = renderItem;
    window.readViewerPixels = readPixels;
    const { error } = await renderItem({ ...data, width: data.width!, height: data.height! });
    if (error) throw new Error(error);
    window.viewerReady = true;
    return;
  }
  if (data.card) return showCard(data, data.card);

  const { presentation, chrome } = data.scene;
  const quality = QUALITY[presentation.quality];
  const canvas = document.getElementById('viewer-canvas') as unknown as Canvas;
  const renderer = new THREE.WebGLRenderer({ canvas, antialias: quality.antialias, alpha: true });
  renderer.outputColorSpace = THREE.SRGBColorSpace;
  renderer.setPixelRatio(Math.min(window.devicePixelRatio || 1, quality.maxPixelRatio));
  const size = () => ({ width: window.innerWidth, height: window.innerHeight });
  renderer.setSize(size().width, size().height);
  renderer.shadowMap.enabled = quality.shadowMapSize !== null;
  // three 0.187 dropped PCFSoftShadowMap; 'high' softens through its larger shadow map instead.
  renderer.shadowMap.type = THREE.PCFShadowMap;
  const { scene, camera, item, centre } = await buildItemScene(data, renderer, size(), quality);

  const markReady = () =>
    // The frame is drawn by the time the next animation frame starts.
    requestAnimationFrame(() => {
      window.viewerReady = true;
    });

  setupChrome(chrome);
  const controls = chrome.showControls ? new OrbitControls(camera, canvas) : null;
  if (controls) {
    controls.target.copy(centre);
    controls.enableDamping = true;
    controls.autoRotate = presentation.camera.autoRotate === true;
    controls.update();
  } else if (presentation.camera.autoRotate) {
    // autoRotate without controls still turns the item.
    item.userData.spin = true;
  }
  window.addEventListener('resize', () => {
    const next = size();
    camera.aspect = next.width / next.height;
    camera.updateProjectionMatrix();
    renderer.setSize(next.width, next.height);
  });
  let first = true;
  let previous: number | null = null;
  renderer.setAnimationLoop((time: number) => {
    // Seconds since the last frame, from the loop's own timestamp (THREE.Clock is deprecated).
    const delta = previous === null ? 0 : (time - previous) / 1000;
    previous = time;
    if (controls) controls.update(delta);
    if (item.userData.spin) item.rotation.y += delta * 0.5;
    renderer.render(scene, camera);
    if (first) {
      first = false;
      markReady();
    }
  });
}

/**
 * docs/design.md §18, interactive: the item card fills the window (redrawn at its size and pixel ratio on
 * resize) and `viewerReady` is set once it is drawn with every image loaded or given up. An item
 * image that cannot be loaded leaves a frame saying so; the rest of the card is still shown.
 */
async function showCard(data: ViewerPageData, card: NonNullable<ViewerPageData['card']>) {
  const canvas = document.getElementById('viewer-canvas') as unknown as Canvas;
  const context = canvas.getContext('2d');
  if (!context) throw new Error('no 2D canvas context');
  const draw = async () => {
    const ratio = Math.min(window.devicePixelRatio || 1, 2);
    canvas.width = Math.max(1, Math.round(window.innerWidth * ratio));
    canvas.height = Math.max(1, Math.round(window.innerHeight * ratio));
    await drawItemCard(context, { card, background: data.background, watermark: data.scene.chrome.watermark }, { margin: 0.04 });
  };
  await draw();
  // The card draws the watermark itself; only the fullscreen button of the chrome applies.
  setupChrome({ ...data.scene.chrome, watermark: null });
  let pending: Promise<void> = Promise.resolve();
  window.addEventListener('resize', () => {
    pending = pending.then(draw);
  });
  requestAnimationFrame(() => {
    window.viewerReady = true;
  });
}

function setupChrome(chrome: ViewerPageData['scene']['chrome']) {
  const fullscreen = document.getElementById('viewer-fullscreen');
  if (fullscreen && chrome.allowFullscreen && document.fullscreenEnabled) {
    fullscreen.hidden = false;
    fullscreen.addEventListener('click', () => {
      if (document.fullscreenElement) void document.exitFullscreen();
      else void document.documentElement.requestFullscreen();
    });
  }
  const watermark = document.getElementById('viewer-watermark');
  if (watermark && chrome.watermark) {
    watermark.textContent = chrome.watermark;
    watermark.hidden = false;
  }
}

main().catch((error: unknown) => {
  const message = error instanceof Error ? error.message : String(error);
  window.viewerError = message;
  const notice = document.getElementById('viewer-error');
  if (notice) {
    notice.textContent = 'This item could not be drawn.';
    notice.hidden = false;
  }
  // Reported through window.viewerError (renders and tests read it) and the notice, not the console.
});
