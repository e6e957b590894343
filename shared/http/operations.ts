import type { Scope } from './scopes.ts';

/**
 * Every operation of the interface (docs/interface.md §4), with its scope, its unit weight (docs/design.md §5: a table in
 * code, exposed by GET /v2/usage) and whether this deployment serves it yet. Capabilities, metering
 * and route guards all read this one table.
 */
export type Availability = 'production' | 'planned';
/** A runtime dependency that, when missing, makes a built operation `unavailable`. */
export const DEPENDENCIES = ['redis', 'webhook_secret_key', 'steam_web_api_key', 'chromium', 'item_files'] as const;
export type Dependency = (typeof DEPENDENCIES)[number];

export type Operation = {
  id: string;
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  path: string;
  auth: 'public' | 'api_key' | 'session';
  scopes: Scope[];
  /** Weighted units debited per request (API-key operations only). */
  units: number;
  built: Availability;
  dependsOn: Dependency[];
};

const op = (
  id: string,
  method: Operation['method'],
  path: string,
  auth: Operation['auth'],
  scopes: Scope[],
  units: number,
  built: Availability,
  dependsOn: Dependency[] = [],
): Operation => ({ id, method, path, auth, scopes, units, built, dependsOn });

export const OPERATIONS = [
  op('health.report', 'GET', '/health', 'public', [], 0, 'production'),
  op('platform.health', 'GET', '/v2/health', 'public', [], 0, 'production'),
  op('platform.status', 'GET', '/v2/status', 'public', [], 0, 'production'),
  op('meta.capabilities', 'GET', '/v2/meta/capabilities', 'public', [], 0, 'production'),
  op('meta.scopes', 'GET', '/v2/meta/scopes', 'public', [], 0, 'production'),
  // docs/design.md §19: the currencies `?currency=` converts to, with their source (public, like its siblings).
  op('meta.currencies', 'GET', '/v2/meta/currencies', 'public', [], 0, 'production'),
  op('prices.public.list', 'GET', '/v1/prices', 'public', [], 0, 'production'),
  op('prices.public.get', 'GET', '/v1/prices/{market_hash_name}', 'public', [], 0, 'production'),
  // docs/design.md §18: keyless, limited per client address like the keyless prices.
  op('images.get', 'GET', '/v2/images/{catalog_id}', 'public', [], 0, 'production'),
  op('accounts.create', 'POST', '/v1/accounts', 'public', [], 0, 'production'),
  op('sessions.create', 'POST', '/v1/sessions', 'public', [], 0, 'production'),
  op('sessions.delete', 'DELETE', '/v1/sessions/current', 'session', [], 0, 'production'),
  op('keys.list', 'GET', '/v1/me/keys', 'session', [], 0, 'production'),
  op('keys.create', 'POST', '/v1/me/keys', 'session', [], 0, 'production'),
  op('keys.delete', 'DELETE', '/v1/me/keys/{id}', 'session', [], 0, 'production'),
  op('me.get', 'GET', '/v2/me', 'api_key', [], 1, 'production', ['redis']),
  op('usage.get', 'GET', '/v2/usage', 'api_key', ['usage:read'], 1, 'production', ['redis']),
  op('audit_events.list', 'GET', '/v2/audit/events', 'api_key', ['audit:read'], 2, 'production', ['redis']),
  op('audit_exports.list', 'GET', '/v2/audit/exports', 'api_key', ['audit:read'], 1, 'production', ['redis']),
  op('audit_exports.create', 'POST', '/v2/audit/exports', 'api_key', ['audit:export'], 25, 'production', ['redis']),
  op('audit_exports.get', 'GET', '/v2/audit/exports/{export_id}', 'api_key', ['audit:export'], 1, 'production', ['redis']),
  op('scenes.create', 'POST', '/v2/scenes', 'api_key', ['media:write'], 2, 'production', ['redis']),
  op('scenes.list', 'GET', '/v2/scenes', 'api_key', ['media:read'], 1, 'production', ['redis']),
  op('scenes.get', 'GET', '/v2/scenes/{scene_id}', 'api_key', ['media:read'], 1, 'production', ['redis']),
  op('scenes.revision', 'GET', '/v2/scenes/{scene_id}/revisions/{revision}', 'api_key', ['media:read'], 1, 'production', ['redis']),
  op('scenes.update', 'PUT', '/v2/scenes/{scene_id}', 'api_key', ['media:write'], 2, 'production', ['redis']),
  op('webhooks.create', 'POST', '/v2/webhooks', 'api_key', ['webhooks:write'], 2, 'production', ['redis', 'webhook_secret_key']),
  // Reading and deleting endpoints needs no secret key, so they stay usable while it is unset.
  op('webhooks.list', 'GET', '/v2/webhooks', 'api_key', ['webhooks:read'], 1, 'production', ['redis']),
  op('webhooks.get', 'GET', '/v2/webhooks/{webhook_id}', 'api_key', ['webhooks:read'], 1, 'production', ['redis']),
  op('webhooks.delete', 'DELETE', '/v2/webhooks/{webhook_id}', 'api_key', ['webhooks:write'], 1, 'production', ['redis']),
  op('webhooks.deliveries.list', 'GET', '/v2/webhooks/{webhook_id}/deliveries', 'api_key', ['webhooks:read'], 2, 'production', ['redis']),
  // docs/design.md §15: management. Only a rotation seals a new secret, so only it needs the secret key.
  op('webhooks.update', 'PATCH', '/v2/webhooks/{webhook_id}', 'api_key', ['webhooks:write'], 1, 'production', ['redis']),
  op('webhooks.rotate_secret', 'POST', '/v2/webhooks/{webhook_id}/rotate-secret', 'api_key', ['webhooks:write'], 2, 'production', [
    'redis',
    'webhook_secret_key',
  ]),
  op('webhooks.test', 'POST', '/v2/webhooks/{webhook_id}/test', 'api_key', ['webhooks:write'], 2, 'production', ['redis']),
  op('webhooks.deliveries.retry', 'POST', '/v2/webhooks/{webhook_id}/deliveries/{delivery_id}/retry', 'api_key', ['webhooks:write'], 2, 'production', [
    'redis',
  ]),
  op('renders.create', 'POST', '/v2/renders', 'api_key', ['media:write'], 20, 'production', ['redis', 'chromium']),
  op('renders.get', 'GET', '/v2/renders/{render_id}', 'api_key', ['media:read'], 1, 'production', ['redis']),
  op('trade_intents.create', 'POST', '/v2/trade-intents', 'api_key', ['trade:write'], 5, 'production', ['redis']),
  // docs/design.md §10: media:write creates and updates scenes, renders and viewer sessions.
  op('viewer_sessions.create', 'POST', '/v2/viewer/sessions', 'api_key', ['media:write'], 2, 'production', ['redis']),
  op('inspect.decode', 'POST', '/v2/inspect/decode', 'api_key', ['inspect:read'], 1, 'production', ['redis']),
  op('prices.get', 'GET', '/v2/prices/{catalog_id}', 'api_key', ['prices:read'], 1, 'production', ['redis']),
  op('prices.history', 'GET', '/v2/prices/{catalog_id}/history', 'api_key', ['prices:read'], 3, 'production', ['redis']),
  // docs/design.md §15: the price stream, metered once per connection; both read the Redis stream.
  op('prices.stream', 'GET', '/v2/prices/stream', 'api_key', ['prices:read'], 5, 'production', ['redis']),
  op('prices.public.stream', 'GET', '/v1/prices/stream', 'public', [], 0, 'production', ['redis']),
  op('catalog.items.list', 'GET', '/v2/catalog/items', 'api_key', ['catalog:read'], 2, 'production', ['redis']),
  op('market_index.get', 'GET', '/v2/market-index/cs2', 'api_key', ['market:read'], 2, 'production', ['redis']),
  op('market_index.history', 'GET', '/v2/market-index/cs2/history', 'api_key', ['market:read'], 2, 'production', ['redis']),
  op('market_index.constituents', 'GET', '/v2/market-index/cs2/calculations/{calculation_id}/constituents', 'api_key', ['market:read'], 2, 'production', [
    'redis',
  ]),
  op('market.summary', 'GET', '/v2/market/summary', 'api_key', ['market:read'], 5, 'production', ['redis']),
  op('inventories.get', 'GET', '/v2/inventories/{gameplatform_id}', 'api_key', ['inventory:read'], 10, 'production', ['redis']),
  op('profiles.get', 'GET', '/v2/profiles/{gameplatform_id}', 'api_key', ['profiles:read'], 3, 'production', ['redis', 'steam_web_api_key']),
  op('gameplatform_accounts.list', 'GET', '/v2/gameplatform/accounts', 'api_key', ['accounts:read'], 1, 'production', ['redis']),
  op('gameplatform_accounts.connect', 'POST', '/v2/gameplatform/accounts/connect', 'api_key', ['accounts:write'], 2, 'production', ['redis']),
  op('gameplatform_accounts.delete', 'DELETE', '/v2/gameplatform/accounts/{account_id}', 'api_key', ['accounts:write'], 1, 'production', ['redis']),
  // docs/design.md §17: owner tokens. Only setting one seals, so only it needs the secret key.
  op('gameplatform_accounts.steam_token.set', 'PUT', '/v2/gameplatform/accounts/{account_id}/steam-token', 'api_key', ['accounts:write'], 1, 'production', [
    'redis',
    'webhook_secret_key',
  ]),
  op(
    'gameplatform_accounts.steam_token.delete',
    'DELETE',
    '/v2/gameplatform/accounts/{account_id}/steam-token',
    'api_key',
    ['accounts:write'],
    1,
    'production',
    ['redis'],
  ),
  // docs/design.md §17: trades stored by the trade-history poll, and a counterparty's counts over the workspace's accounts.
  op('gameplatform_accounts.trades.list', 'GET', '/v2/gameplatform/accounts/{account_id}/trades', 'api_key', ['accounts:read'], 1, 'production', ['redis']),
  op('gameplatform_counterparties.get', 'GET', '/v2/gameplatform/counterparties/{gameplatform_id}', 'api_key', ['accounts:read'], 1, 'production', ['redis']),
  op('gameplatform.openid.callback', 'GET', '/v2/gameplatform/openid/callback', 'public', [], 0, 'production'),
  op('trade_intents.list', 'GET', '/v2/trade-intents', 'api_key', ['trade:read'], 1, 'production', ['redis']),
  op('trade_intents.get', 'GET', '/v2/trade-intents/{trade_intent_id}', 'api_key', ['trade:read'], 1, 'production', ['redis']),
  op('trade_intents.cancel', 'POST', '/v2/trade-intents/{trade_intent_id}/cancel', 'api_key', ['trade:write'], 2, 'production', ['redis']),
] as const satisfies readonly Operation[];

export type OperationId = (typeof OPERATIONS)[number]['id'];

const byId = new Map<string, Operation>(OPERATIONS.map((operation) => [operation.id, operation]));

export function operation(id: OperationId): Operation {
  const found = byId.get(id);
  if (!found) throw new Error(`unknown operation ${id}`);
  return found;
}

/** The unit weights of every metered operation (GET /v2/usage). */
export function unitWeights(): Record<string, number> {
  return Object.fromEntries(OPERATIONS.filter((o) => o.auth === 'api_key').map((o) => [o.id, o.units]));
}
