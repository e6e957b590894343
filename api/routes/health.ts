import { Elysia } from 'elysia';
import { z } from 'zod';
import { healthReportSchema as healthReport, sourceFreshness } from '../../shared/health/sources.ts';
import { platformStatus, platformStatusSchema } from '../../shared/health/status.ts';
import { errors } from '../../shared/http/errors.ts';
import { enabledSources, unavailableSources } from '../../shared/sources/settings.ts';
import type { AppDeps } from '../deps.ts';
import { routeResponses } from '../openapi.ts';

const liveness = z.object({
  status: z.literal('ok'),
  version: z.string().describe('The API package version'),
  started_at: z.string().describe('When this API process started'),
  uptime_seconds: z.number().int(),
});

export function healthRoutes(deps: Pick<AppDeps, 'config' | 'sql' | 'redis' | 'queues' | 'now' | 'startedAt'>) {
  const version = process.env.npm_package_version ?? '0.1.0';
  // Formatted once: toISOString on every liveness probe was ~1.5 µs of its ~22 (bench:api profile).
  const startedAt = deps.startedAt.toISOString();
  const startedAtMs = deps.startedAt.getTime();
  return new Elysia({ name: 'health-routes' })
    .get(
      '/health',
      async ({ set }) => {
        const report = await sourceFreshness(deps.sql, enabledSources(deps.config), deps.now());
        // docs/interface.md §4: 503 when any enabled source is stale or never succeeded, same body shape; the fx
        // source (always on) counts as one (shared/health/fx.ts). A source SOURCES names that cannot
        // run (skinbaron without its key) is not enabled: not here, only in /v2/status.
        if (report.status !== 'up') set.status = 503;
        set.headers['cache-control'] = 'no-store';
        return report;
      },
      {
        response: { 200: healthReport, 503: healthReport },
        detail: {
          summary: 'Price source freshness',
          description:
            'Each enabled price source, and the always-on exchange-rate source, with its last success and whether it is `fresh`, `stale` or `never_succeeded`, plus the number of catalog items. `status` is `up` when every one is fresh: the answer is 200, otherwise 503 with the same body (not the error body), so a monitor can use the status code as it is. `Cache-Control: no-store`. A source SOURCES names that cannot run (skinbaron without its key) is not listed here; GET /v2/status reports it.',
          tags: ['status'],
        },
      },
    )
    .get(
      '/v2/health',
      () => ({
        status: 'ok' as const,
        version,
        started_at: startedAt,
        uptime_seconds: Math.floor((Date.now() - startedAtMs) / 1000),
      }),
      {
        detail: {
          summary: 'API process liveness',
          description:
            'Answers 200 while this API process runs, with its version, start time and uptime. It checks no dependency (GET /v2/status does), so it suits a liveness probe.',
          tags: ['status'],
          responses: routeResponses({ 200: { description: 'The process is up', body: liveness } }),
        },
      },
    )
    .get(
      '/v2/status',
      async () => {
        const report = await platformStatus({
          ...deps,
          sources: enabledSources(deps.config),
          unavailableSources: unavailableSources(deps.config),
          steamWebApiKeyConfigured: deps.config.STEAM_WEB_API_KEY !== undefined,
          itemFilesDir: deps.config.ITEM_FILES_DIR,
          chromiumPath: deps.config.CHROMIUM_PATH,
        });
        if (!report) throw errors.unavailable('status_unavailable', 'Platform status cannot be assembled: the database is unreachable.');
        return report;
      },
      {
        detail: {
          summary: 'Aggregate platform status with degraded components',
          description: [
            'Every component with its status: the database and Redis (with latency), job counts per worker pool, live workers per pool, each price source (an enabled source as on GET /health, one that cannot run as `unavailable` with the reason), the exchange rates, new catalog items (`catalog`: how many items are provisional, and the market names seen on two sources or on Steam that could not be read into one item, counted with the newest 20 listed; docs/design.md §19), and the optional dependencies (Steam Web API key, Chromium, item files). `status` is `degraded` when any is not ok, and `degraded` lists them as dotted paths.',
            'Errors: 503 `status_unavailable` (the database is unreachable, so nothing can be assembled).',
          ].join('\n\n'),
          tags: ['status'],
          responses: routeResponses({ 200: { description: 'Every component checked', body: platformStatusSchema } }, 503),
        },
      },
    );
}
