import { type AnyElysia, Elysia } from 'elysia';
import type { AppDeps } from './deps.ts';
import { buildOpenApiDocument } from './openapi.ts';
import { apiKeyAuthenticator } from './plugins/api-key.ts';
import { errorsPlugin, MAX_BODY_BYTES, withoutParsingOnReads } from './plugins/errors.ts';
import { requestContextPlugin } from './plugins/request-context.ts';
import { auditRoutes } from './routes/audit.ts';
import { auditExportRoutes } from './routes/audit-exports.ts';
import { catalogRoutes } from './routes/catalog.ts';
import { compatRoutes } from './routes/compat.ts';
import { docsRoutes } from './routes/docs.ts';
import { gameplatformAccountRoutes } from './routes/gameplatform-accounts.ts';
import { gameplatformTradeRoutes } from './routes/gameplatform-trades.ts';
import { healthRoutes } from './routes/health.ts';
import { identityRoutes } from './routes/identity.ts';
import { imageRoutes } from './routes/images.ts';
import { inspectRoutes } from './routes/inspect.ts';
import { inventoryRoutes } from './routes/inventories.ts';
import { marketIndexRoutes } from './routes/market-index.ts';
import { marketSummaryRoutes } from './routes/market-summary.ts';
import { meRoutes } from './routes/me.ts';
import { metaRoutes } from './routes/meta.ts';
import { metricsRoutes } from './routes/metrics.ts';
import { priceStreamRoutes } from './routes/price-stream.ts';
import { priceRoutes } from './routes/prices.ts';
import { profileRoutes } from './routes/profiles.ts';
import { publicPriceRoutes } from './routes/public-prices.ts';
import { queueDashboardRoutes } from './routes/queue-dashboard/index.ts';
import { renderRoutes } from './routes/renders.ts';
import { sceneRoutes } from './routes/scenes.ts';
import { tradeIntentRoutes } from './routes/trade-intents.ts';
import { viewerRoutes } from './routes/viewer.ts';
import { webhookRoutes } from './routes/webhooks.ts';

/** The reference's front matter (docs/design.md §16): what every operation shares is said here once. */
const INTRODUCTION = [
  'CS2 item prices from several marketplaces & a platform around them: keyless prices under `/v1`, and keyed APIs under `/v2` ("X-API-Key") for the catalog, price history and live prices, the market index, webhooks, Steam profiles and inventories, trade intents, scenes, renders and inspect links.',
  '## Keyless prices (/v1)',
  "`GET /v1/prices` (every priced item), `GET /v1/prices/{market_hash_name}` (one item) and `GET /v1/prices/stream` (every live price change) need no key and are not metered. The two reads are limited per client address (`PUBLIC_PRICES_RATE_LIMIT`, default 60 requests per minute: 429 `rate_limited`), answer with an `ETag` (`If-None-Match` gives a 304) and are compressed with gzip or brotli when the client accepts it; at most 2 streams may be open at once per client address. `GET /v2/images/{catalog_id}` (an item's image, resized) needs no key either, with a per-address budget of its own. Filtered reads, history and more need a key.",
  '## Get an API key in two steps',
  '1. `POST /v1/accounts` with `{"email": "…", "password": "…"}` (password 10 to 256 characters; optional `workspace_name`) creates an account and its workspace and answers 201 with `session.token`. Later, `POST /v1/sessions` signs in again.',
  '2. `POST /v1/me/keys` with `Authorization: Bearer <session token>` and `{"label": "…", "scopes": […]}` answers 201 with `key`, shown in this response only. Without `scopes` the key gets the read-only defaults (`GET /v2/meta/scopes` lists every scope and the defaults).',
  'Send the key as the `X-API-Key` header. Each operation below ends with what it needs (**Access**): a key and which scopes (a `:write` scope also grants the matching `:read`), a session, or nothing.',
  '## Metering',
  "Keyed requests are metered in weighted units against budgets shared by every key of the workspace: **free** 120 units per minute and 20 000 per UTC day, **pro** 1 200 and 1 000 000 (enterprise budgets are set per workspace). Each operation below states its weight; `GET /v2/usage` lists all weights (`unit_weights`), the budgets left and the calling key's counters. Every metered answer carries `RateLimit-Policy` and `RateLimit` headers. Over budget: 429 `usage_limit_exceeded` with `Retry-After`. When usage metering is unavailable, keyed requests get 503 `usage_unavailable` while keyless ones keep working.",
  '## Errors',
  'Every error has one body, `{"error": {"code", "message", "request_id", "details?"}}` (schema `Error`); `code` is stable, `details` names each bad field, and `request_id` is also the `X-Request-Id` header of every answer. Codes any operation may answer: 400 `invalid_request` (a parameter or body field, with details) or `malformed_json`; 401 `unauthorized` (missing, unknown or revoked key or session); 403 `insufficient_scope` or `workspace_suspended`; 404 `not_found`; 413 `payload_too_large` (bodies are limited to 1 MiB); 415 `unsupported_media_type` (bodies are JSON); 429 `usage_limit_exceeded`; 503 `usage_unavailable` or `database_unavailable` (retry shortly); 500 `internal_error` (quote the request id). Each operation lists its own codes besides these.',
  '## Lists and pagination',
  'Lists answer `{"data": […], "next_cursor": "…" | null}`. Pass `next_cursor` back as `cursor` with the same filters to get the next page; `limit` sets the page size (each list states its default and maximum). Cursors are opaque and signed and bind the filters that produced them: a tampered, foreign or re-filtered cursor is 400 `invalid_cursor`.',
  '## Idempotency',
  'Create operations that say so require an `Idempotency-Key` header (1 to 255 visible ASCII characters; 400 `idempotency_key_required` when missing). The same key with the same request (method, path and canonical JSON body) within 24 hours answers the original body again, with status 200 and `Idempotent-Replayed: true`; the same key with a different request is 409 `idempotency_key_reused`, and while the first request is still running 409 `idempotency_key_in_use`. Keys are scoped to the workspace and the operation.',
  '## Conventions',
  'Times are RFC 3339 in UTC. Prices and other money are decimal strings in USD; operations with a `currency` parameter convert them at the newest ECB reference rates and add `currency` and `fx` to the answer (400 `invalid_request` for an unsupported currency, 503 `fx_unavailable` before any rates were fetched). Links to files and pages (export downloads, render images, webhook event pages) are signed URLs that work without a key until they expire.',
].join('\n\n');

const documentation = {
  info: {
    title: 'CS2 pricing and platform API',
    version: '1.0.0',
    description: INTRODUCTION,
  },
  // One tag per area, in the order the reference lists them.
  tags: [
    { name: 'status', description: 'Health, platform status, scopes and capabilities. No credentials.' },
    { name: 'identity', description: 'Accounts, sessions and API keys; the calling key, its workspace and its usage.' },
    { name: 'audit', description: "The workspace's audit events and their exports as NDJSON.gz." },
    { name: 'catalog', description: 'Every CS2 item the service prices, with its catalog id.' },
    { name: 'prices', description: 'Current prices, price history and the live price stream of catalog items (API key).' },
    {
      name: 'keyless',
      description:
        'The keyless API: the /v1 price list, one item and the live stream, and item images (GET /v2/images/{catalog_id}), limited per client address.',
    },
    {
      name: 'compat',
      description:
        "Drop-in formats: the price files and endpoints existing tools read (csgotrader, Skinport, Steam priceoverview, SteamApis), served from this service's data under /compat. Keyless, cached per price snapshot, limited per client address. Mappings: docs/compat/.",
    },
    { name: 'market', description: 'The cs2.chain-equal-weight.v1 market index and current market totals.' },
    { name: 'webhooks', description: 'Webhook endpoints, their deliveries and signing secrets, and the pages of large events.' },
    { name: 'game platform', description: 'Steam profiles and inventories, and Steam accounts connected to the workspace.' },
    { name: 'trade', description: 'Trade intents: drafts that reserve the outgoing assets of a connected account.' },
    { name: 'media', description: 'Scenes, viewer sessions, renders and inspect links.' },
  ],
  components: {
    securitySchemes: {
      apiKey: { type: 'apiKey', in: 'header', name: 'X-API-Key', description: 'An API key from POST /v1/me/keys' },
      session: { type: 'http', scheme: 'bearer', description: 'A session token from POST /v1/accounts or POST /v1/sessions' },
      sessionCookie: { type: 'apiKey', in: 'cookie', name: 'session', description: 'The same session token, as a cookie' },
    },
  },
};

// The docs page's head: the title and the introduction's first paragraph (which quotes JSON-ish text
// and an ampersand, so the page test checks its escaping).
const docsPage = { title: documentation.info.title, version: documentation.info.version, description: INTRODUCTION.split('\n\n')[0]! };

/**
 * The HTTP app. `extend` mounts extra routes after the shared plugins (tests mount test-only
 * routes this way); production passes nothing.
 */
export function createApp(deps: AppDeps, extend?: (app: AnyElysia) => AnyElysia) {
  const app = new Elysia({
    // Bun's own cap sits above ours so oversized bodies get our 413 body, not a bare one.
    serve: { maxRequestBodySize: MAX_BODY_BYTES * 2 },
  })
    .use(requestContextPlugin(deps))
    .use(errorsPlugin(deps.log, { onFailure: apiKeyAuthenticator(deps).countFailure }))
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
    .use(compatRoutes(deps))
    .use(imageRoutes(deps))
    .use(webhookRoutes(deps))
    .use(profileRoutes(deps))
    .use(inventoryRoutes(deps))
    .use(gameplatformAccountRoutes(deps))
    .use(gameplatformTradeRoutes(deps))
    .use(tradeIntentRoutes(deps))
    .use(viewerRoutes(deps))
    .use(renderRoutes(deps))
    .use(sceneRoutes(deps))
    .use(inspectRoutes(deps))
    // Operators' routes, outside /openapi.json (docs/operations.md "Metrics" and "Queue dashboard").
    .use(metricsRoutes(deps))
    .use(queueDashboardRoutes(deps));
  const full = extend ? extend(app) : app;
  // Mounted last and built at its first request, so the document covers every route of the app.
  return withoutParsingOnReads(full.use(docsRoutes(() => buildOpenApiDocument(full, documentation), docsPage, deps.config.PUBLIC_BASE_URL)));
}
