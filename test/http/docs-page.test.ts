import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import type { Browser } from 'puppeteer-core';
import { serveInChromium } from '../browser.ts';
import { createTestApp, type TestApp } from '../helpers.ts';

/**
 * GET /docs in real headless Chromium against the real app over HTTP: the page renders the API's
 * operations from its own origin only (no CDN script, no web fonts, no telemetry), so it works
 * with no internet.
 */

type OpenApiDocument = {
  info: { title: string; description: string };
  servers: { url: string }[];
  paths: Record<string, Record<string, { summary?: string; tags?: string[] }>>;
};

// What the page callbacks below touch in the browser (the test's own lib has no DOM types).
declare const document: { body: { innerText: string }; title: string; querySelector(selector: string): { getAttribute(name: string): string | null } | null };

const EXTERNAL = /cdn\.jsdelivr|unpkg\.com|cdnjs|@latest|fonts\.(googleapis|gstatic|scalar)\.com/;

let t: TestApp;
let origin: string;
let browser: Browser;
let stopBrowser: (() => Promise<void>) | undefined;

beforeAll(async () => {
  t = createTestApp();
  ({ origin, browser, close: stopBrowser } = await serveInChromium(t, 'docs-page'));
}, 30_000);

afterAll(async () => {
  await stopBrowser?.();
  await t?.close();
});

describe('GET /docs', () => {
  test('the page references only the API origin: its script is /docs/scalar.js at a pinned version, no CDN', async () => {
    const page = await fetch(`${origin}/docs`);
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(html).not.toMatch(EXTERNAL);
    expect(html).not.toMatch(/\bsrc="https?:/);
    const src = /<script src="([^"]+)"/.exec(html)?.[1];
    expect(src).toMatch(/^\/docs\/scalar\.js\?v=\d+\.\d+\.\d+$/);
    const configuration = /data-configuration='([^']*)'/.exec(html)?.[1];
    expect(JSON.parse(configuration ?? '{}')).toMatchObject({ withDefaultFonts: false, telemetry: false });

    const script = await fetch(`${origin}${src}`);
    expect(script.status).toBe(200);
    expect(script.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(script.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    expect((await script.arrayBuffer()).byteLength).toBeGreaterThan(100_000);
  });

  test('renders the operations of /openapi.json in headless Chromium with no request leaving the API origin', async () => {
    const spec = (await (await fetch(`${origin}/openapi.json`)).json()) as OpenApiDocument;
    const operations = Object.entries(spec.paths).flatMap(([path, methods]) => Object.values(methods).map((operation) => ({ path, ...operation })));
    const tags = [...new Set(operations.flatMap((operation) => operation.tags ?? []))];
    // The page opens on the first tag: its operations are listed by path in the body and by summary
    // in the sidebar; the other tags show as sidebar groups.
    const opened = operations.filter((operation) => operation.tags?.[0] === tags[0]);
    // The introduction (info.description, Markdown) is rendered above the operations.
    const introduction = ['Get an API key in two steps', 'Keyless prices (/v1)', 'Metering'];
    const expected = [
      ...tags,
      ...introduction,
      ...opened.map((operation) => operation.path),
      ...opened.flatMap((operation) => (operation.summary ? [operation.summary] : [])),
    ];
    expect(tags.length).toBeGreaterThanOrEqual(5);
    // The page's request samples use the document's server: this origin (no PUBLIC_BASE_URL here).
    expect(spec.servers).toEqual([expect.objectContaining({ url: origin })]);
    expect(opened.length).toBeGreaterThanOrEqual(3);

    const page = await browser.newPage();
    const requested: string[] = [];
    page.on('request', (request) => {
      requested.push(request.url());
    });
    // Chromium fires no request events for a WebSocket; record those too.
    const cdp = await page.createCDPSession();
    await cdp.send('Network.enable');
    cdp.on('Network.webSocketCreated', ({ url }) => requested.push(url));

    await page.setViewport({ width: 1400, height: 1000 });
    await page.goto(`${origin}/docs`, { waitUntil: 'load', timeout: 20_000 });
    // biome-ignore lint/performance/useDomNodeTextContent: innerText, not textContent: only rendered text counts, not script or style source nor hidden nodes
    const missing = () => page.evaluate((needles: string[]) => needles.filter((needle) => !document.body.innerText.includes(needle)), expected);
    await page
      // biome-ignore lint/performance/useDomNodeTextContent: innerText, not textContent: only rendered text counts, not script or style source nor hidden nodes
      .waitForFunction((needles: string[]) => needles.every((needle) => document.body.innerText.includes(needle)), { timeout: 20_000, polling: 100 }, expected)
      .catch(async (err: unknown) => {
        throw new Error(`/docs did not render ${JSON.stringify(await missing())}: ${String(err)}`);
      });
    // The title and the introduction's first paragraph (with quotes and an ampersand) survive as the
    // page's own text, not broken markup.
    const head = await page.evaluate(() => ({
      title: document.title,
      description: document.querySelector('meta[name="description"]')?.getAttribute('content'),
    }));
    const firstParagraph = spec.info.description.split('\n\n')[0]!;
    expect(firstParagraph).toMatch(/["&]/);
    expect(head).toEqual({ title: spec.info.title, description: firstParagraph });
    // Whatever the page fetches after rendering (lazy fonts, telemetry) counts too.
    await page.waitForNetworkIdle({ idleTime: 500, timeout: 10_000 });
    await page.close();

    const offOrigin = requested.filter((url) => !url.startsWith('data:') && !url.startsWith('blob:') && new URL(url).origin !== origin);
    expect(offOrigin).toEqual([]);
    expect(requested).toContain(`${origin}/openapi.json`);
  }, 60_000);
});
