import { Elysia } from 'elysia';
import { z } from 'zod';
import { counterpartySchema, getCounterparty, listAccountTrades, TRADE_STATUSES, tradeSchema } from '../../shared/gameplatform/trades.ts';
import type { TradePosition } from '../../shared/gameplatform/trades-repository.ts';
import { decodeCursor, encodeCursor } from '../../shared/http/cursor.ts';
import { cursorInstant, integerPathParam, pageCursor, pageLimit } from '../../shared/http/validation.ts';
import type { AppDeps } from '../deps.ts';
import { routeResponses } from '../openapi.ts';
import { type ApiKeyPluginDeps, apiKeyPlugin } from '../plugins/api-key.ts';
import { checkGameplatformId, gameplatformIdParams } from './profiles.ts';

export const TRADE_PAGE_LIMIT = { default: 50, max: 200 } as const;
const BIGINT_MAX = 9_223_372_036_854_775_807n;

const accountParams = z.object({ account_id: integerPathParam(BIGINT_MAX, 'The integer account_id of a connected account', (value) => value) });
const listQuery = z
  .object({
    status: z
      .enum(TRADE_STATUSES)
      .optional()
      .describe('Only trades with this Steam status (e.g. `trade_protection_rollback` for reversed trades, `committed` for those still protected)'),
    limit: pageLimit(TRADE_PAGE_LIMIT),
    cursor: pageCursor,
  })
  .strict();
const position: z.ZodType<TradePosition> = z.object({ initiated_at: cursorInstant, trade_id: z.string().regex(/^[0-9]{1,20}$/) });

/** docs/design.md §17: connected accounts' Steam trades, as the trade-history poll stored them, and counterparties. */
export function gameplatformTradeRoutes(deps: Pick<AppDeps, 'config' | 'sql' | 'log' | 'now'> & ApiKeyPluginDeps) {
  const signingKey = deps.config.SIGNING_KEY!;
  return new Elysia({ name: 'gameplatform-trade-routes' })
    .use(apiKeyPlugin(deps))
    .get(
      '/v2/gameplatform/accounts/:account_id/trades',
      async ({ principal, params, query }) => {
        // docs/interface.md §4: a cursor used with other filters (another account or status) is a 400.
        const filters = { workspace: principal.workspace.id, account_id: params.account_id, status: query.status ?? null };
        const after = query.cursor ? decodeCursor(signingKey, 'gameplatform_trades', filters, query.cursor, position) : null;
        const page = await listAccountTrades(deps.sql, principal.workspace.id, params.account_id, { status: query.status ?? null }, after, query.limit);
        return { data: page.data, next_cursor: page.next ? encodeCursor(signingKey, 'gameplatform_trades', filters, page.next) : null };
      },
      {
        operation: 'gameplatform_accounts.trades.list',
        params: accountParams,
        query: listQuery,
        detail: {
          summary: "A connected account's Steam trades, newest first",
          description: [
            "The account's Steam trades as the trade-history poll stored them (docs/design.md §17), newest first, each with `reversed` (reversed during its trade protection) and, on a return trade, `rollback_trade_id`. Trades are read only while the account has an owner access token (PUT …/steam-token) and the workspace has a webhook endpoint subscribed to `trade.reversed` or `item.protection_ended`, every `TRADE_HISTORY_INTERVAL_SECONDS` (default 600), back to 8 days before the first read; a status changes in place as Steam changes it. Without those the list is empty. Disconnecting the account deletes its trades.",
            "`limit` 1 to 200 (default 50); `status` one of Steam's trade statuses by name.",
            'Errors: 400 `invalid_request` (a malformed id, an unknown status, a limit out of range, another parameter), 400 `invalid_cursor` (a cursor not from this list with these filters), 403 `insufficient_scope` (needs accounts:read), 404 `not_found` (no connected account with this id in your workspace).',
          ].join('\n\n'),
          tags: ['game platform'],
          responses: routeResponses(
            { 200: { description: 'A page of trades', body: z.object({ data: z.array(tradeSchema), next_cursor: z.string().nullable() }) } },
            404,
          ),
        },
      },
    )
    .get(
      '/v2/gameplatform/counterparties/:gameplatform_id',
      ({ principal, params }) => getCounterparty(deps.sql, principal.workspace.id, params.gameplatform_id),
      {
        operation: 'gameplatform_counterparties.get',
        params: gameplatformIdParams,
        transform: checkGameplatformId,
        detail: {
          summary: "A Steam account's trade history with this workspace",
          description: [
            "How many trades the workspace's connected accounts made with this Steam account (SteamID64, SteamID2 or SteamID3), how many of them it reversed during their trade protection, and when it last did: counted over this workspace's stored trades only, never another workspace's (docs/design.md §17). Return trades and failed trades are not counted. A SteamID no account of the workspace traded with answers 200 with zero counts, not 404: an unknown counterparty is a fact, not a missing resource. Trade intents show the same counts as `risk`.",
            'Errors: 400 `invalid_gameplatform_id` (not a public individual account id), 403 `insufficient_scope` (needs accounts:read).',
          ].join('\n\n'),
          tags: ['game platform'],
          responses: routeResponses({ 200: { description: "The counterparty's counts with this workspace", body: counterpartySchema } }),
        },
      },
    );
}
