import { type AuditActor, insertAuditEvent } from '../audit/events.ts';
import { ApiError, errors } from '../http/errors.ts';
import type { Queryable, Sql } from '../platform/db.ts';
import type { Logger } from '../platform/logger.ts';
import { randomToken } from '../util/crypto.ts';
import {
  type ConnectedAccount,
  consumeOpenIdState,
  disconnectLiveAccount,
  findOpenIdState,
  insertOpenIdState,
  insertOrFindLiveAccount,
  type OpenIdState,
  recordOpenIdNonce,
} from './accounts.ts';
import {
  callbackFields,
  checkAssertion,
  checkidSetupUrl,
  confirmWithProvider,
  loginUrl,
  OpenIdProviderUnavailableError,
  OpenIdRejectedError,
  type OpenIdRejection,
} from './openid.ts';
import { getProfile, type ProfileDeps } from './profiles.ts';
import { destroyTokenOfAccount } from './steam-token.ts';
import { deleteTradesOfAccount } from './trades-repository.ts';

/**
 * Connected accounts (docs/design.md §11): starting a Steam OpenID flow, finishing it at the public
 * callback, and disconnecting. Every change records its audit event (source `gameplatform`) in
 * the transaction that makes it; refused callbacks are recorded as rejected on the flow's
 * workspace when the state names one (docs/design.md §7).
 */

type RequestMeta = { workspaceId: string; actor: AuditActor; requestId: string; now: Date };
export type OpenIdSettings = { steamCommunityUrl: string; stateTtlSeconds: number };

const STATE_MAX_LENGTH = 128;

const invalidOpenIdResponse = () =>
  new ApiError(400, 'invalid_openid_response', 'The Steam sign-in response is invalid, expired or was already used; start the connection again.');

export type ConnectStart = { redirect_url: string; state: string; expires_at: string };

/** A new single-use state and the Steam sign-in URL that carries it back to `baseUrl`'s callback. */
export async function startConnect(sql: Sql, settings: OpenIdSettings, baseUrl: string, meta: RequestMeta): Promise<ConnectStart> {
  const state = randomToken(32);
  const expiresAt = new Date(meta.now.getTime() + settings.stateTtlSeconds * 1000);
  await insertOpenIdState(sql, { state, workspaceId: meta.workspaceId, actor: meta.actor, requestId: meta.requestId, createdAt: meta.now, expiresAt });
  return { redirect_url: checkidSetupUrl(settings.steamCommunityUrl, baseUrl, state), state, expires_at: expiresAt.toISOString() };
}

export type CallbackDeps = {
  sql: Sql;
  log: Logger;
  settings: OpenIdSettings;
  /** The provider's check_authentication is asked through this (tests count the calls). */
  fetch?: typeof fetch;
  /** A persona name for a newly connected Steam account, or null; never throws. */
  personaName?: (steamId: string) => Promise<string | null>;
};

/**
 * Finishes a flow from the provider's redirect back to us. Cheap checks first (no database, no
 * network), then the state is consumed (one UPDATE: of racing callbacks one wins), the nonce
 * recorded (a replay is refused even when the provider would vouch for it), and only then is the
 * provider asked to confirm its signature. Any refusal is a 400 `invalid_openid_response` and no
 * account; a provider that cannot answer is a 503 `upstream_unavailable`.
 */
export async function finishConnect(
  deps: CallbackDeps,
  query: URLSearchParams,
  baseUrl: string,
  meta: { requestId: string; now: Date },
): Promise<ConnectedAccount> {
  const opEndpoint = loginUrl(deps.settings.steamCommunityUrl);
  let flow: OpenIdState | null = null;
  let stateText: string | null = null;
  try {
    const { state, fields } = callbackFields(query);
    stateText = state !== null && state.length <= STATE_MAX_LENGTH ? state : null;
    const assertion = checkAssertion(stateText, fields, { opEndpoint, baseUrl, now: meta.now });
    flow = await consumeOpenIdState(deps.sql, assertion.state, meta.now);
    if (!flow) throw new OpenIdRejectedError(await whyStateRefused(deps.sql, assertion.state, meta.now));
    if (!(await recordOpenIdNonce(deps.sql, assertion.nonce, meta.now))) throw new OpenIdRejectedError('replayed_nonce');
    if (!(await confirmWithProvider(opEndpoint, assertion.fields, deps.fetch))) throw new OpenIdRejectedError('signature_not_confirmed');
    const personaName = deps.personaName ? await deps.personaName(assertion.steamId) : null;
    const connectedFlow = flow;
    return await deps.sql.begin(async (tx) => {
      const { account, created } = await insertOrFindLiveAccount(tx, {
        workspaceId: connectedFlow.workspace_id,
        steamId: assertion.steamId,
        personaName,
        connectedAt: meta.now,
      });
      await insertAuditEvent(tx, {
        workspaceId: connectedFlow.workspace_id,
        source: 'gameplatform',
        eventType: 'account.connected',
        resourceType: 'gameplatform_account',
        resourceId: String(account.account_id),
        outcome: 'succeeded',
        actor: connectedFlow.actor,
        requestId: meta.requestId,
        occurredAt: meta.now,
        metadata: { steam_id: account.steam_id, already_connected: !created, connect_request_id: connectedFlow.request_id },
      });
      return account;
    });
  } catch (error) {
    if (error instanceof OpenIdRejectedError) {
      await recordRejection(deps, flow ?? (stateText ? await findOpenIdState(deps.sql, stateText) : null), error.reason, meta);
      throw invalidOpenIdResponse();
    }
    if (error instanceof OpenIdProviderUnavailableError) {
      deps.log.warn({ err: error.message, request_id: meta.requestId }, 'Steam OpenID check_authentication unavailable');
      throw errors.unavailable('upstream_unavailable', 'Steam could not confirm the sign-in right now; start the connection again shortly.');
    }
    throw error;
  }
}

/**
 * The persona name from the profile cache, fetched when missing or old (docs/design.md §11 profiles). The
 * name is a courtesy: when profiles cannot answer (no Web API key, Steam down, no such profile)
 * the account is connected with a null name rather than refused.
 */
export function personaNameFromProfiles(deps: ProfileDeps): (steamId: string) => Promise<string | null> {
  return async (steamId) => {
    try {
      return (await getProfile(deps, steamId)).persona_name;
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      deps.log.info({ steam_id: steamId, code: error.code }, 'persona name unavailable for a connected account');
      return null;
    }
  };
}

/** Why consuming a state failed, for the audit record: unknown and used look alike to the client. */
async function whyStateRefused(db: Queryable, state: string, now: Date): Promise<OpenIdRejection> {
  const found = await findOpenIdState(db, state);
  return found && !found.used_at && found.expires_at <= now ? 'expired_state' : 'unknown_or_used_state';
}

/** docs/design.md §7: a refused callback is recorded on the workspace that started the flow, when known. */
async function recordRejection(deps: CallbackDeps, flow: OpenIdState | null, reason: OpenIdRejection, meta: { requestId: string; now: Date }): Promise<void> {
  deps.log.info({ reason, request_id: meta.requestId, known_state: flow !== null }, 'OpenID callback refused');
  if (!flow) return;
  await insertAuditEvent(deps.sql, {
    workspaceId: flow.workspace_id,
    source: 'gameplatform',
    eventType: 'account.connected',
    resourceType: 'gameplatform_account',
    outcome: 'rejected',
    actor: flow.actor,
    requestId: meta.requestId,
    occurredAt: meta.now,
    metadata: { status: 400, reason, connect_request_id: flow.request_id },
  });
}

/**
 * What disconnecting does to the account's trade drafts, inside the disconnect's transaction:
 * cancels them and releases their reservations, returning how many were cancelled (the route
 * passes trade-intents' cancelDraftsOfAccount; accounts stay independent of trade intents).
 */
export type CancelDrafts = (tx: Queryable, accountId: string, meta: RequestMeta) => Promise<number>;

/**
 * Ends a live connection of the workspace (404 otherwise, another workspace's included), cancels
 * its draft trade intents and releases their reservations, destroys its owner token and deletes
 * its stored trade history (docs/design.md §17), and records `account.disconnected`, all in one transaction.
 */
export async function disconnectAccount(sql: Sql, accountId: string, cancelDrafts: CancelDrafts, meta: RequestMeta): Promise<void> {
  await sql.begin(async (tx) => {
    const account = await disconnectLiveAccount(tx, meta.workspaceId, accountId, meta.now);
    if (!account) throw errors.notFound('No connected account with this id in your workspace.');
    const cancelled = await cancelDrafts(tx, accountId, meta);
    // Named without "token": audit listings redact any metadata key containing it.
    const tokenDestroyed = await destroyTokenOfAccount(tx, accountId);
    // docs/design.md §17: the trade history only the token could read goes with it.
    const tradesDeleted = await deleteTradesOfAccount(tx, accountId);
    await insertAuditEvent(tx, {
      workspaceId: meta.workspaceId,
      source: 'gameplatform',
      eventType: 'account.disconnected',
      resourceType: 'gameplatform_account',
      resourceId: accountId,
      outcome: 'succeeded',
      actor: meta.actor,
      requestId: meta.requestId,
      occurredAt: meta.now,
      metadata: { steam_id: account.steam_id, cancelled_trade_intents: cancelled, steam_access_destroyed: tokenDestroyed, trades_deleted: tradesDeleted },
    });
  });
}
