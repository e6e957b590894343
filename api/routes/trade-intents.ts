import { Elysia } from 'elysia';
import { z } from 'zod';
import { cancelTradeIntent, createTradeIntent } from '../../shared/gameplatform/trade-intents.ts';
import { steamTradeInventory, type TradeInventory } from '../../shared/gameplatform/trade-intents-inventory.ts';
import {
  DEFAULT_VALUATION_MARKETPLACE,
  TRADE_ASSETS_PER_SIDE_MAX,
  TRADE_INTENT_KINDS,
  TRADE_INTENT_STATES,
  TRADE_MESSAGE_MAX_LENGTH,
  type TradeIntent,
  type TradeIntentPosition,
  toTradeIntent,
  tradeIntentSchema,
} from '../../shared/gameplatform/trade-intents-model.ts';
import { findTradeIntent, listTradeIntents } from '../../shared/gameplatform/trade-intents-repository.ts';
import { decodeCursor, encodeCursor } from '../../shared/http/cursor.ts';
import { errors } from '../../shared/http/errors.ts';
import { cursorInstant, dateTime, noBody, pageCursor, pageLimit, text, uuid } from '../../shared/http/validation.ts';
import type { ApiKeyPrincipal } from '../../shared/identity/api-keys.ts';
import { SOURCE_NAMES } from '../../shared/platform/source-names.ts';
import { type Conversion, currencyParam, resolveConversion } from '../../shared/prices/currency.ts';
import type { AppDeps } from '../deps.ts';
import { routeResponses } from '../openapi.ts';
import { type ApiKeyPluginDeps, apiKeyPlugin } from '../plugins/api-key.ts';
import { type IdempotencyPluginDeps, idempotencyPlugin } from '../plugins/idempotency.ts';
import { type RequestMeta, requestMetaPlugin } from '../plugins/request-meta.ts';

// Steam asset ids are unsigned 64-bit integers written in decimal.
const assetId = z.string().regex(/^[0-9]{1,20}$/, 'must be a Steam asset id (decimal digits)');
const assetList = (side: string) =>
  z.array(assetId).max(TRADE_ASSETS_PER_SIDE_MAX).optional().describe(`Asset ids this account ${side} (create_offer only; 0 to ${TRADE_ASSETS_PER_SIDE_MAX})`);

// The shape is checked here (400 invalid_request); the rules of docs/design.md §11 (kind and the fields it
// needs, account, expiry, target, assets, policy) are checked in that order by the service, each a
// 400 invalid_intent, so `kind` is plain text here rather than an enum.
const createBody = z
  .object({
    kind: text({ min: 1, max: 32 }).describe(`One of ${TRADE_INTENT_KINDS.join(', ')}`),
    account_id: z.number().int().min(1).max(Number.MAX_SAFE_INTEGER).describe('A connected game-platform account of the workspace'),
    external_reference: text({ min: 1, max: 128 }).describe('Your reference, unique in the workspace'),
    expires_at: dateTime.describe('When the draft expires and releases its reservations: in the future, at most 14 days ahead'),
    message: text({ max: TRADE_MESSAGE_MAX_LENGTH }).optional().describe('Message for the trade partner'),
    partner_steam_id: text({ min: 1, max: 32 }).optional().describe('create_offer: the partner, SteamID64, SteamID2 or SteamID3'),
    give: assetList('gives'),
    receive: assetList('receives'),
    target_trade_id: uuid('accept_offer: a draft create_offer whose partner is this account').optional(),
    valuation_marketplace: z
      .enum(SOURCE_NAMES)
      .optional()
      .describe(`Marketplace whose latest prices value both sides (default ${DEFAULT_VALUATION_MARKETPLACE})`),
  })
  .strict();
const listQuery = z
  .object({
    state: z.enum(TRADE_INTENT_STATES).optional(),
    limit: pageLimit({ max: 100, default: 25 }),
    cursor: pageCursor,
    currency: currencyParam.optional(),
  })
  .strict();
const currencyQuery = z.object({ currency: currencyParam.optional() }).strict();

/**
 * A trade intent with its valuation (stored in USD at creation) in the requested currency: each
 * side's total converted once, `currency` and `fx` at the top (docs/design.md §14).
 */
function inCurrency(intent: TradeIntent, conversion: Conversion | null): TradeIntent {
  if (!conversion) return intent;
  const valuation = {
    ...intent.valuation,
    give_total: conversion.convert(intent.valuation.give_total),
    receive_total: conversion.convert(intent.valuation.receive_total),
    currency: conversion.currency,
  };
  return { ...intent, valuation, currency: conversion.currency, fx: conversion.fx };
}
const intentParams = z.object({ trade_intent_id: uuid('The trade intent id (uuid)') });
const position: z.ZodType<TradeIntentPosition> = z.object({ id: uuid('trade intent id'), created_at: cursorInstant });

const notFound = () => errors.notFound('No trade intent with this id in your workspace.');

export type TradeIntentRouteDeps = Pick<AppDeps, 'config' | 'sql' | 'log' | 'now'> &
  ApiKeyPluginDeps &
  IdempotencyPluginDeps & {
    /** Where the asset check reads owners' inventories; inventory/snapshots.ts (stored, else Steam) when not given. */
    tradeInventory?: TradeInventory;
  };

/** docs/design.md §11: trade intents, drafts that reserve their outgoing assets. */
export function tradeIntentRoutes(deps: TradeIntentRouteDeps) {
  const signingKey = deps.config.SIGNING_KEY!;
  const inventory = deps.tradeInventory ?? steamTradeInventory(deps);
  const meta = (principal: ApiKeyPrincipal, requestMeta: RequestMeta) => ({
    ...requestMeta,
    workspaceId: principal.workspace.id,
    actor: { type: 'api_key' as const, id: principal.keyId },
  });

  return new Elysia({ name: 'trade-intent-routes' })
    .use(apiKeyPlugin(deps))
    .use(idempotencyPlugin(deps))
    .use(requestMetaPlugin(deps))
    .post(
      '/v2/trade-intents',
      async ({ principal, body, query, set, requestMeta }) => {
        const conversion = await resolveConversion(deps.sql, query.currency);
        const intent = await createTradeIntent({ sql: deps.sql, inventory, maxValueUsd: deps.config.TRADE_MAX_VALUE_USD }, body, meta(principal, requestMeta));
        set.status = 201;
        return inCurrency(intent, conversion);
      },
      {
        operation: 'trade_intents.create',
        query: currencyQuery,
        idempotent: { operation: 'trade_intents.create', required: true },
        body: createBody,
        detail: {
          summary: 'Create a draft trade intent',
          description: [
            'A draft trade between a connected account of the workspace and a partner, which reserves its outgoing assets until it expires or is cancelled. `kind` is `create_offer` (to `partner_steam_id`, with `give` and `receive`: up to 256 asset ids each) or `accept_offer` (`target_trade_id`: an open create_offer draft addressed to this account).',
            'The checks, in this order, each a 400 `invalid_intent` naming the field: the kind and its fields; the account; `expires_at` (in the future, at most 14 days ahead); the target; the assets (owned and tradable in an inventory at most 10 minutes old; a protected asset on either side, trade-protected or listed on the Community Market (docs/design.md §17), is refused with a detail of `code` `asset_protected`); the policy (neither side worth more than `TRADE_MAX_VALUE_USD`, default 10 000, at `valuation_marketplace`). The valuation is stored in USD.',
            'Requires an `Idempotency-Key`.',
            "Errors: 400 `invalid_intent`, 400 `idempotency_key_required`, 409 `asset_reserved` (another draft reserves an outgoing asset), 409 `external_reference_conflict`, 409 `target_offer_conflict`, 409 `idempotency_key_reused` or `idempotency_key_in_use`, 503 `upstream_unavailable` (an owner's inventory cannot be fetched from Steam).",
          ].join('\n\n'),
          tags: ['trade'],
          responses: routeResponses(
            { 201: { description: 'Draft created; its outgoing assets are reserved until it expires or is cancelled', body: tradeIntentSchema } },
            409,
            503,
          ),
        },
      },
    )
    .get(
      '/v2/trade-intents',
      async ({ principal, query }) => {
        const conversion = await resolveConversion(deps.sql, query.currency);
        // docs/interface.md §4: the cursor binds the workspace and the state filter, not the page size.
        const filters = { workspace: principal.workspace.id, state: query.state ?? null };
        const after = query.cursor ? decodeCursor(signingKey, 'trade_intents', filters, query.cursor, position) : null;
        const page = await listTradeIntents(deps.sql, principal.workspace.id, { state: query.state }, after, query.limit);
        return {
          data: page.rows.map((row) => inCurrency(toTradeIntent(row), conversion)),
          next_cursor: page.next ? encodeCursor(signingKey, 'trade_intents', filters, page.next) : null,
        };
      },
      {
        operation: 'trade_intents.list',
        query: listQuery,
        response: { 200: z.object({ data: z.array(tradeIntentSchema), next_cursor: z.string().nullable() }) },
        detail: {
          summary: 'Trade intents, newest first',
          description: [
            'Trade intents of the workspace, newest first, optionally only those in `state`; `currency` converts each valuation (stored in USD at creation).',
            '`limit` 1 to 100 (default 25).',
            'Errors: 400 `invalid_cursor`, 503 `fx_unavailable`.',
          ].join('\n\n'),
          tags: ['trade'],
          responses: routeResponses({}, 503),
        },
      },
    )
    .get(
      '/v2/trade-intents/:trade_intent_id',
      async ({ principal, params, query }) => {
        const conversion = await resolveConversion(deps.sql, query.currency);
        const row = await findTradeIntent(deps.sql, principal.workspace.id, params.trade_intent_id);
        if (!row) throw notFound();
        return inCurrency(toTradeIntent(row), conversion);
      },
      {
        operation: 'trade_intents.get',
        params: intentParams,
        query: currencyQuery,
        response: { 200: tradeIntentSchema },
        detail: {
          summary: 'One trade intent',
          description: [
            'One trade intent with its reservations and valuation; `currency` converts the valuation.',
            'Errors: 404 `not_found` (no such trade intent in your workspace), 503 `fx_unavailable`.',
          ].join('\n\n'),
          tags: ['trade'],
          responses: routeResponses({}, 404, 503),
        },
      },
    )
    .post(
      '/v2/trade-intents/:trade_intent_id/cancel',
      async ({ principal, params, requestMeta }) => cancelTradeIntent(deps.sql, params.trade_intent_id, meta(principal, requestMeta)),
      {
        operation: 'trade_intents.cancel',
        // Optional: with a key, a retried cancel replays its 200 instead of a 409 for the now-cancelled intent.
        idempotent: { operation: 'trade_intents.cancel', required: false },
        params: intentParams,
        body: noBody,
        response: { 200: tradeIntentSchema },
        detail: {
          summary: 'Cancel a draft trade intent',
          description: [
            'Cancels a draft, releases its reservations and answers the intent. No body, or `{}`. An `Idempotency-Key` is optional.',
            'Errors: 404 `not_found`, 409 `intent_not_cancellable` (only a draft can be cancelled).',
          ].join('\n\n'),
          tags: ['trade'],
          responses: routeResponses({}, 404, 409),
        },
      },
    );
}
