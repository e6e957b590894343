/** Deterministic hashing and value noise: the simulator's prices (market.ts) and exchange rates (fx.ts). */

function fmix(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

export function hashString(text: string, seed: number): number {
  let h = (0x811c9dc5 ^ seed) >>> 0;
  for (let i = 0; i < text.length; i += 1) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  return fmix(h);
}

export function mix(...values: number[]): number {
  let h = 0x9e3779b9;
  for (const value of values) h = fmix((Math.imul(h ^ (value >>> 0), 0x165667b1) + 0x27d4eb2d) >>> 0);
  return h;
}

/** [0, 1) from a hash. */
export const unit = (h: number) => h / 4294967296;

/** Value noise: smooth interpolation between random values at each multiple of `scale` buckets. */
export function valueNoise(h: number, octave: number, bucket: number, scale: number): number {
  const cell = Math.floor(bucket / scale);
  const t = (bucket - cell * scale) / scale;
  const smooth = t * t * (3 - 2 * t);
  const a = unit(mix(h, octave, cell)) * 2 - 1;
  const b = unit(mix(h, octave, cell + 1)) * 2 - 1;
  return a + (b - a) * smooth;
}

// Scales in buckets (30 s: 30 s, 4 min, 32 min, ~4 h, ~34 h) and their amplitudes (log-price).
const OCTAVES: [number, number][] = [
  [1, 0.002],
  [8, 0.006],
  [64, 0.015],
  [512, 0.035],
  [4096, 0.06],
];

export function drift(h: number, bucket: number, weight = 1): number {
  let sum = 0;
  for (const [index, [scale, amplitude]] of OCTAVES.entries()) sum += valueNoise(h, index, bucket, scale) * amplitude;
  return sum * weight;
}
