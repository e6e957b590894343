import { ApiError, errorBody } from '../shared/http/errors.ts';
import { credentialOf, tokenCheck } from '../shared/identity/operator-tokens.ts';
import { POOLS, type Pool } from '../shared/jobs/queues.ts';
import type { Registry } from '../shared/metrics/registry.ts';
import type { Config } from '../shared/platform/config.ts';
import type { Logger } from '../shared/platform/logger.ts';
import { newId } from '../shared/util/ids.ts';

/** The first default port; each pool's is this plus its position in POOLS (docs/operations.md "Metrics"). */
export const WORKER_METRICS_BASE_PORT = 9464;

/**
 * The metrics port of a worker process running `pools`: WORKER_METRICS_PORT when set, else 9464 +
 * the position of its first pool in POOLS (ingest 9464 … maintenance 9469), so one process per pool
 * (the Procfile) gets a distinct port on one machine; under NODE_ENV=test a free port, so test runs
 * never take the ports of a running instance.
 */
export function workerMetricsPort(config: Pick<Config, 'WORKER_METRICS_PORT' | 'NODE_ENV'>, pools: readonly Pool[]): number {
  if (config.WORKER_METRICS_PORT !== undefined) return config.WORKER_METRICS_PORT;
  if (config.NODE_ENV === 'test') return 0;
  return WORKER_METRICS_BASE_PORT + Math.max(0, POOLS.indexOf(pools[0]!));
}

export type MetricsServer = { port: number; stop: () => Promise<void> };

function errorResponse(error: ApiError): Response {
  const requestId = newId();
  return Response.json(errorBody(error, requestId), { status: error.status, headers: { 'x-request-id': requestId, ...error.headers } });
}

/**
 * `GET /metrics` of a worker process on its own small HTTP server (docs/design.md §12), with the API's
 * METRICS_TOKEN rule, on loopback unless WORKER_METRICS_HOST says otherwise. A port already taken (a second process of the same pool on one machine)
 * does not stop the worker: it logs a warning and serves on a free port instead. The port in use
 * is in the `metrics listening` log line.
 */
export function startMetricsServer(options: { registry: Registry; port: number; hostname?: string; token: string | undefined; log: Logger }): MetricsServer {
  const { registry, token, log } = options;
  const matches = tokenCheck(token);
  const fetch = async (request: Request): Promise<Response> => {
    if (new URL(request.url).pathname !== '/metrics') return errorResponse(new ApiError(404, 'not_found', 'Only /metrics is served here.'));
    if (request.method !== 'GET' && request.method !== 'HEAD') {
      return errorResponse(new ApiError(405, 'method_not_allowed', 'GET /metrics only.', undefined, { allow: 'GET, HEAD' }));
    }
    if (token !== undefined && !matches(credentialOf(request.headers.get('authorization')))) {
      return errorResponse(
        new ApiError(401, 'unauthorized', 'Metrics need Authorization: Bearer <METRICS_TOKEN>.', undefined, { 'www-authenticate': 'Bearer realm="metrics"' }),
      );
    }
    return new Response(await registry.metrics(), { headers: { 'content-type': registry.contentType, 'cache-control': 'no-store' } });
  };
  const hostname = options.hostname ?? '127.0.0.1';
  const serve = (port: number) => Bun.serve({ port, hostname, fetch });
  let server: ReturnType<typeof serve>;
  try {
    server = serve(options.port);
  } catch (error) {
    if ((error as { code?: string }).code !== 'EADDRINUSE' || options.port === 0) throw error;
    log.warn({ port: options.port }, 'metrics port in use (another worker process on this machine?); serving metrics on a free port instead');
    server = serve(0);
  }
  const port = server.port ?? options.port;
  log.info({ port, hostname }, `metrics listening on ${hostname}:${port}/metrics`);
  return { port, stop: () => server.stop(true) };
}
