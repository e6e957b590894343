import { type AnyElysia, Elysia } from 'elysia';
import { ApiError, errors } from '../../../shared/http/errors.ts';
import { credentialOf, tokenCheck } from '../../../shared/identity/operator-tokens.ts';
import type { AppDeps } from '../../deps.ts';
import { requestIdOf } from '../../plugins/errors.ts';

// Not imported from board.ts: that module loads bull-board, which waits for the first operator.
const QUEUE_DASHBOARD_PATH = '/admin/queues';
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** Changes to queues come from the dashboard's own pages only: a browser sends its Basic credentials to any site's forms too. */
function isCrossSite(request: Request): boolean {
  const site = request.headers.get('sec-fetch-site');
  if (site) return site !== 'same-origin' && site !== 'none';
  const origin = request.headers.get('origin');
  if (!origin) return false;
  return !URL.canParse(origin) || new URL(origin).host !== request.headers.get('host');
}

/**
 * The queue dashboard (Bull Board) at /admin/queues over every pool's queue, for operators only
 * (docs/design.md §12). Every path under it (the page, its API and its files) needs OPERATOR_TOKEN as
 * `Authorization: Bearer <token>` or as the password of HTTP Basic (any user name), so a browser
 * can open it after its sign-in prompt; without OPERATOR_TOKEN nobody gets in. Anything else is a
 * 401 with the shared error body and a Basic challenge. The operator's requests go to Bull Board
 * (board.ts), loaded on the first of them. Not in /openapi.json (docs/operations.md "Queue dashboard").
 */
export function queueDashboardRoutes(deps: Pick<AppDeps, 'config' | 'queues' | 'log'>) {
  const isOperator = tokenCheck(deps.config.OPERATOR_TOKEN);
  let board: Promise<AnyElysia> | undefined;
  const dispatch = async ({
    request,
    body,
    set,
  }: {
    request: Request;
    body: unknown;
    set: { headers: Record<string, string | number | string[] | undefined> };
  }) => {
    if (!isOperator(credentialOf(request.headers.get('authorization')))) {
      throw new ApiError(401, 'unauthorized', 'The queue dashboard needs the operator token (HTTP Basic password, or Authorization: Bearer).', undefined, {
        'www-authenticate': 'Basic realm="queue dashboard", charset="UTF-8"',
      });
    }
    if (!SAFE_METHODS.has(request.method) && isCrossSite(request)) {
      throw errors.forbidden('cross_site_request', 'Changes to queues are accepted from the dashboard itself only.');
    }
    board ??= import('./board.ts').then(({ createBoardApp }) => createBoardApp(deps));
    // The body was read (and checked: JSON, at most 1 MiB) by our parser; it goes on as JSON, under the same request id.
    const headers = new Headers(request.headers);
    headers.delete('content-length');
    headers.set('x-request-id', requestIdOf(set));
    const forwarded = new Request(request.url, {
      method: request.method,
      headers,
      body: body === undefined || body === null ? undefined : JSON.stringify(body),
    });
    return (await board).handle(forwarded);
  };
  return new Elysia({ name: 'queue-dashboard' })
    .all(QUEUE_DASHBOARD_PATH, dispatch, { detail: { hide: true } })
    .all(`${QUEUE_DASHBOARD_PATH}/*`, dispatch, { detail: { hide: true } });
}
