import { type AnyElysia, Elysia } from 'elysia';
import { ApiError, type ErrorDetail, errorBody } from '../../shared/http/errors.ts';
import type { Logger } from '../../shared/platform/logger.ts';

export const MAX_BODY_BYTES = 1024 * 1024;

type HeaderBag = Record<string, string | number | string[] | undefined>;

export function requestIdOf(set: { headers: HeaderBag }): string {
  const value = set.headers['x-request-id'];
  return typeof value === 'string' ? value : 'unknown';
}

/** Zod issues from Elysia's ValidationError, as `{field, message}` details. */
function validationDetails(error: unknown): ErrorDetail[] {
  const raw = error as { type?: string; message?: string; validator?: unknown };
  try {
    const parsed = JSON.parse(raw.message ?? '{}') as {
      on?: string;
      property?: string;
      message?: string;
      errors?: { path?: (string | number)[]; message?: string; summary?: string }[];
    };
    const on = parsed.on ?? 'request';
    const details = (parsed.errors ?? []).map((issue) => ({
      field: [on, ...(issue.path ?? [])].join('.'),
      message: issue.message ?? issue.summary ?? 'invalid value',
    }));
    if (details.length > 0) return details;
    return [{ field: [on, parsed.property].filter(Boolean).join('.'), message: parsed.message ?? 'invalid value' }];
  } catch {
    return [{ field: 'request', message: 'invalid value' }];
  }
}

const connectionErrorCodes = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'CONNECT_TIMEOUT',
  'CONNECTION_CLOSED',
  'CONNECTION_ENDED',
  'CONNECTION_DESTROYED',
  '57P01',
  '57P03',
  '53300',
]);

function isDatabaseUnavailable(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && connectionErrorCodes.has(code);
}

/** What a route's resolve hooks had established when its request failed (e.g. the API key's principal). */
export type FailedRequest = { principal?: unknown; operationId?: unknown };

/**
 * JSON body parsing and the one error shape (docs/design.md §6), with the request id that
 * api/plugins/request-context.ts set. Applied once at the root, so it covers every route, unknown
 * routes and failures before routing. `onFailure` sees every failed request with what its resolve
 * hooks had established (metering counts a keyed request's errors): an error hook costs nothing on
 * requests that succeed.
 */
export function errorsPlugin(log: Logger, options: { onFailure?: (request: FailedRequest) => void } = {}) {
  return new Elysia({ name: 'errors' })
    .onParse({ as: 'global' }, async ({ request, contentType }) => {
      const declared = Number(request.headers.get('content-length') ?? '0');
      if (declared > MAX_BODY_BYTES) throw new ApiError(413, 'payload_too_large', `Request bodies are limited to ${MAX_BODY_BYTES} bytes.`);
      const type = (contentType ?? '').split(';')[0]!.trim().toLowerCase();
      const text = await request.text();
      if (text.length === 0) return null;
      if (Buffer.byteLength(text) > MAX_BODY_BYTES) throw new ApiError(413, 'payload_too_large', `Request bodies are limited to ${MAX_BODY_BYTES} bytes.`);
      if (type !== 'application/json' && !type.endsWith('+json')) {
        throw new ApiError(415, 'unsupported_media_type', 'Request bodies must be JSON with Content-Type: application/json.');
      }
      try {
        return JSON.parse(text) as unknown;
      } catch {
        throw new ApiError(400, 'malformed_json', 'The request body is not valid JSON.');
      }
    })
    .onError({ as: 'global' }, (context) => {
      const { code, error, set, request } = context;
      const requestId = requestIdOf(set);
      // Members only, never the context itself (Elysia reads from a hook's source which members it needs).
      options.onFailure?.({ principal: (context as FailedRequest).principal, operationId: (context as FailedRequest).operationId });
      // Elysia wraps anything thrown while parsing in a ParseError; our own parse errors ride as its cause.
      const cause = code === 'PARSE' ? (error as Error).cause : undefined;
      let apiError: ApiError;
      if (error instanceof ApiError) apiError = error;
      else if (cause instanceof ApiError) apiError = cause;
      // A response that fails its own schema is our bug, not the client's: it falls through to the 500.
      else if (code === 'VALIDATION' && (error as { type?: string }).type !== 'response') {
        apiError = new ApiError(400, 'invalid_request', 'The request is invalid.', validationDetails(error));
      } else if (code === 'PARSE') apiError = new ApiError(400, 'malformed_json', 'The request body could not be parsed.');
      else if (code === 'NOT_FOUND') apiError = new ApiError(404, 'not_found', 'No such route.');
      else if (isDatabaseUnavailable(error)) {
        log.error({ err: error, request_id: requestId }, 'database unavailable');
        apiError = new ApiError(503, 'database_unavailable', 'The database is unavailable; retry shortly.');
      } else if (code === 'INVALID_COOKIE_SIGNATURE' || code === 'INVALID_FILE_TYPE')
        apiError = new ApiError(400, 'invalid_request', 'The request is invalid.');
      else {
        log.error({ err: error, request_id: requestId, method: request.method, path: new URL(request.url).pathname }, 'unhandled error');
        apiError = new ApiError(500, 'internal_error', 'Something went wrong on our side; the request id identifies it.');
      }
      if (apiError.status >= 500 && apiError.status !== 500) {
        log.warn({ request_id: requestId, code: apiError.code }, apiError.message);
      }
      set.status = apiError.status;
      for (const [name, value] of Object.entries(apiError.headers ?? {})) set.headers[name] = value;
      set.headers['content-type'] = 'application/json';
      return errorBody(apiError, requestId);
    });
}

/**
 * Takes the JSON parse hook off the app's GET and HEAD routes, which have no body. The hook is
 * global (every route with a body needs it), and Elysia compiles a route that has any parse hook as
 * an async function even when it never parses: each GET answered a Promise that Bun then awaited,
 * instead of its Response. Call once every route is registered, before the app is compiled.
 */
export function withoutParsingOnReads<App extends AnyElysia>(app: App): App {
  for (const route of app.router.history) {
    if ((route.method === 'GET' || route.method === 'HEAD') && route.hooks?.parse) route.hooks.parse = undefined;
  }
  return app;
}
