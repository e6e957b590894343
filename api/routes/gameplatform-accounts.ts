import { Elysia } from 'elysia';
import { z } from 'zod';
import type { AuditActor } from '../../shared/audit/events.ts';
import { type AccountPosition, connectedAccountSchema, listLiveAccounts } from '../../shared/gameplatform/accounts.ts';
import { disconnectAccount, finishConnect, type OpenIdSettings, personaNameFromProfiles, startConnect } from '../../shared/gameplatform/accounts-service.ts';
import { removeSteamToken, STEAM_TOKEN_MAX_LENGTH, setSteamToken } from '../../shared/gameplatform/steam-token.ts';
import { cancelDraftsOfAccount } from '../../shared/gameplatform/trade-intents.ts';
import { decodeCursor, encodeCursor } from '../../shared/http/cursor.ts';
import type { OperationId } from '../../shared/http/operations.ts';
import { integerPathParam, noBody, pageCursor, pageLimit } from '../../shared/http/validation.ts';
import type { ApiKeyPrincipal } from '../../shared/identity/api-keys.ts';
import { SecretKeyring } from '../../shared/webhooks/secrets.ts';
import type { AppDeps } from '../deps.ts';
import { errorResponses, responseJsonSchema, routeResponses } from '../openapi.ts';
import { type ApiKeyPluginDeps, apiKeyAuthenticator, apiKeyPlugin } from '../plugins/api-key.ts';
import { requestMetaPlugin } from '../plugins/request-meta.ts';
import { authenticateSession, type SessionPluginDeps } from '../plugins/session.ts';

export const ACCOUNT_PAGE_LIMIT = { default: 25, max: 100 } as const;
const BIGINT_MAX = 9_223_372_036_854_775_807n;

const connectStarted = z.object({
  redirect_url: z.string().describe('Send the user here: Steam sign-in, which returns to our callback'),
  state: z.string().describe('Single-use; it rides in the return URL and expires at expires_at'),
  expires_at: z.string(),
});

// The provider's positive assertion (OpenID 2.0 section 10.1), as Steam appends it to our return URL.
// Documented as the strings they are, but read from the raw URL (callbackFields bounds each one):
// Elysia's query parser splits values at commas and JSON-parses [..] and {..}, and openid.signed is
// a comma list that must reach check_authentication exactly as the provider signed it.
const openIdField = (description: string) => z.unknown().optional().meta({ type: 'string', maxLength: 2048, description });
const callbackQuery = z.object({
  state: openIdField('The state of the flow, from the return URL'),
  'openid.ns': openIdField('http://specs.openid.net/auth/2.0'),
  'openid.mode': openIdField('id_res for a signed-in user'),
  'openid.op_endpoint': openIdField('The Steam login endpoint'),
  'openid.claimed_id': openIdField('https://steamcommunity.com/openid/id/<SteamID64>'),
  'openid.identity': openIdField('Equal to claimed_id'),
  'openid.return_to': openIdField('Our callback URL with the state'),
  'openid.response_nonce': openIdField('Single-use, time-stamped'),
  'openid.assoc_handle': openIdField('Provider association handle'),
  'openid.signed': openIdField('The signed field names'),
  'openid.sig': openIdField('The provider signature'),
});

const listQuery = z.object({ limit: pageLimit(ACCOUNT_PAGE_LIMIT), cursor: pageCursor }).strict();
// A bigint identity: checked as text, so no value beyond Postgres's bigint ever reaches a query.
const accountIdText = z
  .string()
  .max(19)
  .refine((value) => /^[1-9][0-9]{0,18}$/.test(value) && BigInt(value) <= BIGINT_MAX, 'must be a positive integer of at most 9223372036854775807');
const accountParams = z.object({ account_id: integerPathParam(BIGINT_MAX, 'The integer account_id of a connected account', (value) => value) });
const position: z.ZodType<AccountPosition> = z.object({ account_id: accountIdText });
// The token's value is checked by shared/gameplatform/steam-token.ts, so that every bad token (a
// megabyte, NUL, lone surrogates, not a JWT) is one 400 invalid_steam_token that never echoes it.
const steamTokenBody = z
  .object({
    token: z.string().meta({
      maxLength: STEAM_TOKEN_MAX_LENGTH,
      description: "The owner's Steam web API access token (`webapi_token`, a JWT whose `sub` is the account's SteamID64 and whose `exp` is in the future)",
    }),
  })
  .strict();

const connectedPage = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Steam account connected</title></head>
<body><p>Steam account connected, you can close this window.</p></body></html>
`;

/** Whether the client asked for JSON rather than a page: a browser's Accept names text/html. */
function wantsJson(accept: string | null): boolean {
  if (!accept) return false;
  const lower = accept.toLowerCase();
  return lower.includes('application/json') && !lower.includes('text/html');
}

/**
 * `keyOrSession: '<operation>'`: docs/design.md §11 lets connect be started with a key holding
 * accounts:write or with the account's own session (a web app that signs users in can offer
 * "connect Steam" without minting a key). A key, when sent, goes through every check of
 * `operation:` (scope, metering); otherwise the session is required.
 */
/** Who started a connect flow: the workspace and the audit actor. */
type Connector = { workspaceId: string; actor: AuditActor };

function keyOrSessionPlugin(deps: ApiKeyPluginDeps & SessionPluginDeps) {
  const { authenticate } = apiKeyAuthenticator(deps);
  return new Elysia({ name: 'key-or-session' }).macro({
    keyOrSession: (operationId: OperationId) => ({
      detail: { security: [{ apiKey: [] }, { session: [] }, { sessionCookie: [] }], responses: errorResponses(401, 403, 429, 503) },
      async resolve({ request, set }): Promise<{ principal: ApiKeyPrincipal | undefined; operationId: OperationId; connector: Connector }> {
        if (request.headers.get('x-api-key')) {
          const { principal } = await authenticate(operationId, request, set);
          return { principal, operationId, connector: { workspaceId: principal.workspace.id, actor: { type: 'api_key', id: principal.keyId } } };
        }
        const session = await authenticateSession(deps, request);
        return { principal: undefined, operationId, connector: { workspaceId: session.workspaceId, actor: { type: 'account', id: session.accountId } } };
      },
    }),
  });
}

/** docs/design.md §11: Steam accounts connected to the workspace through Steam OpenID 2.0. */
export function gameplatformAccountRoutes(deps: Pick<AppDeps, 'config' | 'sql' | 'log' | 'now'> & ApiKeyPluginDeps & SessionPluginDeps) {
  const signingKey = deps.config.SIGNING_KEY!;
  const settings: OpenIdSettings = { steamCommunityUrl: deps.config.STEAM_COMMUNITY_URL, stateTtlSeconds: deps.config.OPENID_STATE_TTL_SECONDS };
  // Under PUBLIC_BASE_URL, or the request's own origin when it is unset (development), as export downloads are.
  const baseUrlOf = (request: Request) => deps.config.PUBLIC_BASE_URL ?? new URL(request.url).origin;
  const personaName = personaNameFromProfiles(deps);
  const keyring = SecretKeyring.fromConfig(deps.config);
  const writer = (principal: ApiKeyPrincipal, requestMeta: { requestId: string; now: Date }) => ({
    ...requestMeta,
    workspaceId: principal.workspace.id,
    actor: { type: 'api_key' as const, id: principal.keyId },
  });

  return new Elysia({ name: 'gameplatform-account-routes' })
    .use(apiKeyPlugin(deps))
    .use(requestMetaPlugin(deps))
    .use(keyOrSessionPlugin(deps))
    .post(
      '/v2/gameplatform/accounts/connect',
      async ({ connector, request, requestMeta, set }) => {
        const started = await startConnect(deps.sql, settings, baseUrlOf(request), { ...requestMeta, ...connector });
        set.status = 201;
        return started;
      },
      {
        keyOrSession: 'gameplatform_accounts.connect',
        body: noBody,
        detail: {
          summary: 'Start connecting a Steam account',
          description: [
            'Starts a Steam OpenID 2.0 sign-in and answers 201 with `redirect_url` (send the user there) and its single-use `state`, valid for `OPENID_STATE_TTL_SECONDS` (default 600). Steam returns the user to GET /v2/gameplatform/openid/callback, which connects the account to the workspace of the key or session that started the flow. No body, or `{}`.',
            'Errors: 400 `invalid_request` (any other body).',
          ].join('\n\n'),
          tags: ['game platform'],
          responses: routeResponses({ 201: { description: 'Flow started; send the user to redirect_url', body: connectStarted } }),
        },
      },
    )
    .get(
      '/v2/gameplatform/openid/callback',
      async ({ request, requestMeta, set }) => {
        const account = await finishConnect(
          { sql: deps.sql, log: deps.log, settings, personaName },
          new URL(request.url).searchParams,
          baseUrlOf(request),
          requestMeta,
        );
        if (wantsJson(request.headers.get('accept'))) return account;
        set.headers['content-type'] = 'text/html; charset=utf-8';
        return connectedPage;
      },
      {
        query: callbackQuery,
        detail: {
          summary: 'Steam OpenID return: connect the account',
          description: [
            'Where Steam sends the user back: checks the signed OpenID assertion (the `state` of a live connect flow, a nonce used only once, and a confirmation from Steam), then connects the Steam account to the workspace that started the flow and answers a page saying so, or the account as JSON with `Accept: application/json`.',
            'Errors: 400 `invalid_openid_response` on any failed check (expired or used state, replayed nonce, unconfirmed assertion: start the connection again), 503 `upstream_unavailable` (Steam could not confirm the sign-in).',
          ].join('\n\n'),
          tags: ['game platform'],
          responses: {
            200: {
              description: 'Connected: a page saying so, or the account as JSON with Accept: application/json',
              content: { 'application/json': { schema: responseJsonSchema(connectedAccountSchema) }, 'text/html': { schema: { type: 'string' } } },
            },
            ...errorResponses(503),
          },
        },
      },
    )
    .get(
      '/v2/gameplatform/accounts',
      async ({ principal, query }) => {
        const filters = { workspace: principal.workspace.id };
        const after = query.cursor ? decodeCursor(signingKey, 'gameplatform_accounts', filters, query.cursor, position) : null;
        const page = await listLiveAccounts(deps.sql, principal.workspace.id, after, query.limit);
        return { data: page.accounts, next_cursor: page.next ? encodeCursor(signingKey, 'gameplatform_accounts', filters, page.next) : null };
      },
      {
        operation: 'gameplatform_accounts.list',
        query: listQuery,
        detail: {
          summary: 'Connected Steam accounts, newest first',
          description: ['Steam accounts connected to the workspace, newest first.', '`limit` 1 to 100 (default 25).', 'Errors: 400 `invalid_cursor`.'].join(
            '\n\n',
          ),
          tags: ['game platform'],
          responses: routeResponses({
            200: { description: 'A page of connected accounts', body: z.object({ data: z.array(connectedAccountSchema), next_cursor: z.string().nullable() }) },
          }),
        },
      },
    )
    .delete(
      '/v2/gameplatform/accounts/:account_id',
      async ({ principal, params, requestMeta, set }) => {
        await disconnectAccount(deps.sql, params.account_id, async (tx, accountId, meta) => (await cancelDraftsOfAccount(tx, accountId, meta)).length, {
          ...requestMeta,
          workspaceId: principal.workspace.id,
          actor: { type: 'api_key', id: principal.keyId },
        });
        set.status = 204;
      },
      {
        operation: 'gameplatform_accounts.delete',
        params: accountParams,
        detail: {
          summary: 'Disconnect a Steam account',
          description: [
            'Disconnects the account and answers 204: its draft trade intents are cancelled and their reservations released, and its Steam access token (if set) is destroyed.',
            'Errors: 404 `not_found` (no connected account with this id in your workspace).',
          ].join('\n\n'),
          tags: ['game platform'],
          responses: routeResponses({ 204: 'Disconnected' }, 404),
        },
      },
    )
    .put(
      '/v2/gameplatform/accounts/:account_id/steam-token',
      async ({ principal, params, body, requestMeta }) => setSteamToken(deps.sql, keyring, params.account_id, body.token, writer(principal, requestMeta)),
      {
        operation: 'gameplatform_accounts.steam_token.set',
        params: accountParams,
        body: steamTokenBody,
        detail: {
          summary: "Set the account owner's Steam access token",
          description: [
            "Stores the owner's Steam web API access token for this account (opt-in; docs/design.md §17) and answers 200 with the account, whose `steam_token` shows only `expires_at`. The token is never returned, logged or put in audit records, and is stored encrypted (AES-256-GCM under `WEBHOOK_SECRET_KEY`). A second PUT replaces the token (no Idempotency-Key). Reads of this account use it while it lives; when it expires or Steam refuses it, it is dropped (audit event `steam_token.dropped`) and reads fall back to the public ones. It is destroyed when the account is disconnected.",
            "The token must be a JWT whose payload has `sub` equal to the account's SteamID64 and `exp` (seconds) in the future. Its signature is not checked: Steam signs it with a key of its own, so only Steam can.",
            'Errors: 400 `invalid_request` (a malformed id, a body without `token` or with other fields), 400 `invalid_steam_token` (not a JWT of at most 4096 characters, `sub` another account, expired; `details[0].code` is `malformed`, `wrong_subject` or `expired`; the token is never echoed), 403 `insufficient_scope` (needs accounts:write), 404 `not_found` (no connected account with this id in your workspace), 503 `secret_storage_unavailable` (`WEBHOOK_SECRET_KEY` is not configured).',
          ].join('\n\n'),
          tags: ['game platform'],
          responses: routeResponses({ 200: { description: 'Stored; the account with steam_token.expires_at', body: connectedAccountSchema } }, 404),
        },
      },
    )
    .delete(
      '/v2/gameplatform/accounts/:account_id/steam-token',
      async ({ principal, params, requestMeta, set }) => {
        await removeSteamToken(deps.sql, params.account_id, writer(principal, requestMeta));
        set.status = 204;
      },
      {
        operation: 'gameplatform_accounts.steam_token.delete',
        params: accountParams,
        detail: {
          summary: "Remove the account owner's Steam access token",
          description: [
            'Destroys the stored token and answers 204; reads of this account fall back to the public ones. Also 204 when no token is set (nothing to remove, no audit event).',
            'Errors: 400 `invalid_request` (malformed id), 403 `insufficient_scope` (needs accounts:write), 404 `not_found` (no connected account with this id in your workspace).',
          ].join('\n\n'),
          tags: ['game platform'],
          responses: routeResponses({ 204: 'Removed, or none was set' }, 404),
        },
      },
    );
}
