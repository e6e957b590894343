// npm run bench:media — renders with a warm page pool (issue 12): a real `render` worker process
// (bun workers/main.ts render, RENDER_PAGES pages), renders of 512×384 PNG accepted through the API
// app in this process; throughput after warm-up, p50/p99 from accept to succeeded, worker RSS.
// The renders part also draws 2 000 item cards on the same warm pool (issue 31, bench/media-cards.ts;
// BENCH_CARD_RENDERS). Then the image endpoint (issue 31, bench/media-images.ts). BENCH_MEDIA_PARTS=renders|images runs one.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import puppeteer from 'puppeteer-core';
import { createApp } from '../api/app.ts';
import { createDeps } from '../api/deps.ts';
import { generateCatalog } from '../shared/catalog/generate.ts';
import { catalogIsLoaded, syncCatalog } from '../shared/catalog/repository.ts';
import { adminCreateKey } from '../shared/identity/admin.ts';
import { chromiumArgs } from '../shared/media/chromium.ts';
import { generateItemFiles } from '../shared/media/generate-item-files.ts';
import { createScene } from '../shared/media/scenes.ts';
import { parseSceneBody } from '../shared/media/scenes-model.ts';
import { parseConfig } from '../shared/platform/config.ts';
import { createLogger } from '../shared/platform/logger.ts';
import { startImageFake } from '../test/fakes/images/server.ts';
import { positiveInt, printChecks, repoRoot, runBench, say, sleep } from './lib.ts';
import { benchCardRenders, CARD_ITEM } from './media-cards.ts';
import { benchImages } from './media-images.ts';

const MEDIA_PARTS = process.env.BENCH_MEDIA_PARTS ?? 'renders,images';
async function imagesPart(): Promise<void> {
  const images = await benchImages();
  process.stdout.write(`${images.report}\n`);
  printChecks(images.checks);
}
if (!MEDIA_PARTS.includes('renders')) {
  await runBench(imagesPart);
  process.exit();
}

const RENDERS = positiveInt('BENCH_RENDERS', 80);
const VIEWER_LOADS = positiveInt('BENCH_VIEWER_LOADS', 10);
const WARMUP = positiveInt('BENCH_RENDER_WARMUP', 8);
const PAGES = positiveInt('RENDER_PAGES', 4);
// Item files of this run (docs/design.md §18): the M4A1-S's stand-in rifle marked as a real model, so it is
// drawn in 3D as every stand-in was before cards; the AK-47's left a stand-in, so it is drawn as a
// card. Images come from the local image fake (generated, distinct per path) through the image cache.
const itemFilesDir = mkdtempSync(join(tmpdir(), 'bench-media-items-'));
await generateItemFiles(itemFilesDir, { ids: { model: [60, 7], paint: [60], sticker: [], charm: [] } });
const rifle = join(itemFilesDir, 'models', '60.glb');
writeFileSync(rifle, Buffer.from(readFileSync(rifle).toString('latin1').replace('item-files stand-in', 'item-files bench-3d'), 'latin1'));
const imageFake = startImageFake();
const env = {
  ...process.env,
  QUEUE_PREFIX: `bench-media-${process.pid}`,
  LOG_LEVEL: 'warn',
  RENDER_PAGES: String(PAGES),
  ITEM_FILES_DIR: itemFilesDir,
  STEAM_IMAGE_URL: imageFake.url,
  ITEM_ASSETS_URL: imageFake.url,
};
const config = parseConfig(env);
const deps = createDeps(config, { log: createLogger({ level: 'silent', name: 'bench-media' }) });
const app = createApp(deps);
await deps.ready();
// Cards name the catalog item and find its image through it.
if (!(await catalogIsLoaded(deps.sql))) await syncCatalog(deps.sql, generateCatalog());

const worker = Bun.spawn(['bun', join(repoRoot, 'workers/main.ts'), 'render'], {
  env: { ...env, WORKER_METRICS_PORT: '0' },
  stdout: 'inherit',
  stderr: 'inherit',
});
const rssMb = () => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${worker.pid}/status`, 'utf8'))?.[1] ?? 0) / 1024;

// Budgets far above the run (a render costs 20 units), so metering never throttles the benchmark.
const [workspace] = await deps.sql<{ id: string }[]>`
  insert into workspaces (id, name, tier, minute_budget, day_budget) values (gen_random_uuid(), 'bench media', 'enterprise', 1000000, 100000000) returning id`;
const { key } = await adminCreateKey(deps.sql, { workspaceId: workspace!.id, label: 'bench', scopes: ['media:write', 'media:read'] });
const scene = await createScene(
  deps.sql,
  parseSceneBody({
    schema: 3,
    kind: 'service-viewer-scene',
    name: 'bench',
    presentation: { background: { type: 'transparent', value: null }, camera: { preset: 'inspect' }, quality: 'interactive' },
    chrome: { showControls: false, allowFullscreen: false, watermark: null },
  }),
  { workspaceId: workspace!.id, actor: { type: 'system', id: null }, requestId: 'bench', now: new Date() },
);

const headers = { 'x-api-key': key, 'content-type': 'application/json' };
let seed = 0;
async function accept(): Promise<{ id: string; acceptedAt: number }> {
  seed += 1;
  const body = {
    item: { item: { family: 'weapon', definition_index: 60 }, state: { paint_index: 60, paint_seed: seed, wear: 0.2 } },
    scene_id: scene.document.scene_id,
    output: { width: 512, height: 384, format: 'png', background: 'transparent' },
  };
  const response = await app.handle(
    new Request('http://bench/v2/renders', {
      method: 'POST',
      headers: { ...headers, 'idempotency-key': `bench-${process.pid}-${seed}` },
      body: JSON.stringify(body),
    }),
  );
  if (response.status !== 202) throw new Error(`POST /v2/renders answered ${response.status}: ${await response.text()}`);
  return { id: ((await response.json()) as { render_id: string }).render_id, acceptedAt: performance.now() };
}

/** Polls Postgres (not the API, whose metering would dominate) until every render has finished. */
async function finish(renders: { id: string; acceptedAt: number }[]): Promise<number[]> {
  const done = new Map<string, number>();
  const deadline = performance.now() + 300_000;
  while (done.size < renders.length) {
    if (performance.now() > deadline) throw new Error(`only ${done.size} of ${renders.length} renders finished in 5 minutes`);
    const rows = await deps.sql<{ render_id: string; state: string }[]>`
      select render_id, state from renders where render_id = any(${renders.map((render) => render.id)}::uuid[]) and state in ('succeeded', 'failed')`;
    const now = performance.now();
    for (const row of rows) {
      if (row.state === 'failed') throw new Error(`render ${row.render_id} failed`);
      if (!done.has(row.render_id)) done.set(row.render_id, now);
    }
    await sleep(10);
  }
  return renders.map((render) => done.get(render.id)! - render.acceptedAt);
}

/**
 * The viewer page (issue 12: time to `viewerReady` < 1.5 s): the API app listening on a free port,
 * one viewer session, and VIEWER_LOADS fresh tabs of headless Chromium, each timed from navigation
 * start to `window.viewerReady`. The first load is reported apart (it bundles the page's script).
 */
async function viewerReadyTimes(): Promise<void> {
  const server = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: (request) => app.handle(request) });
  const profileDir = mkdtempSync(join(tmpdir(), 'bench-viewer-'));
  const browser = await puppeteer.launch({
    executablePath: config.CHROMIUM_PATH,
    args: chromiumArgs(profileDir),
  });
  try {
    const origin = `http://127.0.0.1:${server.port}`;
    const response = await fetch(`${origin}/v2/viewer/sessions`, {
      method: 'POST',
      headers,
      body: JSON.stringify({
        item: { item: { family: 'weapon', definition_index: 60 }, state: { paint_index: 60, paint_seed: 7, wear: 0.2 } },
        scene_id: scene.document.scene_id,
      }),
    });
    if (response.status !== 201) throw new Error(`POST /v2/viewer/sessions answered ${response.status}: ${await response.text()}`);
    const { url } = (await response.json()) as { url: string };
    const path = new URL(url).pathname;
    const times: number[] = [];
    for (let load = 0; load < VIEWER_LOADS + 1; load += 1) {
      const page = await browser.newPage();
      await page.setViewport({ width: 800, height: 500 });
      const started = performance.now();
      await page.goto(`${origin}${path}`);
      await page.waitForFunction('window.viewerReady === true || window.viewerError !== undefined', { timeout: 30_000 });
      times.push(performance.now() - started);
      await page.close();
    }
    const [first, ...warm] = times as [number, ...number[]];
    say(
      `viewer page 800x500, time to viewerReady: first load ${first.toFixed(0)} ms (bundles the script), then ${VIEWER_LOADS} loads ` +
        `p50 ${percentile(warm, 50).toFixed(0)} ms, p95 ${percentile(warm, 95).toFixed(0)} ms, max ${Math.max(...warm).toFixed(0)} ms (target < 1500)`,
    );
  } finally {
    await browser.close();
    server.stop(true);
    rmSync(profileDir, { recursive: true, force: true });
  }
}

const percentile = (values: number[], p: number) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor((p / 100) * values.length))]!;
try {
  say(`render worker pid ${worker.pid}, RENDER_PAGES=${PAGES}; warm-up: ${WARMUP} renders (launches Chromium, bundles the viewer, opens the pages)`);
  const warmStart = performance.now();
  await finish(await Promise.all(Array.from({ length: WARMUP }, accept)));
  say(`warm-up done in ${((performance.now() - warmStart) / 1000).toFixed(1)} s; RSS ${rssMb().toFixed(0)} MB`);

  let peakRss = rssMb();
  const sampler = setInterval(() => (peakRss = Math.max(peakRss, rssMb())), 100);
  const started = performance.now();
  const renders = await Promise.all(Array.from({ length: RENDERS }, accept));
  const latencies = await finish(renders);
  const seconds = (performance.now() - started) / 1000;
  clearInterval(sampler);
  say(`${RENDERS} renders 512x384 PNG in ${seconds.toFixed(2)} s: ${(RENDERS / seconds).toFixed(2)} PNG/s (target >= 4)`);
  say(
    `accept -> succeeded: p50 ${percentile(latencies, 50).toFixed(0)} ms, p99 ${percentile(latencies, 99).toFixed(0)} ms (all ${RENDERS} accepted at once, so latency includes queueing)`,
  );
  say(`render worker RSS (bun process; Chromium's own processes not included): ${rssMb().toFixed(0)} MB now, ${peakRss.toFixed(0)} MB peak`);
  await viewerReadyTimes();
  // docs/design.md §18: item cards on the same warm pool.
  let cardSeed = 0;
  const cardChecks = await benchCardRenders({
    sql: deps.sql,
    workspaceId: workspace!.id,
    workerPid: worker.pid,
    accept: async (index) => {
      // Each render its own StatTrak count: a distinct request drawing the same images, as a showcase of one item would.
      const body = {
        item: { ...CARD_ITEM, state: { ...CARD_ITEM.state, stattrak: { value: index } } },
        scene_id: scene.document.scene_id,
        output: { width: 512, height: 384, format: 'png', background: '#1d232b' },
      };
      const response = await app.handle(
        new Request('http://bench/v2/renders', {
          method: 'POST',
          headers: { ...headers, 'idempotency-key': `bench-card-${process.pid}-${(cardSeed += 1)}` },
          body: JSON.stringify(body),
        }),
      );
      if (response.status !== 202 && response.status !== 200) throw new Error(`POST /v2/renders answered ${response.status}: ${await response.text()}`);
      return ((await response.json()) as { render_id: string }).render_id;
    },
  });
  printChecks(cardChecks);
} finally {
  worker.kill('SIGTERM');
  await worker.exited;
  await deps.sql`delete from workspaces where id = ${workspace!.id}`.catch(() => undefined);
  await deps.close();
  await imageFake.stop();
  rmSync(itemFilesDir, { recursive: true, force: true });
}
// The image part once the render worker has stopped, so it has the machine to itself.
if (MEDIA_PARTS.includes('images')) await runBench(imagesPart);
