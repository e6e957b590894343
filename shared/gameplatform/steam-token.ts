import { type AuditActor, insertAuditEvent } from '../audit/events.ts';
import { ApiError, errors } from '../http/errors.ts';
import { DATE_TIME_MAX } from '../http/validation.ts';
import type { Queryable, Sql } from '../platform/db.ts';
import { type SecretKeyring, SecretKeyUnavailableError } from '../webhooks/secrets.ts';
import { type ConnectedAccount, findAccountOfWorkspace } from './accounts.ts';
import {
  deleteSealedToken,
  findSealedToken,
  findTokenAccountOf,
  findTokensNotUnderKey,
  lockLiveAccountOfWorkspace,
  replaceTokenCiphertext,
  upsertSealedToken,
} from './steam-token-repository.ts';

/**
 * Owner access tokens (docs/design.md §17): the Steam web API token (`webapi_token`, a JWT) an account's
 * owner gives us so that reads can see what only the owner sees. Checked (shape, `sub`, `exp`),
 * sealed at rest under WEBHOOK_SECRET_KEY, and never returned, logged, put in a job payload or in
 * audit metadata: functions here hand the plaintext only to `liveTokenFor`'s caller.
 *
 * The JWT's signature is not checked: Steam signs it with its own key, which it does not publish,
 * so we cannot. `sub` and `exp` are what we can check; Steam refuses a forged or revoked token on
 * its first use (401/403), and the reader then drops it (`dropToken`).
 */

/** Real tokens are a few hundred characters; anything far longer is refused before it is decoded. */
export const STEAM_TOKEN_MAX_LENGTH = 4096;
const JWT_SHAPE = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;

export type SteamTokenRejection = 'malformed' | 'wrong_subject' | 'expired';
export type SteamTokenCheck = { ok: true; expiresAt: Date } | { ok: false; reason: SteamTokenRejection };

/** Why a token was dropped: expired, refused by Steam (401/403), or its ciphertext no longer opens. */
export type SteamTokenDropReason = 'expired' | 'refused' | 'unreadable';

const REJECTION_MESSAGES: Record<SteamTokenRejection, string> = {
  malformed: 'The token is not a Steam web API token (a JWT of three base64url parts with a JSON payload).',
  wrong_subject: "The token was issued for another Steam account: its sub is not this account's SteamID64.",
  expired: 'The token has expired; sign in to Steam again for a new one.',
};

/** The 400 for a token that fails a check; never carries the token. */
export const invalidSteamToken = (reason: SteamTokenRejection) =>
  new ApiError(400, 'invalid_steam_token', REJECTION_MESSAGES[reason], [{ field: 'body.token', message: REJECTION_MESSAGES[reason], code: reason }]);

function decodeJsonObject(part: string): Record<string, unknown> | null {
  try {
    const text = new TextDecoder('utf-8', { fatal: true }).decode(Buffer.from(part, 'base64url'));
    const value: unknown = JSON.parse(text);
    return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

/**
 * Checks a token for `steamId` at `now`: a JWT (header and payload base64url JSON objects), `sub`
 * equal to the SteamID64, `exp` (seconds) in the future. Anything else, whatever a client sends
 * (not a string, NUL, lone surrogates, a megabyte), is a rejection, never a throw.
 */
export function checkSteamToken(token: unknown, steamId: string, now: Date): SteamTokenCheck {
  if (typeof token !== 'string' || token.length > STEAM_TOKEN_MAX_LENGTH || !JWT_SHAPE.test(token)) return { ok: false, reason: 'malformed' };
  const [headerPart, payloadPart] = token.split('.') as [string, string, string];
  const header = decodeJsonObject(headerPart);
  const payload = decodeJsonObject(payloadPart);
  if (!header || !payload) return { ok: false, reason: 'malformed' };
  const { sub, exp } = payload;
  if (typeof exp !== 'number' || !Number.isFinite(exp) || exp * 1000 > DATE_TIME_MAX.getTime()) return { ok: false, reason: 'malformed' };
  if (sub !== steamId) return { ok: false, reason: 'wrong_subject' };
  const expiresAt = new Date(Math.floor(exp) * 1000);
  if (expiresAt <= now) return { ok: false, reason: 'expired' };
  return { ok: true, expiresAt };
}

// The account id is the associated data: a ciphertext copied onto another account's row does not open.
const binding = (accountId: string) => Buffer.from(`gameplatform-steam-token\n${accountId}`);

export function sealSteamToken(keyring: SecretKeyring, accountId: string, token: string): { ciphertext: Buffer; keyId: string } {
  return keyring.sealBound(binding(accountId), token);
}

export function openSteamToken(keyring: SecretKeyring, accountId: string, ciphertext: Uint8Array, keyId: string): string {
  return keyring.openBound(binding(accountId), ciphertext, keyId);
}

type RequestMeta = { workspaceId: string; actor: AuditActor; requestId: string; now: Date };

const secretStorageUnavailable = () =>
  errors.unavailable('secret_storage_unavailable', 'Steam tokens cannot be stored: encrypted secret storage (WEBHOOK_SECRET_KEY) is not configured.');
const accountNotFound = () => errors.notFound('No connected account with this id in your workspace.');

/**
 * PUT …/steam-token: checks the token against the account's SteamID64, seals it and stores it,
 * replacing any, with `steam_token.set` or `steam_token.replaced` in the same transaction. 503
 * without a key to seal it, 404 for an account that is not the workspace's live one, 400
 * `invalid_steam_token` for a token that fails a check (nothing stored).
 */
export async function setSteamToken(sql: Sql, keyring: SecretKeyring, accountId: string, token: unknown, meta: RequestMeta): Promise<ConnectedAccount> {
  if (!keyring.canSeal) throw secretStorageUnavailable();
  return sql.begin(async (tx) => {
    const account = await lockLiveAccountOfWorkspace(tx, meta.workspaceId, accountId);
    if (!account) throw accountNotFound();
    const check = checkSteamToken(token, account.steam_id, meta.now);
    if (!check.ok) throw invalidSteamToken(check.reason);
    const sealed = sealSteamToken(keyring, accountId, token as string);
    const { replaced } = await upsertSealedToken(tx, accountId, { ...sealed, expiresAt: check.expiresAt }, meta.now);
    await insertAuditEvent(tx, {
      workspaceId: meta.workspaceId,
      source: 'gameplatform',
      eventType: replaced ? 'steam_token.replaced' : 'steam_token.set',
      resourceType: 'gameplatform_account',
      resourceId: accountId,
      outcome: 'succeeded',
      actor: meta.actor,
      requestId: meta.requestId,
      occurredAt: meta.now,
      metadata: { steam_id: account.steam_id, expires_at: check.expiresAt.toISOString(), key_id: sealed.keyId },
    });
    return (await findAccountOfWorkspace(tx, meta.workspaceId, accountId))!;
  });
}

/**
 * DELETE …/steam-token: removes the account's token (`steam_token.removed`). Removing when none is
 * set is a 204 too, with no event: the outcome the client asked for holds. 404 only for an account
 * that is not the workspace's live one.
 */
export async function removeSteamToken(sql: Sql, accountId: string, meta: RequestMeta): Promise<void> {
  await sql.begin(async (tx) => {
    const account = await lockLiveAccountOfWorkspace(tx, meta.workspaceId, accountId);
    if (!account) throw accountNotFound();
    const removed = await deleteSealedToken(tx, accountId);
    if (!removed) return;
    await insertAuditEvent(tx, {
      workspaceId: meta.workspaceId,
      source: 'gameplatform',
      eventType: 'steam_token.removed',
      resourceType: 'gameplatform_account',
      resourceId: accountId,
      outcome: 'succeeded',
      actor: meta.actor,
      requestId: meta.requestId,
      occurredAt: meta.now,
      metadata: { steam_id: account.steam_id, expires_at: removed.expiresAt.toISOString() },
    });
  });
}

/** Runs `work` in a transaction: a new one on a pool, the caller's when it already holds one. */
function inTransaction<T>(db: Queryable, work: (tx: Queryable) => Promise<T>): Promise<T> {
  return 'begin' in db ? (db.begin(work) as Promise<T>) : work(db);
}

/**
 * Deletes the account's token and records `steam_token.dropped` (actor: the system) in one
 * transaction; false when it had none. Readers call this when Steam answers 401/403 to the token
 * (`refused`) or the token has expired; the account then falls back to the public read.
 */
export async function dropToken(
  db: Queryable,
  accountId: string,
  reason: SteamTokenDropReason,
  meta: { now?: Date; requestId?: string | null } = {},
): Promise<boolean> {
  return inTransaction(db, async (tx) => {
    const dropped = await deleteSealedToken(tx, accountId);
    if (!dropped) return false;
    await insertAuditEvent(tx, {
      workspaceId: dropped.workspaceId,
      source: 'gameplatform',
      eventType: 'steam_token.dropped',
      resourceType: 'gameplatform_account',
      resourceId: accountId,
      outcome: 'succeeded',
      actor: { type: 'system', id: null },
      requestId: meta.requestId ?? null,
      occurredAt: meta.now ?? new Date(),
      metadata: { steam_id: dropped.steamId, reason, expires_at: dropped.expiresAt.toISOString() },
    });
    return true;
  });
}

/**
 * The plaintext token of a live account for a read at `now`, or null: none stored, the account
 * disconnected, or the token expired (dropped here, reason `expired`) or no longer opening under
 * any configured key. A ciphertext sealed under a key since removed from the keyring is kept (the
 * key may come back: a configuration slip) and reads fall back to the public read; one that fails
 * to open under its key was altered and is dropped (`unreadable`).
 */
export async function liveTokenFor(db: Queryable, keyring: SecretKeyring, accountId: string, now: Date): Promise<string | null> {
  const sealed = await findSealedToken(db, accountId);
  if (!sealed) return null;
  if (sealed.expiresAt <= now) {
    await dropToken(db, accountId, 'expired', { now });
    return null;
  }
  try {
    return openSteamToken(keyring, accountId, sealed.ciphertext, sealed.keyId);
  } catch (error) {
    if (error instanceof SecretKeyUnavailableError) return null;
    await dropToken(db, accountId, 'unreadable', { now });
    return null;
  }
}

/**
 * The live token a workspace holds for this SteamID (through its live connected account), with
 * that account's id, or null: the workspace has no such account, or no live token for it. A token
 * serves only its own workspace (docs/design.md §17): callers pass the workspace of the request or watch.
 */
export async function ownerTokenFor(
  db: Queryable,
  keyring: SecretKeyring,
  workspaceId: string,
  steamId: string,
  now: Date,
): Promise<{ accountId: string; token: string } | null> {
  const accountId = await findTokenAccountOf(db, workspaceId, steamId);
  if (!accountId) return null;
  const token = await liveTokenFor(db, keyring, accountId, now);
  return token === null ? null : { accountId, token };
}

/** Inside a disconnect's transaction: destroys the account's token (docs/design.md §17); whether there was one. */
export async function destroyTokenOfAccount(tx: Queryable, accountId: string): Promise<boolean> {
  return (await deleteSealedToken(tx, accountId)) !== null;
}

export type TokenRewrapReport = { rewrapped: number; unreadable: { account_id: string; key_id: string }[] };

/**
 * Key rotation (run by `npm run admin -- rewrap-webhook-secrets`, since tokens share the webhook
 * secret keys): every token not under the current key is opened with the key it names and sealed
 * again under the current one, with `steam_token.rewrapped` in its transaction. Tokens whose key
 * is not configured are reported, never touched. Safe to run again.
 */
export async function rewrapSteamTokens(sql: Sql, keyring: SecretKeyring, actor: AuditActor, batchSize = 200): Promise<TokenRewrapReport> {
  const currentKeyId = keyring.currentKeyId;
  if (!currentKeyId) throw new Error('WEBHOOK_SECRET_KEY is not configured: there is no current key to rewrap under');
  const report: TokenRewrapReport = { rewrapped: 0, unreadable: [] };
  let afterAccountId: string | null = null;
  for (;;) {
    const batch = await findTokensNotUnderKey(sql, currentKeyId, afterAccountId, batchSize);
    if (batch.length === 0) return report;
    afterAccountId = batch[batch.length - 1]!.account_id;
    for (const row of batch) {
      let token: string;
      try {
        token = openSteamToken(keyring, row.account_id, row.ciphertext, row.key_id);
      } catch {
        report.unreadable.push({ account_id: row.account_id, key_id: row.key_id });
        continue;
      }
      const replaced = await sql.begin(async (tx) => {
        if (!(await replaceTokenCiphertext(tx, row, sealSteamToken(keyring, row.account_id, token)))) return false;
        await insertAuditEvent(tx, {
          workspaceId: row.workspace_id,
          source: 'gameplatform',
          eventType: 'steam_token.rewrapped',
          resourceType: 'gameplatform_account',
          resourceId: row.account_id,
          outcome: 'succeeded',
          actor,
          metadata: { from_key_id: row.key_id, to_key_id: currentKeyId },
        });
        return true;
      });
      if (replaced) report.rewrapped += 1;
    }
  }
}
