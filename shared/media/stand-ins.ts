import { mulberry32 } from '../util/random.ts';
import type { Box, Marker, StandInModel } from './glb.ts';

/**
 * docs/design.md §10 stand-ins: a distinct low-poly shape per item family, procedural paint textures and
 * sticker images. Everything here is pure and deterministic (the same ids give the same bytes), so
 * generated files and textures served at request time agree.
 */

export const MODEL_FAMILIES = [
  'rifle',
  'sniper',
  'pistol',
  'smg',
  'shotgun',
  'machinegun',
  'knife',
  'gloves',
  'agent',
  'case',
  'sticker',
  'patch',
  'charm',
  'other',
] as const;
export type ModelFamily = (typeof MODEL_FAMILIES)[number];

const SNIPERS = new Set(['awp', 'ssg08', 'scar20', 'g3sg1']);
const MACHINE_GUNS = new Set(['negev', 'm249']);

/** The family of a cs2-lib item (its `type`, `category` and `model` fields). */
export function modelFamilyOf(item: { type: string; category?: string | undefined; model?: string | undefined }): ModelFamily {
  switch (item.type) {
    case 'weapon':
      switch (item.category) {
        case 'rifle':
          return SNIPERS.has(item.model ?? '') ? 'sniper' : 'rifle';
        case 'heavy':
          return MACHINE_GUNS.has(item.model ?? '') ? 'machinegun' : 'shotgun';
        case 'smg':
          return 'smg';
        case 'secondary':
        case 'equipment': // the Zeus is held like a pistol
          return 'pistol';
        default:
          return 'other'; // C4
      }
    case 'melee':
      return 'knife';
    case 'glove':
      return 'gloves';
    case 'agent':
      return 'agent';
    case 'case':
      return 'case';
    case 'sticker':
      return 'sticker';
    case 'patch':
      return 'patch';
    case 'keychain':
      return 'charm';
    default:
      return 'other';
  }
}

const stickerSlots = (xs: number[], y: number, z: number): Marker[] => xs.map((x, i) => ({ name: `sticker_slot_${i}`, translation: [x, y, z] }));
const charmAt = (x: number, y: number): Marker => ({ name: 'charm_attachment', translation: [x, y, -0.03] });

// Sizes in metres, roughly the real item's proportions; each family differs in parts and outline.
const SHAPES: Record<ModelFamily, { boxes: Box[]; markers?: Marker[] }> = {
  rifle: {
    boxes: [
      [0, 0, 0, 0.4, 0.08, 0.05], // receiver
      [0.36, 0.02, 0, 0.32, 0.025, 0.025], // barrel
      [0.27, -0.005, 0, 0.16, 0.045, 0.045], // handguard
      [-0.3, -0.01, 0, 0.22, 0.09, 0.04], // stock
      [0.07, -0.1, 0, 0.05, 0.14, 0.03], // curved magazine, stepped
      [0.1, -0.19, 0, 0.05, 0.06, 0.03],
      [-0.1, -0.08, 0, 0.04, 0.1, 0.035], // grip
      [0, 0.055, 0, 0.2, 0.03, 0.02], // top rail
    ],
    markers: [...stickerSlots([-0.15, -0.05, 0.05, 0.15], 0, 0.026), charmAt(-0.18, -0.03)],
  },
  sniper: {
    boxes: [
      [0, 0, 0, 0.42, 0.08, 0.05],
      [0.5, 0.015, 0, 0.6, 0.03, 0.03], // long barrel
      [-0.34, -0.02, 0, 0.28, 0.11, 0.045], // thumbhole stock
      [0.02, 0.085, 0, 0.34, 0.055, 0.055], // scope
      [0.2, 0.085, 0, 0.05, 0.075, 0.075], // scope bell
      [-0.12, -0.085, 0, 0.04, 0.1, 0.035],
      [0.05, -0.07, 0, 0.06, 0.07, 0.03], // short box magazine
    ],
    markers: [...stickerSlots([-0.15, -0.05, 0.05, 0.15], 0, 0.026), charmAt(-0.2, -0.04)],
  },
  pistol: {
    boxes: [
      [0.02, 0.03, 0, 0.2, 0.04, 0.03], // slide
      [0.02, 0, 0, 0.16, 0.025, 0.028], // frame
      [-0.06, -0.06, 0, 0.045, 0.11, 0.03], // grip
      [0.0, -0.03, 0, 0.04, 0.02, 0.008], // trigger guard
    ],
    markers: [...stickerSlots([-0.04, 0.02, 0.08], 0.03, 0.016), charmAt(-0.07, -0.1)],
  },
  smg: {
    boxes: [
      [0, 0, 0, 0.28, 0.08, 0.05],
      [0.19, 0.01, 0, 0.12, 0.03, 0.03], // short barrel
      [0.04, -0.13, 0, 0.035, 0.18, 0.03], // long straight magazine
      [-0.08, -0.08, 0, 0.035, 0.09, 0.035],
      [-0.22, 0.0, 0, 0.16, 0.015, 0.04], // folding wire stock
      [-0.29, -0.03, 0, 0.02, 0.07, 0.04],
    ],
    markers: [...stickerSlots([-0.08, 0, 0.08], 0, 0.026), charmAt(-0.1, -0.02)],
  },
  shotgun: {
    boxes: [
      [0, 0, 0, 0.3, 0.08, 0.055],
      [0.36, 0.02, 0, 0.44, 0.04, 0.04], // wide barrel
      [0.3, -0.03, 0, 0.32, 0.035, 0.035], // tube magazine
      [0.22, -0.03, 0, 0.12, 0.05, 0.05], // pump
      [-0.3, -0.02, 0, 0.3, 0.1, 0.045],
    ],
    markers: [...stickerSlots([-0.1, 0, 0.1], 0, 0.03), charmAt(-0.15, -0.04)],
  },
  machinegun: {
    boxes: [
      [0, 0, 0, 0.45, 0.12, 0.08], // heavy receiver
      [0.42, 0.02, 0, 0.4, 0.035, 0.035],
      [0.3, 0.02, 0, 0.18, 0.07, 0.07], // barrel shroud
      [0.05, -0.12, 0, 0.12, 0.12, 0.1], // box magazine
      [-0.33, -0.01, 0, 0.22, 0.1, 0.05],
      [0.5, -0.08, 0.03, 0.015, 0.16, 0.015], // bipod legs
      [0.5, -0.08, -0.03, 0.015, 0.16, 0.015],
      [0, 0.075, 0, 0.2, 0.03, 0.04], // carry handle
    ],
    markers: [...stickerSlots([-0.15, -0.05, 0.05, 0.15], 0, 0.041), charmAt(-0.2, -0.05)],
  },
  knife: {
    boxes: [
      [-0.07, 0, 0, 0.12, 0.03, 0.025], // handle
      [0, 0, 0, 0.012, 0.055, 0.03], // guard
      [0.08, 0.004, 0, 0.14, 0.036, 0.005], // blade, narrowing to the tip
      [0.17, 0.008, 0, 0.05, 0.022, 0.004],
      [0.205, 0.011, 0, 0.025, 0.01, 0.003],
    ],
  },
  gloves: {
    boxes: [
      [0, 0, 0, 0.1, 0.11, 0.03], // palm
      [-0.035, 0.095, 0, 0.02, 0.08, 0.022], // fingers
      [-0.012, 0.1, 0, 0.02, 0.09, 0.022],
      [0.012, 0.098, 0, 0.02, 0.086, 0.022],
      [0.035, 0.085, 0, 0.019, 0.06, 0.022],
      [-0.07, 0.02, 0, 0.05, 0.025, 0.025], // thumb
      [0, -0.08, 0, 0.11, 0.05, 0.04], // cuff
    ],
  },
  agent: {
    boxes: [
      [0, 1.3, 0, 0.4, 0.55, 0.22], // torso
      [0, 1.72, 0, 0.2, 0.24, 0.22], // head
      [-0.27, 1.3, 0, 0.12, 0.55, 0.12], // arms
      [0.27, 1.3, 0, 0.12, 0.55, 0.12],
      [-0.1, 0.5, 0, 0.15, 0.95, 0.16], // legs
      [0.1, 0.5, 0, 0.15, 0.95, 0.16],
    ],
    markers: [{ name: 'patch_slot_0', translation: [0.15, 1.4, 0.111] }],
  },
  case: {
    boxes: [
      [0, 0, 0, 0.4, 0.26, 0.12], // shell
      [0, 0.15, 0, 0.14, 0.03, 0.03], // handle
      [-0.13, 0.07, 0.065, 0.04, 0.05, 0.012], // latches
      [0.13, 0.07, 0.065, 0.04, 0.05, 0.012],
    ],
  },
  sticker: {
    boxes: [
      [0, 0, 0, 0.07, 0.09, 0.006],
      [0, 0, 0.0035, 0.06, 0.06, 0.001],
    ],
  }, // slab and its window
  patch: { boxes: [[0, 0, 0, 0.08, 0.08, 0.004]] },
  charm: {
    boxes: [
      [0, 0.05, 0, 0.016, 0.004, 0.004], // ring
      [0, 0.034, 0, 0.016, 0.004, 0.004],
      [-0.008, 0.042, 0, 0.004, 0.02, 0.004],
      [0.008, 0.042, 0, 0.004, 0.02, 0.004],
      [0, 0.024, 0, 0.003, 0.016, 0.003], // chain
      [0, 0, 0, 0.03, 0.03, 0.012], // pendant
    ],
    markers: [{ name: 'charm_ring', translation: [0, 0.05, 0] }],
  },
  other: {
    boxes: [
      [0, 0, 0, 0.06, 0.06, 0.01],
      [0, 0, 0.006, 0.04, 0.04, 0.002],
    ],
  },
};

export function standInModel(family: ModelFamily, baseColor?: readonly [number, number, number, number]): StandInModel {
  const shape = SHAPES[family];
  return { name: family, boxes: shape.boxes, markers: shape.markers ?? [], extras: { family, stand_in: true }, ...(baseColor ? { baseColor } : {}) };
}

// ---------------------------------------------------------------------------
// Deterministic numbers

/** FNV-1a over a string: the stable hash behind colours and pattern choices. */
export function hashString(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}

/**
 * How a paint seed places the pattern, as the game does: a texture offset and rotation. The viewer
 * applies the same numbers to the base texture (three.js `texture.offset` / `texture.rotation`),
 * and paintTexture bakes them, so both agree.
 */
export function paintSeedTransform(seed: number): { offsetX: number; offsetY: number; rotation: number } {
  const random = mulberry32(hashString(`seed:${Math.trunc(seed)}`));
  return { offsetX: random(), offsetY: random(), rotation: random() * Math.PI * 2 };
}

/** Surface roughness by wear (float 0–1): a worn finish is duller. The viewer sets it on the material. */
export function paintRoughness(wear: number): number {
  return 0.35 + 0.55 * Math.min(1, Math.max(0, wear));
}

// ---------------------------------------------------------------------------
// Colours and tileable noise

export type Rgb = readonly [number, number, number];

export function hexColour(hex: string | undefined, fallback: Rgb = [160, 160, 160]): Rgb {
  const match = /^#?([0-9a-f]{6})$/i.exec(hex ?? '');
  if (!match) return fallback;
  const value = parseInt(match[1]!, 16);
  return [(value >> 16) & 255, (value >> 8) & 255, value & 255];
}

function hslColour(hue: number, saturation: number, lightness: number): Rgb {
  const a = saturation * Math.min(lightness, 1 - lightness);
  const channel = (n: number) => {
    const k = (n + hue * 12) % 12;
    return Math.round(255 * (lightness - a * Math.max(-1, Math.min(k - 3, 9 - k, 1))));
  };
  return [channel(0), channel(8), channel(4)];
}

const mix = (a: number, b: number, t: number) => a + (b - a) * t;

/**
 * Fractal value noise on a torus (period `cells` lattice cells over the texture, three octaves), so
 * textures tile and seed offsets wrap. Computed as a whole field: per-pixel closures were the
 * generator's bottleneck (30 ms a texture against 2 ms this way).
 */
function noiseField(seed: number, cells: number, size: number): Float32Array {
  const field = new Float32Array(size * size);
  const random = mulberry32(seed);
  let weightSum = 0;
  for (const [octaveCells, weight] of [
    [cells, 4],
    [cells * 2, 2],
    [cells * 4, 1],
  ] as const) {
    weightSum += weight;
    const lattice = new Float32Array(octaveCells * octaveCells);
    for (let i = 0; i < lattice.length; i++) lattice[i] = random();
    const x0s = new Int32Array(size);
    const x1s = new Int32Array(size);
    const sxs = new Float32Array(size);
    for (let x = 0; x < size; x++) {
      const position = (x / size) * octaveCells;
      const cell = Math.floor(position);
      const fraction = position - cell;
      x0s[x] = cell;
      x1s[x] = (cell + 1) % octaveCells;
      sxs[x] = fraction * fraction * (3 - 2 * fraction);
    }
    for (let y = 0; y < size; y++) {
      const row0 = x0s[y]! * octaveCells;
      const row1 = x1s[y]! * octaveCells;
      const sy = sxs[y]!;
      for (let x = 0; x < size; x++) {
        const sx = sxs[x]!;
        const top = lattice[row0 + x0s[x]!]! + (lattice[row0 + x1s[x]!]! - lattice[row0 + x0s[x]!]!) * sx;
        const bottom = lattice[row1 + x0s[x]!]! + (lattice[row1 + x1s[x]!]! - lattice[row1 + x0s[x]!]!) * sx;
        field[y * size + x] = field[y * size + x]! + (top + (bottom - top) * sy) * weight;
      }
    }
  }
  for (let i = 0; i < field.length; i++) field[i] = field[i]! / weightSum;
  return field;
}

// ---------------------------------------------------------------------------
// Paint textures

export const PAINT_PATTERNS = ['camo', 'stripes', 'fade', 'marble', 'spots', 'checker'] as const;
export type PaintPattern = (typeof PAINT_PATTERNS)[number];

export type PaintInfo = { paintIndex: number; name?: string | undefined; rarity?: string | undefined };

const PATTERN_WORDS: Array<[RegExp, PaintPattern]> = [
  [/camo|ddpat|forest|jungle|desert|urban|sand|safari|woodland|boreal/i, 'camo'],
  [/fade|doppler|gradient|amber|sunset|dusk/i, 'fade'],
  [/stripe|tiger|zebra|line|wave|slash/i, 'stripes'],
  [/marble|damascus|smoke|acid|hypno|swirl|ripple/i, 'marble'],
  [/dot|spot|leopard|bubble|crackle|dapple/i, 'spots'],
  [/check|grid|plaid|tile|mesh|hex|circuit|crosshatch/i, 'checker'],
];

/** The pattern family: from words of the paint's name when they say one, else the name's (or index's) hash. */
export function paintPatternOf(paint: PaintInfo): PaintPattern {
  const skin = paint.name?.split(' | ')[1] ?? paint.name ?? '';
  for (const [words, pattern] of PATTERN_WORDS) if (words.test(skin)) return pattern;
  return PAINT_PATTERNS[hashString(skin || `paint:${paint.paintIndex}`) % PAINT_PATTERNS.length]!;
}

export type RawImage = { data: Uint8Array; width: number; height: number; channels: 4 };

export const PAINT_TEXTURE_SIZE = 256;

/**
 * The base texture of a paint (seed 0 placement, no wear): two colours, one from the rarity and one
 * from the name's hash, laid out by the paint's pattern family. Tileable.
 */
export function paintBaseTexture(paint: PaintInfo, size = PAINT_TEXTURE_SIZE): RawImage {
  const key = hashString(`${paint.paintIndex}:${paint.name ?? ''}`);
  const random = mulberry32(key);
  const first = hexColour(paint.rarity, hslColour(random(), 0.5, 0.45));
  const second = hslColour(random(), 0.35 + random() * 0.5, 0.2 + random() * 0.5);
  const third = hslColour(random(), 0.2 + random() * 0.4, 0.15 + random() * 0.3);
  const pattern = paintPatternOf(paint);
  const noise = noiseField(key, 4 + Math.floor(random() * 4), size);
  const frequencyX = 1 + Math.floor(random() * 6);
  const frequencyY = Math.floor(random() * 4);
  const cells = 4 + 2 * Math.floor(random() * 5);
  const data = new Uint8Array(size * size * 4);
  for (let y = 0; y < size; y++) {
    for (let x = 0; x < size; x++) {
      const u = x / size;
      const v = y / size;
      const n = noise[y * size + x]!;
      let t: number; // 0 → first colour, 1 → second, above 1.5 → third
      switch (pattern) {
        case 'camo':
          t = n < 0.42 ? 0 : n < 0.56 ? 1 : 2;
          break;
        case 'stripes':
          t = Math.sin(2 * Math.PI * (frequencyX * u + frequencyY * v) + n * 3) > 0 ? 1 : 0;
          break;
        case 'fade':
          t = (1 - Math.cos(2 * Math.PI * (u + 0.15 * n))) / 2;
          break;
        case 'marble':
          t = (Math.sin(2 * Math.PI * (frequencyX * u + frequencyY * v) + n * 12) + 1) / 2;
          break;
        case 'spots': {
          const cu = (u * cells) % 1;
          const cv = (v * cells) % 1;
          const d = Math.hypot(cu - 0.5, cv - 0.5) + (n - 0.5) * 0.3;
          t = d < 0.28 ? 2 : d < 0.34 ? 1 : 0;
          break;
        }
        default:
          t = (Math.floor(u * cells) + Math.floor(v * cells)) % 2 === 0 ? 0 : n > 0.5 ? 2 : 1;
      }
      const i = (y * size + x) * 4;
      const from = t <= 1 ? first : second;
      const to = t <= 1 ? second : third;
      const k = t <= 1 ? t : Math.min(1, t - 1);
      data[i] = mix(from[0], to[0], k);
      data[i + 1] = mix(from[1], to[1], k);
      data[i + 2] = mix(from[2], to[2], k);
      data[i + 3] = 255;
    }
  }
  return { data, width: size, height: size, channels: 4 };
}

const grungeFields = new Map<number, Float32Array>();

/** The wear mask: the same for every paint and seed, so built once per texture size. */
function grungeField(width: number, height: number): Float32Array {
  const size = Math.max(width, height);
  let field = grungeFields.get(size);
  if (!field) grungeFields.set(size, (field = noiseField(hashString('grunge'), 8, size)));
  if (width === height) return field;
  // A non-square real texture: sample the square mask.
  const sampled = new Float32Array(width * height);
  for (let y = 0; y < height; y++)
    for (let x = 0; x < width; x++) sampled[y * width + x] = field[Math.floor((y / height) * size) * size + Math.floor((x / width) * size)]!;
  return sampled;
}

const GRIME: Rgb = [62, 55, 46];
const BARE_METAL: Rgb = [150, 150, 146];

/**
 * A paint as drawn on one item: the base texture placed by the seed (offset and rotation, sampled
 * with wrap-around as the texture repeats on the model) and grime by wear (0–1): dirt where a fixed
 * grunge mask is below the wear, bare metal where it is far below (scratched through the paint).
 * The grunge mask does not move with the seed, as in the game, where wear is in the model's space.
 */
export function applySeedAndWear(base: RawImage, seed: number, wear: number): RawImage {
  const { width, height } = base;
  const { offsetX, offsetY, rotation } = paintSeedTransform(seed);
  const cos = Math.cos(rotation);
  const sin = Math.sin(rotation);
  const grunge = grungeField(width, height);
  const threshold = 0.8 * Math.sqrt(Math.min(1, Math.max(0, wear)));
  const data = new Uint8Array(width * height * 4);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const u = x / width - 0.5;
      const v = y / height - 0.5;
      const su = u * cos - v * sin + 0.5 + offsetX;
      const sv = u * sin + v * cos + 0.5 + offsetY;
      const bx = Math.floor((((su % 1) + 1) % 1) * width) % width;
      const by = Math.floor((((sv % 1) + 1) % 1) * height) % height;
      const from = (by * width + bx) * 4;
      const to = (y * width + x) * 4;
      let r = base.data[from]!;
      let g = base.data[from + 1]!;
      let b = base.data[from + 2]!;
      // The mask is in 0..1 (mostly 0.3–0.7): wear 0 is clean, Factory New a speck, Battle-Scarred most.
      const mask = grunge[y * width + x]!;
      const grime = Math.min(1, Math.max(0, (threshold - mask) * 6));
      if (grime > 0) {
        const worn = mask < threshold - 0.25 ? BARE_METAL : GRIME;
        const amount = grime * (worn === BARE_METAL ? 0.9 : 0.6);
        r = mix(r, worn[0], amount);
        g = mix(g, worn[1], amount);
        b = mix(b, worn[2], amount);
      }
      data[to] = r;
      data[to + 1] = g;
      data[to + 2] = b;
      data[to + 3] = base.data[from + 3]!;
    }
  }
  return { data, width, height, channels: 4 };
}

// ---------------------------------------------------------------------------
// Sticker images

export const STICKER_IMAGE_SIZE = 128;

const stickerGeometry = new Map<number, { radius: Float32Array; lobes: Float32Array[] }>();

/** Each pixel's distance from the centre and cos(lobes × angle) for 3..8 lobes, built once per size. */
function stickerGeometryFor(size: number): { radius: Float32Array; lobes: Float32Array[] } {
  let geometry = stickerGeometry.get(size);
  if (geometry) return geometry;
  const radius = new Float32Array(size * size);
  const lobes = Array.from({ length: 9 }, () => new Float32Array(size * size));
  for (let y = 0; y < size; y++) {
    for (let x = 0; x < size; x++) {
      const dx = (x + 0.5) / size - 0.5;
      const dy = (y + 0.5) / size - 0.5;
      radius[y * size + x] = Math.hypot(dx, dy);
      const angle = Math.atan2(dy, dx);
      for (let points = 3; points <= 8; points++) lobes[points]![y * size + x] = Math.cos(points * angle);
    }
  }
  stickerGeometry.set(size, (geometry = { radius, lobes }));
  return geometry;
}

/** A sticker stand-in: a coloured badge with a white border on a transparent background (alpha matters). */
export function stickerImage(sticker: { stickerId: number; rarity?: string | undefined }, size = STICKER_IMAGE_SIZE): RawImage {
  const random = mulberry32(hashString(`sticker:${sticker.stickerId}`));
  const fill = hexColour(sticker.rarity, hslColour(random(), 0.6, 0.5));
  const accent = hslColour(random(), 0.7, 0.6);
  const points = 3 + Math.floor(random() * 6); // outline: 3..8 lobes
  const lobe = 0.05 + random() * 0.12;
  const { radius: radii, lobes } = stickerGeometryFor(size);
  const cosines = lobes[points]!;
  const data = new Uint8Array(size * size * 4);
  for (let p = 0; p < size * size; p++) {
    const radius = radii[p]!;
    const edge = 0.4 - lobe + lobe * cosines[p]!;
    if (radius > edge) continue; // transparent
    const colour: Rgb = radius > edge - 0.04 ? [255, 255, 255] : radius < edge * 0.45 ? accent : fill;
    const i = p * 4;
    data[i] = colour[0];
    data[i + 1] = colour[1];
    data[i + 2] = colour[2];
    // Antialiased rim: the last pixel fades out.
    data[i + 3] = Math.round(255 * Math.min(1, (edge - radius) * size));
  }
  return { data, width: size, height: size, channels: 4 };
}
