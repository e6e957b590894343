/**
 * A minimal glTF 2.0 binary (GLB) writer for the stand-in models of docs/design.md §10: one mesh built from
 * axis-aligned boxes (positions, normals, UVs, 16-bit indices), one material named `paint` whose
 * baseColorTexture the viewer replaces with the paint (the texture repeats, so a seed offset wraps),
 * and empty marker nodes (sticker slots, charm attachment) the viewer can place things on.
 * Written by hand because the format is small and fixed; see the glTF 2.0 spec, "GLB File Format".
 */

/** [centre x, y, z, size x, y, z] in metres; +X is the muzzle/tip, +Y up. */
export type Box = readonly [number, number, number, number, number, number];
export type Marker = { name: string; translation: readonly [number, number, number] };

export type StandInModel = {
  name: string;
  boxes: readonly Box[];
  markers?: readonly Marker[];
  /** Linear RGBA multiplied with the texture; the paint texture replaces the image, not this factor. */
  baseColor?: readonly [number, number, number, number];
  extras?: Record<string, unknown>;
};

/**
 * The `asset.generator` every stand-in carries: how renders tell a generated stand-in from a real
 * model (shared/media/item-files.ts `modelSource`; docs/decisions.md "Media").
 */
export const STAND_IN_GENERATOR = 'cs2-pricing-platform item-files stand-in';

const GLB_MAGIC = 0x46546c67; // "glTF"
const CHUNK_JSON = 0x4e4f534a; // "JSON"
const CHUNK_BIN = 0x004e4942; // "BIN\0"
const FLOAT = 5126;
const UNSIGNED_SHORT = 5123;
const ARRAY_BUFFER = 34962;
const ELEMENT_ARRAY_BUFFER = 34963;
const REPEAT = 10497;
const LINEAR = 9729;
const LINEAR_MIPMAP_LINEAR = 9987;

// Each face: normal axis and sign, then the two in-plane axes (u, v) in counter-clockwise order seen from outside.
const FACES: ReadonlyArray<{ axis: 0 | 1 | 2; sign: 1 | -1; u: 0 | 1 | 2; v: 0 | 1 | 2 }> = [
  { axis: 0, sign: 1, u: 2, v: 1 },
  { axis: 0, sign: -1, u: 2, v: 1 },
  { axis: 1, sign: 1, u: 0, v: 2 },
  { axis: 1, sign: -1, u: 0, v: 2 },
  { axis: 2, sign: 1, u: 0, v: 1 },
  { axis: 2, sign: -1, u: 0, v: 1 },
];

type Geometry = { positions: Float32Array; normals: Float32Array; uvs: Float32Array; indices: Uint16Array; min: number[]; max: number[] };

function cross(a: number[], b: number[]): number[] {
  return [a[1]! * b[2]! - a[2]! * b[1]!, a[2]! * b[0]! - a[0]! * b[2]!, a[0]! * b[1]! - a[1]! * b[0]!];
}

export function boxGeometry(boxes: readonly Box[]): Geometry {
  const min = [Infinity, Infinity, Infinity];
  const max = [-Infinity, -Infinity, -Infinity];
  for (const [cx, cy, cz, sx, sy, sz] of boxes) {
    const centre = [cx, cy, cz];
    const size = [sx, sy, sz];
    for (let axis = 0; axis < 3; axis++) {
      min[axis] = Math.min(min[axis]!, centre[axis]! - size[axis]! / 2);
      max[axis] = Math.max(max[axis]!, centre[axis]! + size[axis]! / 2);
    }
  }
  const extent = max.map((value, axis) => value - min[axis]! || 1);
  const vertexCount = boxes.length * 24;
  if (vertexCount > 0xffff) throw new Error('stand-in model too large for 16-bit indices');
  const positions = new Float32Array(vertexCount * 3);
  const normals = new Float32Array(vertexCount * 3);
  const uvs = new Float32Array(vertexCount * 2);
  const indices = new Uint16Array(boxes.length * 36);
  let vertex = 0;
  let index = 0;
  for (const [cx, cy, cz, sx, sy, sz] of boxes) {
    const centre = [cx, cy, cz];
    const half = [sx / 2, sy / 2, sz / 2];
    for (const face of FACES) {
      const normal = [0, 0, 0];
      normal[face.axis] = face.sign;
      // Corner order chosen so (corner1-corner0) × (corner2-corner0) points along the normal.
      const uAxis = [0, 0, 0];
      uAxis[face.u] = 1;
      const vAxis = [0, 0, 0];
      vAxis[face.v] = 1;
      const flip = cross(uAxis, vAxis)[face.axis]! * face.sign < 0;
      const corners: Array<[number, number]> = flip
        ? [
            [-1, -1],
            [-1, 1],
            [1, 1],
            [1, -1],
          ]
        : [
            [-1, -1],
            [1, -1],
            [1, 1],
            [-1, 1],
          ];
      const first = vertex;
      for (const [du, dv] of corners) {
        const p = [...centre];
        p[face.axis] = centre[face.axis]! + face.sign * half[face.axis]!;
        p[face.u] = centre[face.u]! + du * half[face.u]!;
        p[face.v] = centre[face.v]! + dv * half[face.v]!;
        positions.set(p, vertex * 3);
        normals.set(normal, vertex * 3);
        // Planar projection over the whole model, so one paint texture flows across the parts.
        uvs.set([(p[face.u]! - min[face.u]!) / extent[face.u]!, 1 - (p[face.v]! - min[face.v]!) / extent[face.v]!], vertex * 2);
        vertex += 1;
      }
      indices.set([first, first + 1, first + 2, first, first + 2, first + 3], index);
      index += 6;
    }
  }
  return { positions, normals, uvs, indices, min, max };
}

function padTo4(length: number): number {
  return (length + 3) & ~3;
}

/**
 * The GLB bytes of a stand-in; `image` is the PNG embedded as the placeholder base colour texture.
 * `generator` is STAND_IN_GENERATOR except for the image fake's models, which stand for real ones.
 */
export function buildGlb(model: StandInModel, image: Uint8Array, generator = STAND_IN_GENERATOR): Uint8Array {
  const geometry = boxGeometry(model.boxes);
  const parts: Uint8Array[] = [
    new Uint8Array(geometry.positions.buffer),
    new Uint8Array(geometry.normals.buffer),
    new Uint8Array(geometry.uvs.buffer),
    new Uint8Array(geometry.indices.buffer),
    image,
  ];
  const offsets: number[] = [];
  let binLength = 0;
  for (const part of parts) {
    offsets.push(binLength);
    binLength = padTo4(binLength + part.byteLength);
  }
  const bin = new Uint8Array(binLength);
  parts.forEach((part, i) => {
    bin.set(part, offsets[i]);
  });
  const vertexCount = geometry.positions.length / 3;
  const markers = model.markers ?? [];
  const json = {
    asset: { version: '2.0', generator },
    scene: 0,
    scenes: [{ nodes: [0] }],
    nodes: [
      { name: model.name, mesh: 0, children: markers.map((_, i) => i + 1), ...(model.extras ? { extras: model.extras } : {}) },
      ...markers.map((marker) => ({ name: marker.name, translation: [...marker.translation] })),
    ],
    meshes: [{ name: model.name, primitives: [{ attributes: { POSITION: 0, NORMAL: 1, TEXCOORD_0: 2 }, indices: 3, material: 0 }] }],
    materials: [
      {
        name: 'paint',
        pbrMetallicRoughness: {
          baseColorFactor: [...(model.baseColor ?? [1, 1, 1, 1])],
          baseColorTexture: { index: 0 },
          metallicFactor: 0.2,
          roughnessFactor: 0.6,
        },
      },
    ],
    textures: [{ sampler: 0, source: 0 }],
    samplers: [{ magFilter: LINEAR, minFilter: LINEAR_MIPMAP_LINEAR, wrapS: REPEAT, wrapT: REPEAT }],
    images: [{ name: 'paint', bufferView: 4, mimeType: 'image/png' }],
    accessors: [
      { bufferView: 0, componentType: FLOAT, count: vertexCount, type: 'VEC3', min: geometry.min, max: geometry.max },
      { bufferView: 1, componentType: FLOAT, count: vertexCount, type: 'VEC3' },
      { bufferView: 2, componentType: FLOAT, count: vertexCount, type: 'VEC2' },
      { bufferView: 3, componentType: UNSIGNED_SHORT, count: geometry.indices.length, type: 'SCALAR' },
    ],
    bufferViews: parts.map((part, i) => ({
      buffer: 0,
      byteOffset: offsets[i],
      byteLength: part.byteLength,
      ...(i < 3 ? { target: ARRAY_BUFFER } : i === 3 ? { target: ELEMENT_ARRAY_BUFFER } : {}),
    })),
    buffers: [{ byteLength: binLength }],
  };
  const jsonBytes = new TextEncoder().encode(JSON.stringify(json));
  const jsonLength = padTo4(jsonBytes.byteLength);
  const total = 12 + 8 + jsonLength + 8 + binLength;
  const out = new Uint8Array(total);
  const view = new DataView(out.buffer);
  view.setUint32(0, GLB_MAGIC, true);
  view.setUint32(4, 2, true);
  view.setUint32(8, total, true);
  view.setUint32(12, jsonLength, true);
  view.setUint32(16, CHUNK_JSON, true);
  out.set(jsonBytes, 20);
  out.fill(0x20, 20 + jsonBytes.byteLength, 20 + jsonLength); // the spec pads JSON with spaces
  view.setUint32(20 + jsonLength, binLength, true);
  view.setUint32(24 + jsonLength, CHUNK_BIN, true);
  out.set(bin, 28 + jsonLength);
  return out;
}

/** Parses a GLB's header and two chunks (for tests and for checking dropped-in files); `json` is the JSON chunk as parsed, unchecked. */
export function parseGlb(bytes: Uint8Array): { json: unknown; bin: Uint8Array } {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (bytes.byteLength < 28 || view.getUint32(0, true) !== GLB_MAGIC) throw new Error('not a GLB');
  if (view.getUint32(4, true) !== 2) throw new Error('not glTF 2.0');
  if (view.getUint32(8, true) !== bytes.byteLength) throw new Error('GLB length does not match');
  const jsonLength = view.getUint32(12, true);
  if (view.getUint32(16, true) !== CHUNK_JSON) throw new Error('first chunk is not JSON');
  const json: unknown = JSON.parse(new TextDecoder().decode(bytes.subarray(20, 20 + jsonLength)));
  const binStart = 20 + jsonLength;
  if (binStart + 8 > bytes.byteLength) return { json, bin: new Uint8Array() };
  const binLength = view.getUint32(binStart, true);
  if (view.getUint32(binStart + 4, true) !== CHUNK_BIN) throw new Error('second chunk is not BIN');
  return { json, bin: bytes.subarray(binStart + 8, binStart + 8 + binLength) };
}
