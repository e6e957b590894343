import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import {
  type FetchItemFilesOptions,
  type FetchSummary,
  type FetchTask,
  fetchItemFiles,
  formatProgress,
  formatSummary,
  itemFilesFetchPlan,
} from '../../shared/media/fetch-item-files.ts';
import { generateItemFiles } from '../../shared/media/generate-item-files.ts';
import { parseGlb } from '../../shared/media/glb.ts';
import { itemFilesStatus, modelSource, renderModeFor } from '../../shared/media/item-files.ts';
import { fetchedItemFile, readItemFilesSource } from '../../shared/media/item-files-source.ts';
import { expectedColourOf, FAKE_TEXTURE_SIZE, type ImageFake, startImageFake } from '../fakes/images/server.ts';

/**
 * docs/design.md §18 `npm run item-files:fetch` against the local image fake (its own, for faults): two
 * definitions (a Zeus and a Dual Berettas: 2 models, 14 paint textures) keep each run under a second.
 */

const DEFINITIONS = [31, 28];
let fake: ImageFake;
const dirs: string[] = [];

beforeAll(() => {
  fake = startImageFake();
});
afterAll(async () => {
  await fake.stop();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

function freshDir(): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'item-files-fetch-'));
  dirs.push(dir);
  return dir;
}

function run(dir: string, options: Partial<FetchItemFilesOptions> = {}): Promise<FetchSummary> {
  return fetchItemFiles({ dir, assetsUrl: fake.url, definitions: DEFINITIONS, retries: 0, timeoutMs: 5_000, ...options });
}

/** Paths the fake was asked for from `from` on (its log index). */
function requestedSince(from: number): string[] {
  return fake.requests.slice(from).map((request) => request.path);
}

const plan = itemFilesFetchPlan('/unused', { definitions: DEFINITIONS });
const models = plan.tasks.filter((task) => task.kind === 'model');
const paints = plan.tasks.filter((task) => task.kind === 'paint');

/** Every file in the folders is whole: no temporary file, every GLB parses, every PNG decodes, each one recorded unchanged. */
async function expectNothingPartial(dir: string): Promise<void> {
  const manifest = readItemFilesSource(dir);
  for (const folder of ['models', 'paints']) {
    const names = existsSync(path.join(dir, folder)) ? readdirSync(path.join(dir, folder)) : [];
    for (const name of names) {
      expect(name).toMatch(/^\d+\.(glb|png)$/);
      const bytes = readFileSync(path.join(dir, folder, name));
      if (name.endsWith('.glb')) expect((parseGlb(new Uint8Array(bytes)).json as { asset: { version: string } }).asset.version).toBe('2.0');
      else expect((await sharp(bytes).metadata()).format).toBe('png');
      const entry = manifest.files[`${folder}/${name}`];
      expect(entry?.bytes).toBe(bytes.byteLength);
      expect(entry?.sha256).toBe(createHash('sha256').update(bytes).digest('hex'));
    }
  }
}

function fileOf(dir: string, task: FetchTask): string {
  return path.join(dir, task.key);
}

describe('npm run item-files:fetch', () => {
  test('plans every weapon model cs2-lib has and the textures of their paints; knives and gloves have no model in the library', () => {
    const all = itemFilesFetchPlan('/unused');
    const modelIds = all.tasks.filter((task) => task.kind === 'model').map((task) => task.id);
    expect(modelIds).toContain(7); // AK-47
    expect(modelIds.length).toBeGreaterThanOrEqual(30);
    expect(all.unavailable.models).toContain(500); // Bayonet: cs2-lib 7 ships no knife models
    expect(all.unavailable.models).toContain(5030); // Sport Gloves
    expect(all.tasks.filter((task) => task.kind === 'paint').length).toBeGreaterThan(500);
    for (const task of all.tasks) {
      expect(task.upstream).toMatch(task.kind === 'model' ? /^\/models\/[0-9a-f]{64}\.glb$/ : /^\/textures\/[0-9a-f]{64}\.webp$/);
      expect(task.key).toBe(task.kind === 'model' ? `models/${task.id}.glb` : `paints/${task.id}.png`);
    }
    expect(models.map((task) => task.id).sort()).toEqual([28, 31]);
    expect(paints.length).toBe(14);
  });

  test('writes models/<definition>.glb and paints/<paint>.png from ITEM_ASSETS_URL, valid, recorded in .source.json; a second run fetches nothing', async () => {
    const dir = freshDir();
    const from = fake.requests.length;
    const summary = await run(dir);
    expect(summary).toMatchObject({ total: 16, fetched: 16, skipped: 0, failed: 0, notAttempted: 0, stopped: null });
    expect(summary.byKind).toEqual({ model: { fetched: 2, skipped: 0, failed: 0 }, paint: { fetched: 14, skipped: 0, failed: 0 } });
    // Only the configured host, once per file, at cs2-lib's own paths.
    expect(requestedSince(from).sort()).toEqual(plan.tasks.map((task) => task.upstream).sort());

    for (const task of models) {
      const bytes = new Uint8Array(readFileSync(fileOf(dir, task)));
      expect((parseGlb(bytes).json as { asset: { version: string } }).asset.version).toBe('2.0');
      const served = new Uint8Array(await (await fetch(`${fake.url}${task.upstream}`)).arrayBuffer());
      expect(Buffer.from(bytes).equals(Buffer.from(served))).toBe(true); // a model is stored as served
    }
    for (const task of paints) {
      // The WebP texture converted to PNG, pixels unchanged (the fake's body colour at its centre).
      const image = sharp(readFileSync(fileOf(dir, task)));
      const { format, width, height } = await image.metadata();
      expect({ format, width, height }).toEqual({ format: 'png', width: FAKE_TEXTURE_SIZE, height: FAKE_TEXTURE_SIZE });
      const { data } = await image.ensureAlpha().raw().toBuffer({ resolveWithObject: true });
      const at = (Math.floor(0.4 * FAKE_TEXTURE_SIZE) * FAKE_TEXTURE_SIZE + FAKE_TEXTURE_SIZE / 2) * 4;
      expect([data[at], data[at + 1], data[at + 2], data[at + 3]]).toEqual([...expectedColourOf(task.upstream).primary, 255]);
    }

    const manifest = readItemFilesSource(dir);
    expect(Object.keys(manifest.files).sort()).toEqual(plan.tasks.map((task) => task.key).sort());
    const entry = fetchedItemFile(dir, 'model', 31)!;
    expect(entry).toMatchObject({
      source: 'cs2-lib',
      upstream: models.find((task) => task.id === 31)!.upstream,
      bytes: statSync(path.join(dir, 'models/31.glb')).size,
    });
    expect(entry.url).toBe(`${fake.url}${entry.upstream}`);
    expect(fetchedItemFile(dir, 'model', 7)).toBeNull(); // not fetched
    expect(itemFilesStatus(dir).counts).toMatchObject({ models: 2, paints: 14 });
    await expectNothingPartial(dir);

    const again = fake.requests.length;
    const second = await run(dir);
    expect(second).toMatchObject({ fetched: 0, skipped: 16, failed: 0 });
    expect(requestedSince(again)).toEqual([]);
  });

  test('replaces generated stand-ins (real files win), keeps them with keepExisting, and refetches a recorded file that changed on disk', async () => {
    const dir = freshDir();
    const paint = paints[0]!;
    await generateItemFiles(dir, { ids: { model: [31], paint: [paint.id], sticker: [], charm: [] } });
    const standIn = readFileSync(path.join(dir, 'models/31.glb'));
    expect(renderModeFor(dir, 31)).toBe('card'); // a stand-in is drawn as a card (docs/design.md §18)

    const kept = await run(dir, { keepExisting: true });
    expect(kept).toMatchObject({ fetched: 14, skipped: 2, failed: 0 });
    expect(readFileSync(path.join(dir, 'models/31.glb')).equals(standIn)).toBe(true);
    expect(fetchedItemFile(dir, 'model', 31)).toBeNull();

    const replaced = await run(dir);
    expect(replaced).toMatchObject({ fetched: 2, skipped: 14, failed: 0 });
    expect(readFileSync(path.join(dir, 'models/31.glb')).equals(standIn)).toBe(false);
    expect(modelSource(dir, 31)).toBe('real');
    expect(renderModeFor(dir, 31)).toBe('3d'); // the fetched model wins over the card
    expect(fetchedItemFile(dir, 'model', 31)).not.toBeNull();
    expect(fetchedItemFile(dir, 'paint', paint.id)).not.toBeNull();

    // Someone overwrote a fetched file: its size no longer matches the record, so it is fetched again.
    await Bun.write(path.join(dir, paint.key), 'not the texture');
    expect(fetchedItemFile(dir, 'paint', paint.id)).toBeNull();
    const from = fake.requests.length;
    expect(await run(dir)).toMatchObject({ fetched: 1, skipped: 15 });
    expect(requestedSince(from)).toEqual([paint.upstream]);
    await expectNothingPartial(dir);
  });

  test('counts a 404, a 500 (retried), a body that is not an image or not a GLB, one over the per-file cap and a timeout as failed, fetches the rest, leaves nothing of them; a re-run fetches only those', async () => {
    const dir = freshDir();
    const [notFound, serverError, notImage, huge, slow] = paints;
    const brokenModel = models[0]!;
    fake.fault(notFound!.upstream, 'not_found');
    fake.fault(serverError!.upstream, 'error');
    fake.fault(notImage!.upstream, 'not_image');
    fake.fault(huge!.upstream, 'huge');
    fake.fault(slow!.upstream, 'slow');
    fake.fault(brokenModel.upstream, 'not_image');
    const from = fake.requests.length;
    let summary: FetchSummary;
    try {
      summary = await run(dir, { retries: 1, timeoutMs: 1_000, maxFileBytes: 1024 * 1024 });
    } finally {
      fake.clearFaults();
    }
    expect(summary).toMatchObject({ total: 16, fetched: 10, skipped: 0, failed: 6, notAttempted: 0, stopped: null });
    expect(summary.byKind.model).toEqual({ fetched: 1, skipped: 0, failed: 1 });
    const reasons = Object.fromEntries(summary.failures.map((failure) => [failure.file, failure.reason]));
    expect(reasons[notFound!.key]).toBe('HTTP 404');
    expect(reasons[serverError!.key]).toBe('HTTP 500 after 2 attempts');
    expect(reasons[notImage!.key]).toStartWith('not an image');
    expect(reasons[huge!.key]).toStartWith('larger than the per-file cap');
    expect(reasons[slow!.key]).toBe('timed out after 1000 ms');
    expect(reasons[brokenModel.key]).toStartWith('not a GLB model');
    const requested = requestedSince(from);
    expect(requested.filter((p) => p === serverError!.upstream).length).toBe(2); // 5xx: retried
    expect(requested.filter((p) => p === notFound!.upstream).length).toBe(1); // 4xx: not retried
    for (const task of [notFound, serverError, notImage, huge, slow, brokenModel]) expect(existsSync(fileOf(dir, task!))).toBe(false);
    await expectNothingPartial(dir);
    expect(formatSummary(summary)).toContain('10 fetched, 0 skipped, 6 failed');
    expect(formatSummary(summary)).toContain(`failed ${serverError!.key}: HTTP 500 after 2 attempts`);

    const again = fake.requests.length;
    const second = await run(dir);
    expect(second).toMatchObject({ fetched: 6, skipped: 10, failed: 0 });
    expect(requestedSince(again).sort()).toEqual([notFound, serverError, notImage, huge, slow, brokenModel].map((task) => task!.upstream).sort());
    await expectNothingPartial(dir);
  });

  test('an interruption mid-run drops the download in flight, leaves no partial file, and a re-run fetches only what is missing', async () => {
    const dir = freshDir();
    const stuck = paints[6]!;
    fake.fault(stuck.upstream, 'slow');
    const interrupt = new AbortController();
    const from = fake.requests.length;
    const running = run(dir, { concurrency: 2, signal: interrupt.signal, timeoutMs: 20_000 });
    // Interrupt while the stuck texture is being downloaded (the fake holds it for 30 s).
    const deadline = Date.now() + 10_000;
    while (!fake.requests.slice(from).some((request) => request.path === stuck.upstream) && Date.now() < deadline) await Bun.sleep(5);
    interrupt.abort();
    let summary: FetchSummary;
    try {
      summary = await running;
    } finally {
      fake.clearFaults();
    }
    expect(summary.stopped).toBe('interrupted');
    expect(summary.failed).toBe(0); // an interrupted download is not a failure
    expect(summary.notAttempted).toBeGreaterThan(0);
    expect(summary.fetched + summary.notAttempted).toBe(16);
    expect(existsSync(fileOf(dir, stuck))).toBe(false);
    expect(existsSync(path.join(dir, '.fetch.lock'))).toBe(false);
    await expectNothingPartial(dir);
    expect(Object.keys(readItemFilesSource(dir).files).length).toBe(summary.fetched);
    expect(formatSummary(summary)).toContain('interrupted: run again to continue');

    const present = new Set(plan.tasks.filter((task) => existsSync(fileOf(dir, task))).map((task) => task.upstream));
    const again = fake.requests.length;
    const second = await run(dir);
    expect(second).toMatchObject({ fetched: summary.notAttempted, skipped: summary.fetched, failed: 0, stopped: null });
    expect(requestedSince(again).sort()).toEqual(
      plan.tasks
        .map((task) => task.upstream)
        .filter((upstream) => !present.has(upstream))
        .sort(),
    );
    await expectNothingPartial(dir);
  });

  test('the byte cap stops the run cleanly with a summary, never past the cap; a re-run with room continues', async () => {
    const full = await run(freshDir());
    const dir = freshDir();
    const cap = Math.floor(full.bytesReceived / 2);
    const summary = await run(dir, { maxBytes: cap, concurrency: 1 });
    expect(summary.stopped).toBe('max-bytes');
    expect(summary.bytesReceived).toBeLessThanOrEqual(cap);
    expect(summary.failed).toBe(0);
    expect(summary.fetched).toBeGreaterThan(0);
    expect(summary.fetched + summary.notAttempted).toBe(16);
    await expectNothingPartial(dir);
    expect(formatSummary(summary)).toContain('stopped at the byte cap (--max-bytes)');

    const second = await run(dir);
    expect(second).toMatchObject({ fetched: summary.notAttempted, skipped: summary.fetched, failed: 0, stopped: null });
    await expectNothingPartial(dir);
  });

  test('a chunked body without Content-Length is held to the byte cap while it streams', async () => {
    // The 'huge' fault streams 50 MB with no length: the run stops at the cap, not at the end of the body.
    const dir = freshDir();
    fake.fault(models[0]!.upstream, 'huge');
    let summary: FetchSummary;
    try {
      summary = await run(dir, { maxBytes: 2 * 1024 * 1024, kinds: ['model'], concurrency: 1 });
    } finally {
      fake.clearFaults();
    }
    expect(summary.stopped).toBe('max-bytes');
    expect(summary.bytesReceived).toBeLessThanOrEqual(2 * 1024 * 1024);
    expect(summary.fetched).toBe(0);
    await expectNothingPartial(dir);
  });

  test('the command: plain summary and exit status 1 with a failure, JSON with --json; never run by npm start or the test runner', async () => {
    const dir = freshDir();
    const missing = itemFilesFetchPlan(dir, { definitions: [31], kinds: ['paint'] }).tasks[0]!;
    fake.fault(missing.upstream, 'not_found');
    const cli = (args: string[]) =>
      Bun.spawn([process.execPath, 'scripts/item-files-fetch.ts', '--definitions', '31', ...args], {
        env: { ...process.env, ITEM_FILES_DIR: dir, ITEM_ASSETS_URL: fake.url, LOG_LEVEL: 'silent' },
        stdout: 'pipe',
        stderr: 'pipe',
      });
    let failed: ReturnType<typeof cli>;
    try {
      failed = cli(['--retries', '0']);
      expect(await failed.exited).toBe(1);
    } finally {
      fake.clearFaults();
    }
    const text = await new Response(failed.stdout).text();
    expect(text).toContain('item files: 4 fetched, 0 skipped, 1 failed of 5');
    expect(text).toContain(`failed ${missing.key}: HTTP 404`);

    const json = cli(['--json']);
    expect(await json.exited).toBe(0);
    expect(JSON.parse(await new Response(json.stdout).text())).toMatchObject({ total: 5, fetched: 1, skipped: 4, failed: 0 });

    const bad = cli(['--max-bytes', 'lots']);
    expect(await bad.exited).toBe(2);
    expect(await new Response(bad.stderr).text()).toContain('--max-bytes must be a number of bytes');

    const packageJson = JSON.parse(readFileSync('package.json', 'utf8')) as { scripts: Record<string, string> };
    expect(packageJson.scripts['item-files:fetch']).toBe('bun scripts/item-files-fetch.ts');
    expect(readFileSync('scripts/dev.ts', 'utf8')).not.toContain('item-files-fetch');
  });

  test('progress: a bar on a terminal, plain words otherwise', () => {
    const progress = { total: 20, done: 5, fetched: 3, skipped: 1, failed: 1, bytesReceived: 3 * 1024 * 1024, maxBytes: 4 * 1024 ** 3, ms: 2_000 };
    // The bar takes what the counts leave of the line, and the line never wraps (columns − 1 at most).
    expect(formatProgress(progress, 80)).toBe('[########------------------------]  25% 5/20 files, 1 failed, 3.0 MiB 1.5 MiB/s');
    expect(formatProgress(progress, 60)).toBe('[###---------]  25% 5/20 files, 1 failed, 3.0 MiB 1.5 MiB/s');
    expect(formatProgress(progress, 40)).toBe('[###-------]  25% 5/20 files, 1 failed,');
    expect(formatProgress(progress)).toBe('item files: 5/20 files (3 fetched, 1 skipped, 1 failed) 3.0 MiB 1.5 MiB/s');
  });
});
