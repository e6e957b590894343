import { Elysia, type AnyElysia } from 'elysia';
import type { AppDeps } from './deps.ts';
import { apiKeyAuthenticator } from './plugins/api-key.ts';
import { errorsPlugin, MAX_BODY_BYTES } from './plugins/errors.ts';
import { httpMetricsPlugin } from './plugins/http-metrics.ts';
import { auditRoutes } from './routes/audit.ts';
import { auditExportRoutes } from './routes/audit-exports.ts';
import { catalogRoutes } from './routes/catalog.ts';
import { gameplatformAccountRoutes } from './routes/gameplatform-accounts.ts';
import { buildOpenApiDocument } from './openapi.ts';
import { docsRoutes } from './routes/docs.ts';
import { healthRoutes } from './routes/health.ts';
import { identityRoutes } from './routes/identity.ts';
import { inspectRoutes } from './routes/inspect.ts';
import { inventoryRoutes } from './routes/inventories.ts';
import { marketSummaryRoutes } from './routes/market-summary.ts';
import { marketIndexRoutes } from './routes/market-index.ts';
import { meRoutes } from './routes/me.ts';
import { metaRoutes } from './routes/meta.ts';
import { metricsRoutes } from './routes/metrics.ts';
import { priceRoutes } from './routes/prices.ts';
import { priceStreamRoutes } from './routes/price-stream.ts';
import { profileRoutes } from './routes/profiles.ts';
import { publicPriceRoutes } from './routes/public-prices.ts';
import { queueDashboardRoutes } from './routes/queue-dashboard/index.ts';
import { renderRoutes } from './routes/renders.ts';
import { sceneRoutes } from './routes/scenes.ts';
import { tradeIntentRoutes } from './routes/trade-intents.ts';
import { viewerRoutes } from './routes/viewer.ts';
import { webhookRoutes } from './routes/webhooks.ts';

const documentation = {
  info: {
    title: 'CS2 pricing and platform API',
    version: '1.0.0',
    description: 'Keyless pricing, and keyed platform APIs (X-API-Key). Errors share one body: {"error":{"code","message","request_id","details?"}}.',
  },
  components: {
    securitySchemes: {
      apiKey: { type: 'apiKey', in: 'header', name: 'X-API-Key' },
      session: { type: 'http', scheme: 'bearer' },
      sessionCookie: { type: 'apiKey', in: 'cookie', name: 'session' },
    },
  },
};

/**
 * The HTTP app. `extend` mounts extra routes after the shared plugins (tests mount test-only
 * routes this way); production passes nothing.
 */
export function createApp(deps: AppDeps, extend?: (app: AnyElysia) => AnyElysia) {
  const app = new Elysia({
    // Bun's own cap sits above ours so oversized bodies get our 413 body, not a bare one.
    serve: { maxRequestBodySize: MAX_BODY_BYTES * 2 },
  })
    .use(errorsPlugin(deps.log, { onFailure: apiKeyAuthenticator(deps).countFailure }))
    .use(httpMetricsPlugin(deps.metrics.http))
    .use(healthRoutes(deps))
    .use(metaRoutes(deps))
    .use(identityRoutes(deps))
    .use(meRoutes(deps))
    .use(auditRoutes(deps))
    .use(auditExportRoutes(deps))
    .use(catalogRoutes(deps))
    .use(priceRoutes(deps))
    .use(priceStreamRoutes(deps))
    .use(marketIndexRoutes(deps))
    .use(marketSummaryRoutes(deps))
    .use(publicPriceRoutes(deps))
    .use(webhookRoutes(deps))
    .use(profileRoutes(deps))
    .use(inventoryRoutes(deps))
    .use(gameplatformAccountRoutes(deps))
    .use(tradeIntentRoutes(deps))
    .use(viewerRoutes(deps))
    .use(renderRoutes(deps))
    .use(sceneRoutes(deps))
    .use(inspectRoutes(deps))
    // Operators' routes, outside /openapi.json (README "Metrics and the queue dashboard").
    .use(metricsRoutes(deps))
    .use(queueDashboardRoutes(deps));
  const full = extend ? extend(app) : app;
  // Mounted last and built at its first request, so the document covers every route of the app.
  return full.use(docsRoutes(() => buildOpenApiDocument(full, documentation), documentation.info));
}
