import { Elysia } from 'elysia';
import { ApiError } from '../../shared/http/errors.ts';
import { credentialOf, tokenCheck } from '../../shared/identity/operator-tokens.ts';
import type { AppDeps } from '../deps.ts';

/**
 * `GET /metrics`, Prometheus text format (docs/design.md §12). Open unless METRICS_TOKEN is set, then it
 * needs `Authorization: Bearer <METRICS_TOKEN>` (Prometheus `authorization.credentials`). Not in
 * /openapi.json: it is for the operator's scraper, not part of the client API (docs/operations.md "Metrics").
 */
export function metricsRoutes(deps: Pick<AppDeps, 'config' | 'metrics'>) {
  const required = deps.config.METRICS_TOKEN !== undefined;
  const matches = tokenCheck(deps.config.METRICS_TOKEN);
  const { registry } = deps.metrics;
  return new Elysia({ name: 'metrics-routes' }).get(
    '/metrics',
    async ({ request }) => {
      if (required && !matches(credentialOf(request.headers.get('authorization')))) {
        throw new ApiError(401, 'unauthorized', 'Metrics need Authorization: Bearer <METRICS_TOKEN>.', undefined, {
          'www-authenticate': 'Bearer realm="metrics"',
        });
      }
      return new Response(await registry.metrics(), { headers: { 'content-type': registry.contentType, 'cache-control': 'no-store' } });
    },
    { detail: { hide: true } },
  );
}
