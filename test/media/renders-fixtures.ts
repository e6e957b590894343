import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createScene } from '../../shared/media/scenes.ts';
import type { SceneBody } from '../../shared/media/scenes-model.ts';
import type { Sql } from '../../shared/platform/db.ts';

/**
 * Fixtures of the render suites: an ITEM_FILES_DIR holding one real glTF binary (a cube, written
 * here so the suites do not depend on the stand-in generator), a scene, and a valid item of it.
 */
export const AK47 = 7;
export const ITEM = { item: { family: 'weapon', definition_index: AK47 }, state: { paint_index: 44, paint_seed: 321, wear: 0.15 } };

/** A unit cube as a GLB (glTF 2.0 binary): positions, normals and indices in one buffer, one material. */
export function cubeGlb(): Uint8Array {
  const faces: [number[], number[]][] = [
    [
      [1, 0, 0],
      [1, -1, -1, 1, 1, -1, 1, 1, 1, 1, -1, 1],
    ],
    [
      [-1, 0, 0],
      [-1, -1, 1, -1, 1, 1, -1, 1, -1, -1, -1, -1],
    ],
    [
      [0, 1, 0],
      [-1, 1, -1, -1, 1, 1, 1, 1, 1, 1, 1, -1],
    ],
    [
      [0, -1, 0],
      [-1, -1, 1, -1, -1, -1, 1, -1, -1, 1, -1, 1],
    ],
    [
      [0, 0, 1],
      [-1, -1, 1, 1, -1, 1, 1, 1, 1, -1, 1, 1],
    ],
    [
      [0, 0, -1],
      [1, -1, -1, -1, -1, -1, -1, 1, -1, 1, 1, -1],
    ],
  ];
  const positions = new Float32Array(faces.flatMap(([, corners]) => corners.map((value) => value * 0.5)));
  const normals = new Float32Array(faces.flatMap(([normal]) => [...normal, ...normal, ...normal, ...normal]));
  const indices = new Uint16Array(faces.flatMap((_, face) => [0, 1, 2, 0, 2, 3].map((corner) => face * 4 + corner)));
  const bin = new Uint8Array(positions.byteLength + normals.byteLength + indices.byteLength);
  bin.set(new Uint8Array(positions.buffer), 0);
  bin.set(new Uint8Array(normals.buffer), positions.byteLength);
  bin.set(new Uint8Array(indices.buffer), positions.byteLength + normals.byteLength);
  const json = {
    asset: { version: '2.0' },
    scene: 0,
    scenes: [{ nodes: [0] }],
    nodes: [{ mesh: 0, name: 'body' }],
    materials: [{ pbrMetallicRoughness: { baseColorFactor: [0.8, 0.3, 0.1, 1], metallicFactor: 0.1, roughnessFactor: 0.6 } }],
    meshes: [{ primitives: [{ attributes: { POSITION: 0, NORMAL: 1 }, indices: 2, material: 0 }] }],
    buffers: [{ byteLength: bin.byteLength }],
    bufferViews: [
      { buffer: 0, byteOffset: 0, byteLength: positions.byteLength, target: 34962 },
      { buffer: 0, byteOffset: positions.byteLength, byteLength: normals.byteLength, target: 34962 },
      { buffer: 0, byteOffset: positions.byteLength + normals.byteLength, byteLength: indices.byteLength, target: 34963 },
    ],
    accessors: [
      { bufferView: 0, componentType: 5126, count: 24, type: 'VEC3', min: [-0.5, -0.5, -0.5], max: [0.5, 0.5, 0.5] },
      { bufferView: 1, componentType: 5126, count: 24, type: 'VEC3' },
      { bufferView: 2, componentType: 5123, count: 36, type: 'SCALAR' },
    ],
  };
  const pad = (bytes: Uint8Array, fill: number) => {
    const padded = new Uint8Array(Math.ceil(bytes.byteLength / 4) * 4).fill(fill);
    padded.set(bytes);
    return padded;
  };
  const jsonChunk = pad(new TextEncoder().encode(JSON.stringify(json)), 0x20);
  const binChunk = pad(bin, 0);
  const total = 12 + 8 + jsonChunk.byteLength + 8 + binChunk.byteLength;
  const out = new Uint8Array(total);
  const view = new DataView(out.buffer);
  view.setUint32(0, 0x46546c67, true); // "glTF"
  view.setUint32(4, 2, true);
  view.setUint32(8, total, true);
  view.setUint32(12, jsonChunk.byteLength, true);
  view.setUint32(16, 0x4e4f534a, true); // "JSON"
  out.set(jsonChunk, 20);
  const binAt = 20 + jsonChunk.byteLength;
  view.setUint32(binAt, binChunk.byteLength, true);
  view.setUint32(binAt + 4, 0x004e4942, true); // "BIN\0"
  out.set(binChunk, binAt + 8);
  return out;
}

/** A scratch ITEM_FILES_DIR with a model for the AK-47 only (other definitions have none). */
export function itemFilesDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'render-item-files-'));
  mkdirSync(join(dir, 'models'));
  writeFileSync(join(dir, 'models', `${AK47}.glb`), cubeGlb());
  return dir;
}

export const SCENE_BODY: SceneBody = {
  schema: 3,
  kind: 'service-viewer-scene',
  name: 'Render test',
  presentation: {
    background: { type: 'color', value: '#202830' },
    camera: { preset: 'inspect', fov: 45, autoRotate: false },
    quality: 'draft',
    lighting: 'studio',
  },
  chrome: { showControls: false, allowFullscreen: false, watermark: null },
};

export async function sceneOf(sql: Sql, workspaceId: string, body: SceneBody = SCENE_BODY) {
  return createScene(sql, body, { workspaceId, actor: { type: 'system', id: null }, requestId: 'test', now: new Date() });
}
