import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'puppeteer-core';
import { chromiumArgs } from '../../shared/media/chromium.ts';
import {
  itemFileResponseForPath,
  VIEWER_ASSETS_PATH,
  VIEWER_FILES_PATH,
  VIEWER_IMAGES_PATH,
  VIEWER_PAGE_HEADERS,
  type ViewerPixels,
  type ViewerRenderRequest,
  viewerAssetResponse,
  viewerRenderPoolHtml,
} from '../../shared/media/viewer/index.ts';
import type { Logger } from '../../shared/platform/logger.ts';
import type { DrawnPixels } from './image.ts';

/**
 * The render pool's browser (docs/design.md §10): one Chromium with at most `pages` warm pages. Each page
 * loads the viewer's pool page once from a private server on 127.0.0.1 inside this process (a worker
 * must not need the API to be up) and then draws render after render through
 * `window.renderViewerItem`, without navigating: the script, the WebGL context, its compiled shaders
 * and the parsed item files stay in the page. The pixels are read from the canvas itself
 * (`window.readViewerPixels`), alpha included, rather than from a page screenshot.
 *
 * A crashed or killed browser is noticed through `disconnected`: its pages are dropped, the renders
 * on them fail with BrowserCrashedError (the caller retries), and the next render launches a new one.
 */
export class BrowserCrashedError extends Error {
  constructor() {
    super('the browser crashed or was closed during the render');
  }
}

/**
 * The viewer page reported an error (a file it could not load or draw). `code` names a failure the
 * render reports as its own (docs/design.md §18: `item_image_unavailable`, which a later attempt may not meet).
 */
export class ViewerPageError extends Error {
  constructor(
    message: string,
    readonly code: string | null = null,
  ) {
    super(message);
  }
}

export type RenderEngineOptions = {
  chromiumPath: string;
  pages: number;
  itemFilesDir: string;
  timeoutMs: number;
  log: Logger;
  /** docs/design.md §18: the item card's images (`/viewer/images/…`, shared/media/viewer/images.ts) for the pool pages. */
  images?: (path: string, search: URLSearchParams) => Promise<Response>;
};

type Generation = { browser: Browser; profileDir: string; idle: Page[]; crashed: boolean };

// The window fields the viewer's pool page sets (shared/media/viewer/client.ts); this worker has no DOM types.
declare const window: {
  renderViewerItem?: (request: ViewerRenderRequest) => Promise<{ error: string | null; code?: string }>;
  readViewerPixels?: () => Promise<ViewerPixels | null>;
};

const POOL_PAGE_PATH = '/render/pool';

/** `promise`, or a rejection after `ms` (puppeteer's evaluate has no timeout of its own). */
function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} took longer than ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

export class RenderEngine {
  private generation: Generation | null = null;
  private launching: Promise<Generation> | null = null;
  private server: ReturnType<typeof Bun.serve> | null = null;
  private busy = 0;
  private readonly waiting: (() => void)[] = [];
  private closed = false;
  /** Browsers launched so far (the first one included): tests and logs read it. */
  launches = 0;

  constructor(private readonly options: RenderEngineOptions) {}

  /** The private server: the pool page, plus the viewer's script, item files and card images. */
  private origin(): string {
    this.server ??= Bun.serve({
      hostname: '127.0.0.1',
      port: 0,
      fetch: async (request) => {
        const url = new URL(request.url);
        const path = url.pathname;
        if (path.startsWith(`${VIEWER_IMAGES_PATH}/`) && this.options.images) return this.options.images(path, url.searchParams);
        if (path === POOL_PAGE_PATH) return new Response(await viewerRenderPoolHtml(), { headers: VIEWER_PAGE_HEADERS });
        if (path.startsWith(`${VIEWER_ASSETS_PATH}/`)) return viewerAssetResponse(path);
        if (path.startsWith(`${VIEWER_FILES_PATH}/`))
          return itemFileResponseForPath(this.options.itemFilesDir, path) ?? new Response('Not found', { status: 404 });
        return new Response('Not found', { status: 404 });
      },
    });
    return `http://127.0.0.1:${this.server.port}`;
  }

  private async launch(): Promise<Generation> {
    const profileDir = mkdtempSync(join(tmpdir(), 'render-chromium-'));
    // Loaded at the first launch: a process hosting the render pool among others (npm start) but
    // never rendering does not carry puppeteer-core (~10 MB of RSS).
    const { default: puppeteer } = await import('puppeteer-core');
    const browser = await puppeteer.launch({
      executablePath: this.options.chromiumPath,
      // Our own shutdown closes the browser; puppeteer still kills it if the process exits first.
      handleSIGINT: false,
      handleSIGTERM: false,
      handleSIGHUP: false,
      // Several pages draw at once and only one can be in front: keep the others from being
      // throttled as background tabs (their frames and timers would stall until the timeout).
      args: chromiumArgs(profileDir, ['--disable-background-timer-throttling', '--disable-renderer-backgrounding', '--disable-backgrounding-occluded-windows']),
    });
    this.launches += 1;
    const generation: Generation = { browser, profileDir, idle: [], crashed: false };
    browser.on('disconnected', () => {
      generation.crashed = true;
      generation.idle.length = 0;
      if (this.generation === generation) this.generation = null;
      rmSync(profileDir, { recursive: true, force: true });
      if (!this.closed) this.options.log.warn({ pid: browser.process()?.pid }, 'chromium disconnected; the next render launches a new one');
    });
    this.options.log.info({ pid: browser.process()?.pid, launches: this.launches }, 'chromium launched');
    return generation;
  }

  private async current(): Promise<Generation> {
    if (this.closed) throw new Error('the render engine is closed');
    if (this.generation && !this.generation.crashed) return this.generation;
    this.launching ??= this.launch().finally(() => {
      this.launching = null;
    });
    const generation = await this.launching;
    this.generation = generation;
    return generation;
  }

  /**
   * A pool page, loaded and ready to draw. Each page in a window of its own: tabs of one window are
   * hidden behind the front one, and a hidden page gets no animation frames, so the viewer would
   * never present its frame.
   */
  private async newPage(generation: Generation): Promise<Page> {
    const page = await generation.browser.newPage({ type: 'window' });
    try {
      await page.goto(`${this.origin()}${POOL_PAGE_PATH}`, { waitUntil: 'domcontentloaded', timeout: this.options.timeoutMs });
      await page.waitForFunction(() => typeof window.renderViewerItem === 'function', { timeout: this.options.timeoutMs, polling: 25 });
      return page;
    } catch (error) {
      await page.close().catch(() => undefined);
      throw error;
    }
  }

  /** The browser's process id (tests kill it to prove recovery). */
  async browserPid(): Promise<number | undefined> {
    return (await this.current()).browser.process()?.pid;
  }

  private async slot(): Promise<void> {
    if (this.busy < this.options.pages) {
      this.busy += 1;
      return;
    }
    await new Promise<void>((resolve) => this.waiting.push(resolve));
  }

  private release(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.busy -= 1;
  }

  /** Launches the browser and opens its pages ahead of the first job (a warm pool). */
  async warm(): Promise<void> {
    const generation = await this.current();
    while (generation.idle.length < this.options.pages) generation.idle.push(await this.newPage(generation));
  }

  /**
   * Draws one item (a viewer render request) at exactly width × height pixels, device pixel ratio
   * 1, on a warm pool page, and returns the canvas' pixels (transparent where nothing was drawn).
   */
  async render(request: ViewerRenderRequest): Promise<DrawnPixels> {
    await this.slot();
    let generation: Generation | null = null;
    let page: Page | null = null;
    try {
      generation = await this.current();
      page = generation.idle.pop() ?? (await this.newPage(generation));
      // No viewport to match: the page sizes its canvas' drawing buffer, and the pixels come from there.
      const { width, height } = request;
      const drawn = await withTimeout(
        page.evaluate((item) => window.renderViewerItem!(item), request),
        this.options.timeoutMs,
        'drawing the item',
      );
      if (drawn.error) throw new ViewerPageError(`the viewer page failed: ${drawn.error}`, drawn.code ?? null);
      const pixels = await withTimeout(
        page.evaluate(() => window.readViewerPixels!()),
        this.options.timeoutMs,
        'reading the pixels',
      );
      if (!pixels || pixels.width !== width || pixels.height !== height)
        throw new ViewerPageError(`the viewer page drew ${pixels ? `${pixels.width}x${pixels.height}` : 'nothing'}, not ${width}x${height}`);
      // A page goes back to the pool only if it finished cleanly on a live browser.
      if (!generation.crashed) generation.idle.push(page);
      page = null;
      return { data: Buffer.from(pixels.base64, 'base64'), width, height, encoding: pixels.encoding };
    } catch (error) {
      // A killed browser can fail the call before `disconnected` is delivered: ask the connection too.
      if (generation && (generation.crashed || !generation.browser.connected)) throw new BrowserCrashedError();
      throw error;
    } finally {
      // A page that failed mid-render may be in any state (a draw still running after a timeout): close it rather than reuse it.
      if (page && generation && !generation.crashed) await page.close().catch(() => undefined);
      this.release();
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    const generation = this.generation ?? (this.launching ? await this.launching.catch(() => null) : null);
    this.generation = null;
    if (generation && !generation.crashed) await generation.browser.close().catch(() => undefined);
    if (generation) rmSync(generation.profileDir, { recursive: true, force: true });
    this.server?.stop(true);
    this.server = null;
  }
}
