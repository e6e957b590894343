import { Elysia } from 'elysia';
import { z } from 'zod';
import { isCatalogId, isPriceVersion } from '../../shared/catalog/identity.ts';
import { ApiError, errors } from '../../shared/http/errors.ts';
import { text } from '../../shared/http/validation.ts';
import { SOURCE_NAMES } from '../../shared/platform/source-names.ts';
import { isStreamId, STREAM_BATCH_SIZE } from '../../shared/prices/stream.ts';
import {
  HEARTBEAT_MS,
  MAX_BUFFERED_BYTES,
  MAX_TOTAL_BUFFERED_BYTES,
  PriceStreamUnavailableError,
  RETRY_MS,
  type StreamFilter,
  type StreamSink,
} from '../../shared/prices/stream-hub.ts';
import type { AppDeps } from '../deps.ts';
import { errorResponses, type ResponsesObject } from '../openapi.ts';
import { type ApiKeyPluginDeps, apiKeyPlugin } from '../plugins/api-key.ts';
import { clientIp } from '../plugins/client-ip.ts';
import { DownloadSlots } from '../plugins/download-slots.ts';

/**
 * The price stream over Server-Sent Events (docs/design.md §15): GET /v2/prices/stream (keyed, filtered) and
 * GET /v1/prices/stream (keyless, every change). The routes validate, authorise and count; the
 * process's hub (shared/prices/stream-hub.ts) replays and fans out.
 */

/** docs/design.md §15: open keyless streams per client address and API process. */
export const PUBLIC_STREAMS_PER_CLIENT = 2;
const MAX_CATALOG_IDS = 100;
/** The response body asks its reader for more below this many queued bytes (StreamSink.drained). */
const LOW_MARK_BYTES = 64 * 1024;

const allowedSources = SOURCE_NAMES.join(', ');
const catalogId = text({ max: 128 }).refine(isCatalogId, 'malformed catalog id; pass back a catalog_id from the catalog API unchanged');
const lastEventIdMessage = 'must be an event id as the stream sent it (`<position>-0`, e.g. 48213-0)';
const lastEventId = z.string().max(41).refine(isStreamId, lastEventIdMessage);
const lastEventIdParam = lastEventId
  .optional()
  .describe('Resume after this event id, for clients that cannot send the Last-Event-ID header (the header wins when both are sent)');

const keyedQuery = z
  .object({
    catalog_id: z
      .union([catalogId, z.array(catalogId).min(1).max(MAX_CATALOG_IDS)])
      .optional()
      .describe(`Only changes of these items: repeat the parameter, up to ${MAX_CATALOG_IDS} times`),
    source: z
      .enum(SOURCE_NAMES, { error: (issue) => `unknown source ${JSON.stringify(issue.input)}; one of ${allowedSources}` })
      .optional()
      .describe('Only runs of this source'),
    version: z
      .string()
      .max(32)
      .refine(isPriceVersion, 'unknown version: default, phase-1…phase-4, ruby, sapphire, black-pearl, emerald, pattern-<0…1000> or tier-<n>')
      .optional()
      .describe('Only changes of this price version'),
    last_event_id: lastEventIdParam,
  })
  .strict();

const publicQuery = z.object({ last_event_id: lastEventIdParam }).strict();

/**
 * Where to resume: the Last-Event-ID header (what EventSource sends on each reconnect, while the URL
 * keeps whatever query it was opened with), else `?last_event_id=`; null for a fresh connection.
 */
function resumeFrom(request: Request, queryId: string | undefined): string | null {
  const header = request.headers.get('last-event-id');
  if (header !== null && header !== '') {
    if (!lastEventId.safeParse(header).success) {
      throw errors.invalidRequest('The Last-Event-ID header is malformed.', [{ field: 'headers.last-event-id', message: lastEventIdMessage }]);
    }
    return header;
  }
  return queryId ?? null;
}

/**
 * A response body the hub writes to: a byte stream whose queue is what this process holds for the
 * client beyond what its socket took (Bun stops pulling while the socket is full). `onClose` runs
 * once, however the stream ends: the client went away, the hub cut it off, or the process stops.
 */
function sseBody(onClose: () => void): { body: ReadableStream<Uint8Array>; sink: StreamSink; close: () => void } {
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  let open = true;
  let waiters: (() => void)[] = [];
  const wake = () => {
    const waiting = waiters;
    waiters = [];
    for (const resolve of waiting) resolve();
  };
  const close = () => {
    if (!open) return;
    open = false;
    wake();
    onClose();
  };
  const body = new ReadableStream<Uint8Array>(
    {
      start: (started) => {
        controller = started;
      },
      pull: wake,
      cancel: close,
    },
    { highWaterMark: LOW_MARK_BYTES, size: (chunk) => chunk?.byteLength ?? 0 },
  );
  const buffered = () => (open ? LOW_MARK_BYTES - (controller.desiredSize ?? LOW_MARK_BYTES) : 0);
  const sink: StreamSink = {
    write(bytes) {
      if (!open) return 0;
      controller.enqueue(bytes);
      return buffered();
    },
    get buffered() {
      return buffered();
    },
    drained() {
      if (!open || buffered() <= LOW_MARK_BYTES) return Promise.resolve();
      return new Promise((resolve) => waiters.push(resolve));
    },
    abort() {
      if (!open) return;
      close();
      // Errored, not closed: the queued megabyte is dropped and the connection is reset now. No
      // reason is passed: Bun reports an Error it was given as unhandled, an empty reason it does not.
      controller.error();
    },
    end() {
      if (!open) return;
      close();
      controller.close();
    },
  };
  return { body, sink, close };
}

const SSE_HEADERS = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-store',
  // Proxies that buffer responses (nginx) would hold events back.
  'x-accel-buffering': 'no',
};

const streamSuccess = (description: string): ResponsesObject => ({
  '200': {
    description,
    content: {
      'text/event-stream': {
        schema: {
          type: 'string',
          description:
            'Server-Sent Events. `retry: 3000` first; `event: prices` with `id:` (`<position>-0`, the position in the log) and `data:` ' +
            '`{"run_id","source","changes":[{"catalog_id","market_hash_name","version","price","previous_price","bid"}]}` ' +
            '(decimal strings, USD; previous_price null for a first price, bid null when the source has none); ' +
            '`event: gap` with `data:` `{"since","oldest_available"}`; comment lines as heartbeats.',
        },
      },
    },
  },
});

const behaviour =
  `Each committed ingest run's changed prices arrive as \`prices\` events of at most ${STREAM_BATCH_SIZE} changes, in the order the runs were committed; ` +
  'the event `id` is the position in one ordered log, written in the same database transaction as the prices and shared by every API process, so a committed change is never skipped: ' +
  'a Redis outage delays events, and they follow in order once it is back. ' +
  'Resume by sending the last id you saw as `Last-Event-ID` (EventSource does this itself) or `?last_event_id=`: the events after it are replayed, then live ones follow, with no duplicate and no hole. ' +
  'An id older than the retained window (PRICE_STREAM_RETAIN changes, default 100 000), or one the window lost (Redis restarted empty after the log had been trimmed), gets one `gap` event ' +
  '`{"since": <your id>, "oldest_available": <oldest retained id or null>}`: reload `GET /v1/prices`, then carry on with the live events that follow. ' +
  `A fresh connection's first message carries the current position as its \`id\`, so a reconnect before any event still resumes from there. ` +
  `A comment line is sent on a connection silent for ${HEARTBEAT_MS / 1000} s (with an \`id:\` when the stream moved on without events for your filter), ` +
  `the first message sets \`retry: ${RETRY_MS}\`, and a client that leaves more than ${MAX_BUFFERED_BYTES / 1024 / 1024} MiB unread is disconnected (reconnect and resume); ` +
  `so is the slowest client first when all of a process's clients together leave more than PRICE_STREAM_MAX_BUFFERED_BYTES (default ${MAX_TOTAL_BUFFERED_BYTES / 1024 / 1024} MiB) unread. `;

export function priceStreamRoutes(deps: Pick<AppDeps, 'config' | 'priceStream'> & ApiKeyPluginDeps) {
  const slots = new DownloadSlots(PUBLIC_STREAMS_PER_CLIENT);

  async function openStream(
    request: Request,
    server: { timeout(request: Request, seconds: number): void } | null,
    filter: StreamFilter,
    resume: string | null,
    release?: () => void,
  ) {
    let subscription: { close: () => void } | undefined;
    let closed = false;
    const { body, sink, close } = sseBody(() => {
      closed = true;
      subscription?.close();
      release?.();
    });
    // The client may leave before the body is handed to Bun, whose cancel would then never come.
    request.signal.addEventListener('abort', close, { once: true });
    try {
      subscription = await deps.priceStream.open(filter, sink, resume);
    } catch (error) {
      close();
      if (error instanceof PriceStreamUnavailableError) {
        throw new ApiError(503, 'price_stream_unavailable', 'The price stream cannot be read right now; retry shortly.', undefined, {
          'retry-after': String(RETRY_MS / 1000),
        });
      }
      throw error;
    }
    if (closed) subscription.close();
    // Bun.serve ends a connection idle for 10 s (its default idleTimeout): a stream is quiet by design.
    server?.timeout(request, 0);
    return new Response(body, { status: 200, headers: SSE_HEADERS });
  }

  return new Elysia({ name: 'price-stream-routes' })
    .use(apiKeyPlugin(deps))
    .get(
      '/v2/prices/stream',
      ({ query, request, server }) => {
        const catalogIds = query.catalog_id === undefined ? null : Array.isArray(query.catalog_id) ? query.catalog_id : [query.catalog_id];
        const filter: StreamFilter = { catalogIds, source: query.source ?? null, version: query.version ?? null };
        return openStream(request, server, filter, resumeFrom(request, query.last_event_id));
      },
      {
        operation: 'prices.stream',
        query: keyedQuery,
        detail: {
          summary: 'Live price changes (Server-Sent Events)',
          description:
            behaviour +
            `Filters: \`catalog_id\` (repeat up to ${MAX_CATALOG_IDS} times), \`source\`, \`version\`; an event the filters leave empty is not sent. ` +
            'Metered once per connection (each reconnect is a connection). ' +
            'Errors: 400 `invalid_request` for a malformed filter or event id (`Last-Event-ID` or `last_event_id`); 401 `unauthorized`; ' +
            '403 `insufficient_scope` without prices:read; 429 `usage_limit_exceeded`; 503 `usage_unavailable` or `price_stream_unavailable` when Redis cannot be read.',
          tags: ['prices'],
          responses: { ...streamSuccess('The stream of price changes matching the filters'), ...errorResponses(503) },
        },
      },
    )
    .get(
      '/v1/prices/stream',
      ({ query, request, server }) => {
        const resume = resumeFrom(request, query.last_event_id);
        const client = clientIp(deps, request, server) ?? 'unknown';
        const release = slots.acquire(client);
        if (!release) {
          throw errors.tooManyRequests(
            'too_many_streams',
            `At most ${PUBLIC_STREAMS_PER_CLIENT} keyless price streams may be open at once from one address; close one, or use GET /v2/prices/stream with an API key.`,
            RETRY_MS / 1000,
          );
        }
        return openStream(request, server, { catalogIds: null, source: null, version: null }, resume, release);
      },
      {
        query: publicQuery,
        detail: {
          summary: 'Every live price change (Server-Sent Events)',
          description:
            behaviour +
            `Every change of every source, unfiltered (GET /v2/prices/stream filters). At most ${PUBLIC_STREAMS_PER_CLIENT} streams may be open at once from one client address ` +
            'on one API process; one more is answered 429 `too_many_streams` with `Retry-After`. ' +
            'Errors: 400 `invalid_request` for a malformed event id; 429 `too_many_streams`; 503 `price_stream_unavailable` when Redis cannot be read.',
          tags: ['keyless'],
          responses: { ...streamSuccess('The stream of every price change'), ...errorResponses(429, 503) },
        },
      },
    );
}
