import { z } from 'zod';
import type { AuditActor } from '../audit/events.ts';
import type { Queryable } from '../platform/db.ts';

/**
 * Repository of connected Steam accounts and of the OpenID flows that connect them (tables
 * gameplatform_accounts, openid_states, openid_nonces; sql/0008_gameplatform.sql). Owner tokens
 * have a repository of their own (steam-token-repository.ts); accounts read only their expiry.
 */

/** A connected account as the API answers it (docs/design.md §11). */
export const connectedAccountSchema = z.object({
  account_id: z.number().int().describe('Integer id of the connection'),
  steam_id: z.string().describe('SteamID64'),
  persona_name: z.string().nullable().describe('Steam display name when known'),
  connected_at: z.string(),
  steam_token: z
    .object({ expires_at: z.string().describe('When the token expires (its exp); past it the token is dropped at its next use') })
    .nullable()
    .describe('The owner access token set with PUT …/steam-token, never the token itself; null when none is set'),
});
export type ConnectedAccount = z.infer<typeof connectedAccountSchema>;

type AccountRow = { account_id: string; steam_id: string; persona_name: string | null; connected_at: Date; steam_token_expires_at: Date | null };

// account_id is a bigint: read as text, answered as a number (identities stay far below 2^53).
// Of the owner token only its expiry: the ciphertext lives in its own table and no listing reads it.
const accountColumns = (db: Queryable) => db`
  account_id::text as account_id, steam_id, persona_name, connected_at,
  (select t.expires_at from gameplatform_steam_tokens t where t.account_id = gameplatform_accounts.account_id) as steam_token_expires_at`;

function toAccount(row: AccountRow): ConnectedAccount {
  return {
    account_id: Number(row.account_id),
    steam_id: row.steam_id,
    persona_name: row.persona_name,
    connected_at: row.connected_at.toISOString(),
    steam_token: row.steam_token_expires_at ? { expires_at: row.steam_token_expires_at.toISOString() } : null,
  };
}

export type OpenIdState = { state: string; workspace_id: string; actor: AuditActor; request_id: string | null; expires_at: Date; used_at: Date | null };

export async function insertOpenIdState(
  db: Queryable,
  flow: { state: string; workspaceId: string; actor: AuditActor; requestId: string; createdAt: Date; expiresAt: Date },
): Promise<void> {
  await db`
    insert into openid_states (state, workspace_id, actor, request_id, created_at, expires_at)
    values (${flow.state}, ${flow.workspaceId}, ${db.json(flow.actor)}, ${flow.requestId}, ${flow.createdAt}, ${flow.expiresAt})`;
}

export async function findOpenIdState(db: Queryable, state: string): Promise<OpenIdState | null> {
  const [row] = await db<OpenIdState[]>`
    select state, workspace_id, actor, request_id, expires_at, used_at from openid_states where state = ${state}`;
  return row ?? null;
}

/**
 * Marks an unexpired, unused state used and returns it; null when it is unknown, used or expired.
 * One UPDATE, so of any number of racing callbacks with one state exactly one gets the row.
 */
export async function consumeOpenIdState(db: Queryable, state: string, now: Date): Promise<OpenIdState | null> {
  const [row] = await db<OpenIdState[]>`
    update openid_states set used_at = ${now}
    where state = ${state} and used_at is null and expires_at > ${now}
    returning state, workspace_id, actor, request_id, expires_at, used_at`;
  return row ?? null;
}

/** Records a response nonce; false when it was seen before (a replay). */
export async function recordOpenIdNonce(db: Queryable, nonce: string, now: Date): Promise<boolean> {
  const rows = await db`insert into openid_nonces (nonce, seen_at) values (${nonce}, ${now}) on conflict (nonce) do nothing returning nonce`;
  return rows.length === 1;
}

/**
 * The workspace's live connection of this Steam account: created now, or the one already there
 * (the partial unique index decides between racing connects of one Steam account).
 */
export async function insertOrFindLiveAccount(
  db: Queryable,
  account: { workspaceId: string; steamId: string; personaName: string | null; connectedAt: Date },
): Promise<{ account: ConnectedAccount; created: boolean }> {
  const [inserted] = await db<AccountRow[]>`
    insert into gameplatform_accounts (workspace_id, steam_id, persona_name, connected_at)
    values (${account.workspaceId}, ${account.steamId}, ${account.personaName}, ${account.connectedAt})
    on conflict (workspace_id, steam_id) where disconnected_at is null do nothing
    returning ${accountColumns(db)}`;
  if (inserted) return { account: toAccount(inserted), created: true };
  const [existing] = await db<AccountRow[]>`
    select ${accountColumns(db)} from gameplatform_accounts
    where workspace_id = ${account.workspaceId} and steam_id = ${account.steamId} and disconnected_at is null`;
  if (!existing) throw new Error('a live connection conflicted but cannot be found');
  return { account: toAccount(existing), created: false };
}

export type AccountPosition = { account_id: string };

/** Live connections, newest first, keyset on account_id; one row more than asked means another page. */
export async function listLiveAccounts(
  db: Queryable,
  workspaceId: string,
  after: AccountPosition | null,
  limit: number,
): Promise<{ accounts: ConnectedAccount[]; next: AccountPosition | null }> {
  const rows = await db<AccountRow[]>`
    select ${accountColumns(db)} from gameplatform_accounts
    where workspace_id = ${workspaceId} and disconnected_at is null
      ${after ? db`and account_id < ${after.account_id}::bigint` : db``}
    order by account_id desc
    limit ${limit + 1}`;
  const page = rows.slice(0, limit);
  const last = page[page.length - 1];
  return { accounts: page.map(toAccount), next: rows.length > limit && last ? { account_id: last.account_id } : null };
}

/** The workspace's live connection with this id, or null (another workspace's included). */
export async function findAccountOfWorkspace(db: Queryable, workspaceId: string, accountId: string): Promise<ConnectedAccount | null> {
  const [row] = await db<AccountRow[]>`
    select ${accountColumns(db)} from gameplatform_accounts
    where account_id = ${accountId}::bigint and workspace_id = ${workspaceId} and disconnected_at is null`;
  return row ? toAccount(row) : null;
}

/** Ends a live connection of the workspace; null when there is none with this id (another workspace's included). */
export async function disconnectLiveAccount(db: Queryable, workspaceId: string, accountId: string, now: Date): Promise<ConnectedAccount | null> {
  const [row] = await db<AccountRow[]>`
    update gameplatform_accounts set disconnected_at = ${now}
    where account_id = ${accountId}::bigint and workspace_id = ${workspaceId} and disconnected_at is null
    returning ${accountColumns(db)}`;
  return row ? toAccount(row) : null;
}
