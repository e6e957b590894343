/**
 * The item card (docs/design.md §18), drawn on a 2D canvas by the viewer page when the definition has no real
 * 3D model: the item's image over a glow of its rarity colour, its stickers at their slots, its
 * charms hanging from the top edge, and a panel with the name, rarity and exterior, the name tag, the
 * StatTrak counter, a wear bar with the float marked and the scene's watermark, on the scene's
 * background. Browser code (bundled into the viewer script), except `cardLayout`, which is pure so
 * the tests know where each part is drawn.
 */
import type { ItemCard, ViewerBackground } from './contract.ts';

export type Rect = { x: number; y: number; width: number; height: number };

/** The card is laid out on a 512 × 384 grid, scaled by `unit` and centred on the canvas. */
export const CARD_GRID = { width: 512, height: 384 } as const;

export type CardLayout = {
  unit: number;
  box: Rect;
  /** Where the item image is fitted (contained, centred). */
  imageArea: Rect;
  /** One square per sticker, in the order of `card.stickers`, before its rotation. */
  stickers: Rect[];
  charms: Rect[];
  panel: Rect;
  wearBar: Rect | null;
};

const clamp = (value: number, min: number, max: number) => Math.min(max, Math.max(min, value));

/**
 * Where every part goes on a canvas of width × height pixels. `margin` is a share of the canvas kept
 * free around the card (the interactive page; renders use all of it).
 */
export function cardLayout(card: ItemCard, width: number, height: number, margin = 0): CardLayout {
  const unit = Math.min((width * (1 - 2 * margin)) / CARD_GRID.width, (height * (1 - 2 * margin)) / CARD_GRID.height);
  const box = {
    x: (width - CARD_GRID.width * unit) / 2,
    y: (height - CARD_GRID.height * unit) / 2,
    width: CARD_GRID.width * unit,
    height: CARD_GRID.height * unit,
  };
  const at = (x: number, y: number, w: number, h: number): Rect => ({ x: box.x + x * unit, y: box.y + y * unit, width: w * unit, height: h * unit });
  const hasStickers = card.stickers.length > 0;
  const imageArea = at(24, 14, 464, hasStickers ? 180 : 224);
  // Sticker slots spread under the item image (a weapon has 5 slots, 0 at the left); a repeated slot
  // shifts right so both stay visible; offsets (−1…1) move a sticker by up to half a slot.
  const slots = Math.max(5, ...card.stickers.map((sticker) => sticker.slot + 1));
  const pitch = 340 / slots;
  const seen = new Map<number, number>();
  const stickers = card.stickers.map((sticker) => {
    const repeat = seen.get(sticker.slot) ?? 0;
    seen.set(sticker.slot, repeat + 1);
    const side = 40 * clamp(sticker.scale, 0.5, 1.5);
    const cx = 86 + (sticker.slot + 0.5) * pitch + repeat * 12 + clamp(sticker.offset_x, -1, 1) * pitch * 0.5;
    const cy = 220 + clamp(sticker.offset_y, -1, 1) * 10;
    return at(cx - side / 2, cy - side / 2, side, side);
  });
  const charms = card.charms.map((charm, index) => {
    const cx = 46 + index * 54 + clamp(charm.offset_x, -1, 1) * 10;
    return at(cx - 22, 30 + clamp(charm.offset_y, -1, 1) * 8, 44, 44);
  });
  return { unit, box, imageArea, stickers, charms, panel: at(12, 258, 488, 114), wearBar: card.wear ? at(30, 324, 458, 8) : null };
}

/** The largest rectangle of the image's aspect inside `area`, centred. */
export function containedRect(area: Rect, imageWidth: number, imageHeight: number): Rect {
  const scale = Math.min(area.width / imageWidth, area.height / imageHeight);
  const width = imageWidth * scale;
  const height = imageHeight * scale;
  return { x: area.x + (area.width - width) / 2, y: area.y + (area.height - height) / 2, width, height };
}

// ---- browser drawing --------------------------------------------------------------------------------

type Gradient = { addColorStop(offset: number, color: string): void };
type Bitmap = { width: number; height: number; close(): void };
export type Canvas2D = {
  canvas: { width: number; height: number };
  font: string;
  fillStyle: unknown;
  strokeStyle: unknown;
  lineWidth: number;
  globalAlpha: number;
  textAlign: string;
  textBaseline: string;
  shadowColor: string;
  shadowBlur: number;
  shadowOffsetY: number;
  imageSmoothingQuality: string;
  setTransform(a: number, b: number, c: number, d: number, e: number, f: number): void;
  save(): void;
  restore(): void;
  translate(x: number, y: number): void;
  rotate(angle: number): void;
  scale(x: number, y: number): void;
  clearRect(x: number, y: number, width: number, height: number): void;
  fillRect(x: number, y: number, width: number, height: number): void;
  beginPath(): void;
  closePath(): void;
  moveTo(x: number, y: number): void;
  lineTo(x: number, y: number): void;
  arc(x: number, y: number, radius: number, start: number, end: number): void;
  roundRect(x: number, y: number, width: number, height: number, radius: number): void;
  fill(): void;
  stroke(): void;
  clip(): void;
  setLineDash(segments: number[]): void;
  fillText(text: string, x: number, y: number): void;
  measureText(text: string): { width: number };
  drawImage(image: Bitmap, x: number, y: number, width: number, height: number): void;
  drawImage(image: Bitmap, sx: number, sy: number, sw: number, sh: number, x: number, y: number, width: number, height: number): void;
  createLinearGradient(x0: number, y0: number, x1: number, y1: number): Gradient;
  createRadialGradient(x0: number, y0: number, r0: number, x1: number, y1: number, r1: number): Gradient;
  getImageData(x: number, y: number, width: number, height: number): { data: Uint8ClampedArray };
};
declare function fetch(url: string, init: { signal: unknown }): Promise<{ ok: boolean; status: number; blob(): Promise<unknown> }>;
declare function createImageBitmap(blob: unknown): Promise<Bitmap>;
declare const document: {
  createElement(tag: 'canvas'): { width: number; height: number; getContext(kind: '2d', options?: { willReadFrequently?: boolean }): Canvas2D | null };
};
declare class AbortController {
  signal: unknown;
  abort(): void;
}

/** Longer than the server's own bound on an image (viewer/images.ts), shorter than a render's timeout. */
const IMAGE_TIMEOUT_MS = 12_000;
// Decoded images kept by a page between items: a render page draws the same stickers again and again.
const IMAGE_CACHE_LIMIT = 256;
/** A decoded image and the part of it that is not transparent (what the card lays out). */
type CardImage = { bitmap: Bitmap; content: Rect };
const imageCache = new Map<string, Promise<CardImage | null>>();

/**
 * The box around an image's visible pixels, in its own pixels, found once per image on a small copy.
 * The cache fits every image into a transparent square (shared/media/images/image-cache.ts), and item
 * icons have margins of their own: laid out by their content they fill their place on the card.
 */
function contentOf(bitmap: Bitmap): Rect {
  const whole = { x: 0, y: 0, width: bitmap.width, height: bitmap.height };
  const scale = Math.min(1, 128 / Math.max(bitmap.width, bitmap.height));
  const width = Math.max(1, Math.round(bitmap.width * scale));
  const height = Math.max(1, Math.round(bitmap.height * scale));
  const canvas = document.createElement('canvas');
  canvas.width = width;
  canvas.height = height;
  const context = canvas.getContext('2d', { willReadFrequently: true });
  if (!context) return whole;
  context.drawImage(bitmap, 0, 0, width, height);
  const alpha = context.getImageData(0, 0, width, height).data;
  let minX = width;
  let minY = height;
  let maxX = -1;
  let maxY = -1;
  for (let y = 0; y < height; y += 1) {
    for (let x = 0; x < width; x += 1) {
      if (alpha[(y * width + x) * 4 + 3]! <= 8) continue;
      if (x < minX) minX = x;
      if (x > maxX) maxX = x;
      if (y < minY) minY = y;
      if (y > maxY) maxY = y;
    }
  }
  if (maxX < 0) return whole;
  const x0 = Math.max(0, (minX - 1) / scale);
  const y0 = Math.max(0, (minY - 1) / scale);
  const x1 = Math.min(bitmap.width, (maxX + 2) / scale);
  const y1 = Math.min(bitmap.height, (maxY + 2) / scale);
  return { x: x0, y: y0, width: x1 - x0, height: y1 - y0 };
}

/** Draws the image's content fitted (contained, centred) into `area`. */
function drawContained(context: Canvas2D, image: CardImage, area: Rect) {
  const { content } = image;
  const target = containedRect(area, content.width, content.height);
  context.drawImage(image.bitmap, content.x, content.y, content.width, content.height, target.x, target.y, target.width, target.height);
}

/** The decoded image at `url` (our origin), or null when it could not be fetched or decoded in time. */
function loadImage(url: string): Promise<CardImage | null> {
  let entry = imageCache.get(url);
  if (!entry) {
    entry = (async () => {
      const abort = new AbortController();
      const timer = setTimeout(() => abort.abort(), IMAGE_TIMEOUT_MS);
      try {
        const response = await fetch(url, { signal: abort.signal });
        if (!response.ok) return null;
        const bitmap = await createImageBitmap(await response.blob());
        return { bitmap, content: contentOf(bitmap) };
      } catch {
        return null; // reported as a missing image by the caller
      } finally {
        clearTimeout(timer);
      }
    })();
    imageCache.set(url, entry);
    // A missing image is not remembered: the next item asks again (the upstream may be back).
    void entry.then((bitmap) => {
      if (!bitmap && imageCache.get(url) === entry) imageCache.delete(url);
    });
  }
  return entry;
}

/** Frees every cached image when the cache is full; called between items only. */
async function trimImageCache(): Promise<void> {
  if (imageCache.size <= IMAGE_CACHE_LIMIT) return;
  const entries = [...imageCache.values()];
  imageCache.clear();
  for (const image of await Promise.all(entries)) image?.bitmap.close();
}

function parseHex(value: string): { r: number; g: number; b: number; a: number } {
  const hex = value.replace('#', '');
  return {
    r: parseInt(hex.slice(0, 2), 16),
    g: parseInt(hex.slice(2, 4), 16),
    b: parseInt(hex.slice(4, 6), 16),
    a: hex.length === 8 ? parseInt(hex.slice(6, 8), 16) / 255 : 1,
  };
}

const rgba = (hex: string, alpha: number) => {
  const { r, g, b } = parseHex(hex);
  return `rgba(${r},${g},${b},${alpha})`;
};

/** Whether the background is light enough to want dark text (a transparent one is treated as dark: the panel is). */
function isLight(background: ViewerBackground): boolean {
  if (background.type === 'transparent') return false;
  const colours = background.value.split(',').map(parseHex);
  const luminance = colours.reduce((sum, { r, g, b }) => sum + (0.2126 * r + 0.7152 * g + 0.0722 * b) / 255, 0) / colours.length;
  return luminance > 0.6;
}

function paintBackground(context: Canvas2D, background: ViewerBackground, width: number, height: number) {
  context.clearRect(0, 0, width, height);
  if (background.type === 'color') {
    context.fillStyle = background.value.length === 9 ? rgba(background.value, parseHex(background.value).a) : background.value;
    context.fillRect(0, 0, width, height);
  } else if (background.type === 'gradient') {
    const [top, bottom] = background.value.split(',') as [string, string];
    const gradient = context.createLinearGradient(0, 0, 0, height);
    gradient.addColorStop(0, top);
    gradient.addColorStop(1, bottom);
    context.fillStyle = gradient;
    context.fillRect(0, 0, width, height);
  }
}

/** `text` cut with an ellipsis to fit `maxWidth` in the current font. */
function fitted(context: Canvas2D, text: string, maxWidth: number): string {
  if (context.measureText(text).width <= maxWidth) return text;
  let low = 0;
  let high = text.length;
  while (low < high) {
    const middle = Math.ceil((low + high) / 2);
    if (context.measureText(`${text.slice(0, middle)}…`).width <= maxWidth) low = middle;
    else high = middle - 1;
  }
  return `${text.slice(0, low).trimEnd()}…`;
}

/** The exteriors' shares of the wear bar and their colours (Factory New … Battle-Scarred). */
const WEAR_SEGMENTS: Array<[number, number, string]> = [
  [0, 0.07, '#3fb96b'],
  [0.07, 0.15, '#8cc152'],
  [0.15, 0.38, '#e8c13a'],
  [0.38, 0.45, '#ec8f32'],
  [0.45, 1, '#e04f43'],
];

const SANS = '"DejaVu Sans", "Segoe UI", Roboto, Helvetica, Arial, sans-serif';
const MONO = '"DejaVu Sans Mono", Menlo, Consolas, monospace';

export type CardDrawing = { card: ItemCard; background: ViewerBackground; watermark: string | null };

/**
 * Draws the card on `context` (its canvas already sized, `pixelRatio` device pixels per CSS pixel)
 * once every image has loaded or failed. `itemImageMissing`: the item has an image but it could not
 * be loaded (a render fails with item_image_unavailable; the interactive page shows the card without).
 */
export async function drawItemCard(context: Canvas2D, drawing: CardDrawing, options: { margin: number }): Promise<{ itemImageMissing: boolean }> {
  await trimImageCache();
  const { card, background, watermark } = drawing;
  const [itemImage, stickerImages, charmImages] = await Promise.all([
    card.image ? loadImage(card.image) : Promise.resolve(null),
    Promise.all(card.stickers.map((sticker) => (sticker.image ? loadImage(sticker.image) : Promise.resolve(null)))),
    Promise.all(card.charms.map((charm) => (charm.image ? loadImage(charm.image) : Promise.resolve(null)))),
  ]);
  const { width, height } = context.canvas;
  context.setTransform(1, 0, 0, 1, 0, 0);
  context.globalAlpha = 1;
  context.imageSmoothingQuality = 'high';
  paintBackground(context, background, width, height);

  const layout = cardLayout(card, width, height, options.margin);
  const u = layout.unit;
  const light = isLight(background);
  const text = light ? '#14181c' : '#f2f4f6';
  const muted = light ? '#55606a' : '#a3adb7';
  const accent = card.rarity?.colour ?? (light ? '#8a96a3' : '#6f7b88');

  // The rarity's glow behind the item, fading out well inside the canvas edges.
  const area = layout.imageArea;
  const cx = area.x + area.width / 2;
  const cy = area.y + area.height / 2;
  // An ellipse as wide as the image area and about as tall, so no edge of it shows.
  const radius = area.width / 2;
  context.save();
  context.translate(cx, cy);
  context.scale(1, (area.height * 0.58) / radius);
  const glow = context.createRadialGradient(0, 0, 0, 0, 0, radius);
  glow.addColorStop(0, rgba(accent, light ? 0.3 : 0.45));
  glow.addColorStop(0.5, rgba(accent, light ? 0.12 : 0.18));
  glow.addColorStop(1, rgba(accent, 0));
  context.fillStyle = glow;
  context.fillRect(-radius, -radius, radius * 2, radius * 2);
  context.restore();

  if (itemImage) {
    context.save();
    context.shadowColor = 'rgba(0,0,0,0.45)';
    context.shadowBlur = 14 * u;
    context.shadowOffsetY = 6 * u;
    drawContained(context, itemImage, area);
    context.restore();
  } else {
    // No image (the item has none, or it could not be loaded): a quiet frame with the name's word.
    const frame = { x: cx - 120 * u, y: cy - 50 * u, width: 240 * u, height: 100 * u };
    context.save();
    context.strokeStyle = rgba(light ? '#000000' : '#ffffff', 0.25);
    context.lineWidth = 1.5 * u;
    context.setLineDash([6 * u, 5 * u]);
    context.beginPath();
    context.roundRect(frame.x, frame.y, frame.width, frame.height, 10 * u);
    context.stroke();
    context.restore();
    context.fillStyle = muted;
    context.font = `500 ${13 * u}px ${SANS}`;
    context.textAlign = 'center';
    context.textBaseline = 'middle';
    context.fillText(card.image ? 'Image unavailable' : 'No image', cx, cy);
  }

  // Stickers at their slots; worn stickers fade, as scraped ones do in the game.
  card.stickers.forEach((sticker, index) => {
    const rect = layout.stickers[index]!;
    const image = stickerImages[index];
    context.save();
    context.translate(rect.x + rect.width / 2, rect.y + rect.height / 2);
    context.rotate((clamp(sticker.rotation, -360, 360) * Math.PI) / 180);
    context.globalAlpha = 1 - clamp(sticker.wear, 0, 1) * 0.75;
    if (image) {
      context.shadowColor = 'rgba(0,0,0,0.35)';
      context.shadowBlur = 4 * u;
      context.shadowOffsetY = 2 * u;
      drawContained(context, image, { x: -rect.width / 2, y: -rect.height / 2, width: rect.width, height: rect.height });
    } else {
      context.strokeStyle = rgba(light ? '#000000' : '#ffffff', 0.35);
      context.lineWidth = 1.5 * u;
      context.setLineDash([3 * u, 3 * u]);
      context.beginPath();
      context.arc(0, 0, rect.width * 0.4, 0, Math.PI * 2);
      context.stroke();
    }
    context.restore();
  });

  // Charms hang on a short chain from the card's top edge.
  card.charms.forEach((_, index) => {
    const rect = layout.charms[index]!;
    const image = charmImages[index];
    const hookX = rect.x + rect.width / 2;
    context.save();
    context.strokeStyle = rgba(light ? '#000000' : '#ffffff', 0.55);
    context.lineWidth = 1.5 * u;
    context.beginPath();
    context.moveTo(hookX, layout.box.y + 6 * u);
    context.lineTo(hookX, rect.y + 4 * u);
    context.stroke();
    context.beginPath();
    context.arc(hookX, layout.box.y + 6 * u, 3 * u, 0, Math.PI * 2);
    context.stroke();
    if (image) {
      context.shadowColor = 'rgba(0,0,0,0.35)';
      context.shadowBlur = 5 * u;
      context.shadowOffsetY = 2 * u;
      drawContained(context, image, rect);
    } else {
      context.fillStyle = rgba(accent, 0.8);
      context.beginPath();
      context.arc(hookX, rect.y + rect.height / 2, rect.width * 0.3, 0, Math.PI * 2);
      context.fill();
    }
    context.restore();
  });

  // The panel: name, rarity and exterior, name tag, StatTrak counter, wear bar and float, watermark.
  const panel = layout.panel;
  context.save();
  context.beginPath();
  context.roundRect(panel.x, panel.y, panel.width, panel.height, 10 * u);
  context.fillStyle = light ? 'rgba(255,255,255,0.72)' : 'rgba(10,12,16,0.62)';
  context.fill();
  context.clip();
  context.fillStyle = accent;
  context.fillRect(panel.x, panel.y, 5 * u, panel.height);
  context.restore();

  const left = panel.x + 18 * u;
  const right = panel.x + panel.width - 14 * u;
  context.textAlign = 'left';
  context.textBaseline = 'alphabetic';

  let nameRoom = right - left;
  if (card.stattrak !== null) {
    const label = `StatTrak™ ${String(Math.max(0, Math.trunc(card.stattrak))).padStart(6, '0')}`;
    context.font = `700 ${12 * u}px ${MONO}`;
    const boxWidth = context.measureText(label).width + 16 * u;
    const boxTop = panel.y + 11 * u;
    context.beginPath();
    context.roundRect(right - boxWidth, boxTop, boxWidth, 22 * u, 5 * u);
    context.fillStyle = 'rgba(20,16,10,0.9)';
    context.fill();
    context.strokeStyle = '#cf6a32';
    context.lineWidth = 1.2 * u;
    context.stroke();
    context.fillStyle = '#ff9a3d';
    context.textBaseline = 'middle';
    context.fillText(label, right - boxWidth + 8 * u, boxTop + 11.5 * u);
    context.textBaseline = 'alphabetic';
    nameRoom -= boxWidth + 12 * u;
  }

  context.fillStyle = text;
  context.font = `700 ${20 * u}px ${SANS}`;
  context.fillText(fitted(context, card.name, nameRoom), left, panel.y + 29 * u);

  // Rarity · exterior on the left, the name tag on the right of the second line.
  const secondLine = panel.y + 51 * u;
  let x = left;
  context.font = `600 ${13 * u}px ${SANS}`;
  if (card.rarity?.name) {
    context.fillStyle = card.rarity.colour;
    context.fillText(card.rarity.name, x, secondLine);
    x += context.measureText(card.rarity.name).width;
  }
  if (card.exterior) {
    context.fillStyle = muted;
    context.font = `500 ${13 * u}px ${SANS}`;
    const part = card.rarity?.name ? `  ·  ${card.exterior}` : card.exterior;
    context.fillText(part, x, secondLine);
    x += context.measureText(part).width;
  }
  if (card.name_tag) {
    context.font = `italic 500 ${13 * u}px ${SANS}`;
    const label = fitted(context, `“${card.name_tag}”`, Math.max(40 * u, right - x - 40 * u));
    const labelWidth = context.measureText(label).width;
    context.fillStyle = text;
    context.textAlign = 'right';
    context.fillText(label, right, secondLine);
    context.textAlign = 'left';
    // A small tag before the text.
    const tagX = right - labelWidth - 20 * u;
    const tagY = secondLine - 9 * u;
    context.beginPath();
    context.moveTo(tagX, tagY + 5 * u);
    context.lineTo(tagX + 5 * u, tagY);
    context.lineTo(tagX + 14 * u, tagY);
    context.lineTo(tagX + 14 * u, tagY + 10 * u);
    context.lineTo(tagX + 5 * u, tagY + 10 * u);
    context.closePath();
    context.fillStyle = muted;
    context.fill();
    context.beginPath();
    context.arc(tagX + 5 * u, tagY + 5 * u, 1.4 * u, 0, Math.PI * 2);
    context.fillStyle = light ? '#ffffff' : '#111418';
    context.fill();
  }

  const bar = layout.wearBar;
  if (bar && card.wear) {
    const wear = clamp(card.wear.value, 0, 1);
    context.save();
    context.beginPath();
    context.roundRect(bar.x, bar.y, bar.width, bar.height, bar.height / 2);
    context.clip();
    for (const [from, to, colour] of WEAR_SEGMENTS) {
      context.fillStyle = colour;
      context.fillRect(bar.x + from * bar.width, bar.y, (to - from) * bar.width, bar.height);
    }
    // Outside the skin's wear range the bar is dimmed: those floats cannot occur.
    context.fillStyle = light ? 'rgba(255,255,255,0.7)' : 'rgba(10,12,16,0.7)';
    context.fillRect(bar.x, bar.y, clamp(card.wear.min, 0, 1) * bar.width, bar.height);
    const maxX = bar.x + clamp(card.wear.max, 0, 1) * bar.width;
    context.fillRect(maxX, bar.y, bar.x + bar.width - maxX, bar.height);
    context.restore();
    // The float: a marker across the bar with a pointer above it.
    const markX = bar.x + wear * bar.width;
    context.fillStyle = light ? '#14181c' : '#ffffff';
    context.strokeStyle = light ? '#ffffff' : '#0b0d10';
    context.lineWidth = 1 * u;
    context.beginPath();
    context.moveTo(markX - 5 * u, bar.y - 8 * u);
    context.lineTo(markX + 5 * u, bar.y - 8 * u);
    context.lineTo(markX, bar.y - 1.5 * u);
    context.closePath();
    context.fill();
    context.stroke();
    context.fillRect(markX - 1 * u, bar.y - 2 * u, 2 * u, bar.height + 4 * u);

    const floatLine = bar.y + bar.height + 23 * u;
    context.font = `600 ${10 * u}px ${SANS}`;
    context.fillStyle = muted;
    context.fillText('FLOAT', left, floatLine);
    const labelWidth = context.measureText('FLOAT').width;
    context.font = `500 ${13 * u}px ${MONO}`;
    context.fillStyle = text;
    context.fillText(floatText(card.wear.value), left + labelWidth + 8 * u, floatLine);
  }

  if (watermark) {
    context.font = `600 ${11 * u}px ${SANS}`;
    context.fillStyle = rgba(light ? '#000000' : '#ffffff', 0.55);
    context.textAlign = 'right';
    context.fillText(fitted(context, watermark, 200 * u), right, panel.y + 97 * u);
    context.textAlign = 'left';
  }

  return { itemImageMissing: card.image !== null && itemImage === null };
}

/** The float as inventories show it: up to 10 decimals, at least 2, no trailing zeros beyond. */
export function floatText(value: number): string {
  const fixed = value.toFixed(10).replace(/0+$/, '');
  const [whole, decimals = ''] = fixed.split('.');
  return `${whole}.${decimals.padEnd(2, '0')}`;
}
