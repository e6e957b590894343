import { createBullBoard } from '@bull-board/api';
import { Elysia } from 'elysia';
import { ApiError, type ErrorDetail, errorBody, errors } from '../../../shared/http/errors.ts';
import { POOLS } from '../../../shared/jobs/queues.ts';
import type { AppDeps } from '../../deps.ts';
import { errorsPlugin, requestIdOf } from '../../plugins/errors.ts';
import { BullMQ6Adapter, OfflineElysiaAdapter } from './adapter.ts';

export const QUEUE_DASHBOARD_PATH = '/admin/queues';
const API_ROUTES = `${QUEUE_DASHBOARD_PATH}/api/`;
const MAX_PARAM_LENGTH = 256;

/** A status bull-board answers with its own `{error: "…"}` body, as our code. */
const ERROR_CODES: Record<number, string> = { 400: 'invalid_request', 403: 'forbidden', 404: 'not_found', 405: 'method_not_allowed' };

/**
 * Path parameters of the dashboard's API as the adapter wants them. Elysia has already decoded
 * them and the adapter decodes them once more, so a job id with `%` in it would reach the wrong
 * job or throw: each value is checked (bounded, no NUL, well-formed) and encoded again.
 */
function encodeParams(params: Record<string, string | null> | undefined): void {
  if (!params) return;
  const details: ErrorDetail[] = [];
  for (const [name, value] of Object.entries(params)) {
    // null: Elysia could not percent-decode it.
    const valid = typeof value === 'string' && value.length <= MAX_PARAM_LENGTH && !value.includes('\u0000') && value.isWellFormed();
    if (valid) params[name] = encodeURIComponent(value);
    else details.push({ field: `params.${name}`, message: 'must be well-formed, percent-encoded text without NUL, at most 256 characters' });
  }
  if (details.length > 0) throw errors.invalidRequest('The request is invalid.', details);
}

/**
 * Bull Board over every pool's queue, as an app of its own that the dashboard's routes hand
 * requests to once the operator is known (index.ts): loading bull-board costs the API about 10 MB,
 * which only a process whose dashboard is opened pays. It answers with the shared error body
 * (its own error plugin, with the request id the outer request got).
 */
export function createBoardApp(deps: Pick<AppDeps, 'queues' | 'log'>) {
  const adapter = new OfflineElysiaAdapter(QUEUE_DASHBOARD_PATH);
  createBullBoard({
    queues: POOLS.map((pool) => new BullMQ6Adapter(deps.queues[pool])),
    serverAdapter: adapter,
    options: { uiConfig: { boardTitle: 'CS2 queues' } },
  });
  // The outer app already writes the access log line (debug) of each request.
  const log = deps.log.isLevelEnabled('debug') ? deps.log.child({}, { level: 'info' }) : deps.log;
  return (
    new Elysia({ name: 'queue-dashboard-board' })
      // The outer request's id (index.ts forwards it), on this app's answers and error bodies alike.
      .onRequest(({ request, set }) => {
        set.headers['x-request-id'] = request.headers.get('x-request-id') ?? 'unknown';
      })
      .use(errorsPlugin(log))
      .onBeforeHandle(({ route, params }) => {
        if (route.startsWith(API_ROUTES)) encodeParams(params as Record<string, string | null> | undefined);
      })
      // bull-board's handlers answer refusals as `{error: "Queue not found"}` with a status: reshaped to the shared body.
      .onAfterHandle(({ set, responseValue }) => {
        const status = typeof set.status === 'number' ? set.status : 200;
        const body = responseValue as { error?: unknown; message?: unknown } | null;
        if (status < 400 || typeof body?.error !== 'string') return;
        const message = typeof body.message === 'string' ? `${body.error}: ${body.message}` : body.error;
        return errorBody(new ApiError(status, ERROR_CODES[status] ?? 'queue_operation_refused', message), requestIdOf(set));
      })
      .use(adapter.build(QUEUE_DASHBOARD_PATH))
      .all(`${QUEUE_DASHBOARD_PATH}/*`, () => {
        throw errors.notFound('No such page of the queue dashboard.');
      })
  );
}
