import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, resolve, sep } from 'node:path';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import type { AppControllerRoute, AppViewRoute, BullBoardRequest, UIConfig } from '@bull-board/api/typings/app';
import { ElysiaAdapter } from '@bull-board/elysia';
import type { Queue } from 'bullmq';
import type { Elysia } from 'elysia';
import { ApiError, errors } from '../../../shared/http/errors.ts';
import { checkDashboardRequest } from './requests.ts';

// The template engine the adapter renders the page with, loaded from where the adapter loads it.
const adapterRequire = createRequire(import.meta.resolve('@bull-board/elysia'));
const ejs = adapterRequire('ejs') as { render: (template: string, data: object) => string };

// The UI's template links a Google Fonts stylesheet; the page must not depend on anything off this origin.
const EXTERNAL_LINK = /<link\b[^>]*\bhref="(?:https?:)?\/\/[^"]*"[^>]*>/gi;
// The same rule in the browser, should a later UI version load something from elsewhere.
const PAGE_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');
// Longer file names are no file of the UI (and the file system would refuse them with an error).
const MAX_STATIC_PATH = 200;

/**
 * @bull-board/api 6.21.3's BullMQ adapter reads the queue's Redis client from `Queue.client`, which
 * BullMQ 6 moved to `queue.getBackend().client`: without this the Redis panel (`/api/redis/stats`)
 * fails and flow views would open a FlowProducer on no connection at all.
 */
export class BullMQ6Adapter extends BullMQAdapter {
  constructor(private readonly bullQueue: Queue) {
    super(bullQueue);
  }

  override async getRedisInfo(): Promise<string> {
    return (await this.bullQueue.getBackend().client).info();
  }

  override getClient() {
    return this.bullQueue.getBackend().client;
  }
}

// Failures of the Redis connection rather than of the operation asked for.
const CONNECTION_FAILURE = /connection is closed|stream isn't writeable|command timed out|max retries per request|ECONNREFUSED|ECONNRESET|ETIMEDOUT/i;

/**
 * What a bull-board handler's exception means for the operator: Redis unreachable → 503; BullMQ
 * refusing the operation for the job's or queue's state ("is not in the delayed state", "cannot
 * obliterate a queue with active jobs") → 409 with BullMQ's words; programming errors stay 500s.
 */
function operationError(error: unknown): unknown {
  if (error instanceof ApiError || !(error instanceof Error)) return error;
  if (CONNECTION_FAILURE.test(error.message)) return errors.unavailable('queues_unavailable', 'Redis, which holds the queues, is unreachable; retry shortly.');
  if (error instanceof TypeError || error instanceof ReferenceError || error instanceof RangeError || error instanceof SyntaxError) return error;
  return new ApiError(409, 'queue_operation_refused', error.message);
}

/**
 * @bull-board/elysia's adapter (6.21.3, pinned), fitted to this API. Its bridge from bull-board's
 * API handlers to Elysia routes is used as it is; around it:
 * - every API request is checked at the edge (requests.ts) and handler failures become the shared
 *   error body with a truthful status (bull-board's handlers trust their input and throw on state
 *   conflicts, which would otherwise all be 500s);
 * - registration is synchronous: its `registerPlugin` lists the UI's files asynchronously, but
 *   `createApp` is synchronous and Elysia's `app.handle` does not wait for async plugins;
 * - the UI's files come from one wildcard route (the adapter adds one route per file, about 570,
 *   each another route-template label in the HTTP metrics), and the page is rendered without its
 *   external stylesheet and with a CSP, so it works offline;
 * - errors are left to our error plugin (the adapter's handler answers its own body, with the
 *   stack in development).
 * The adapter keeps its Elysia instance private, hence the one cast in `build`.
 */
export class OfflineElysiaAdapter extends ElysiaAdapter {
  private staticsRoute = '/static';
  private staticsRoot = '';
  private viewsDir = '';
  private entry: AppViewRoute | undefined;
  private ui: UIConfig = {};

  override setStaticPath(staticsRoute: string, staticsPath: string): ElysiaAdapter {
    this.staticsRoute = staticsRoute;
    this.staticsRoot = resolve(staticsPath);
    return super.setStaticPath(staticsRoute, staticsPath);
  }

  override setViewsPath(viewPath: string): ElysiaAdapter {
    this.viewsDir = viewPath;
    return super.setViewsPath(viewPath);
  }

  override setEntryRoute(routeDef: AppViewRoute): ElysiaAdapter {
    this.entry = routeDef;
    return super.setEntryRoute(routeDef);
  }

  override setUIConfig(config: UIConfig = {}): ElysiaAdapter {
    this.ui = config;
    return super.setUIConfig(config);
  }

  override setErrorHandler(): this {
    return this;
  }

  override setApiRoutes(routes: AppControllerRoute[]): ElysiaAdapter {
    return super.setApiRoutes(
      routes.map((route) => ({
        ...route,
        handler: async (request?: BullBoardRequest) => {
          for (const path of Array.isArray(route.route) ? route.route : [route.route]) if (request) checkDashboardRequest(path, request);
          try {
            const result = await route.handler(request);
            // The add-job handler answers the new job's state as a promise inside its body.
            if (typeof result.body === 'object' && result.body.status instanceof Promise) result.body.status = await result.body.status;
            return result;
          } catch (error) {
            throw operationError(error);
          }
        },
      })),
    );
  }

  /** The adapter's instance with the page and the UI's files added: its routes sit under `basePath`. */
  build(basePath: string): Elysia {
    const entry = this.entry;
    if (!entry || !this.staticsRoot || !this.viewsDir) throw new Error('createBullBoard must configure the adapter before build');
    const plugin = (this as unknown as { plugin: Elysia }).plugin;
    let page: string | undefined;
    const renderPage = () => {
      if (page === undefined) {
        const { name, params } = entry.handler({ basePath, uiConfig: this.ui });
        page = ejs.render(readFileSync(join(this.viewsDir, name), 'utf8').replace(EXTERNAL_LINK, ''), params);
      }
      return new Response(page, { headers: { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store', 'content-security-policy': PAGE_CSP } });
    };
    for (const route of Array.isArray(entry.route) ? entry.route : [entry.route]) plugin.get(route, renderPage, { detail: { hide: true } });
    plugin.get(
      `${this.staticsRoute}/*`,
      async ({ params }) => {
        const relative = params['*'];
        const path = resolve(this.staticsRoot, relative);
        const inside = relative.length <= MAX_STATIC_PATH && !relative.includes('\u0000') && path.startsWith(this.staticsRoot + sep);
        const file = inside ? Bun.file(path) : null;
        if (!file || !(await file.exists())) throw errors.notFound('No such file.');
        // Private: every file sits behind the operator token.
        return new Response(file, { headers: { 'cache-control': 'private, max-age=3600' } });
      },
      { detail: { hide: true } },
    );
    return plugin;
  }
}
