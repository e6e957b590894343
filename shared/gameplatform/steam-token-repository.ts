import type { Queryable } from '../platform/db.ts';

/**
 * Repository of owner access tokens (table gameplatform_steam_tokens, sql/0020_steam_tokens.sql).
 * The ciphertext is read by `findSealedToken` only; account listings read `expires_at` alone.
 */

export type SealedToken = { ciphertext: Uint8Array; keyId: string; expiresAt: Date };
export type LiveAccountRef = { account_id: string; workspace_id: string; steam_id: string };

/**
 * The workspace's live (not disconnected) account, locked until the transaction ends so a token is
 * never stored on an account that a concurrent disconnect has just ended. Null for an unknown
 * account, a disconnected one or another workspace's.
 */
export async function lockLiveAccountOfWorkspace(db: Queryable, workspaceId: string, accountId: string): Promise<LiveAccountRef | null> {
  const [row] = await db<LiveAccountRef[]>`
    select account_id::text as account_id, workspace_id, steam_id from gameplatform_accounts
    where account_id = ${accountId}::bigint and workspace_id = ${workspaceId} and disconnected_at is null
    for update`;
  return row ?? null;
}

/** Stores the account's token, replacing any; `replaced` says whether there was one. */
export async function upsertSealedToken(db: Queryable, accountId: string, token: SealedToken, now: Date): Promise<{ replaced: boolean }> {
  const [row] = await db<{ inserted: boolean }[]>`
    insert into gameplatform_steam_tokens (account_id, ciphertext, key_id, expires_at, created_at, updated_at)
    values (${accountId}::bigint, ${Buffer.from(token.ciphertext)}, ${token.keyId}, ${token.expiresAt}, ${now}, ${now})
    on conflict (account_id) do update
      set ciphertext = excluded.ciphertext, key_id = excluded.key_id, expires_at = excluded.expires_at, updated_at = excluded.updated_at
    returning (xmax = 0) as inserted`;
  return { replaced: !row!.inserted };
}

/** The sealed token of a live account, or null. */
export async function findSealedToken(db: Queryable, accountId: string): Promise<(SealedToken & { steamId: string; workspaceId: string }) | null> {
  const [row] = await db<{ ciphertext: Uint8Array; key_id: string; expires_at: Date; steam_id: string; workspace_id: string }[]>`
    select t.ciphertext, t.key_id, t.expires_at, a.steam_id, a.workspace_id
    from gameplatform_steam_tokens t join gameplatform_accounts a on a.account_id = t.account_id
    where t.account_id = ${accountId}::bigint and a.disconnected_at is null`;
  return row ? { ciphertext: row.ciphertext, keyId: row.key_id, expiresAt: row.expires_at, steamId: row.steam_id, workspaceId: row.workspace_id } : null;
}

/** The workspace's live account of this SteamID that has a token stored (expired or not), or null. */
export async function findTokenAccountOf(db: Queryable, workspaceId: string, steamId: string): Promise<string | null> {
  const [row] = await db<{ account_id: string }[]>`
    select a.account_id::text as account_id
    from gameplatform_accounts a join gameplatform_steam_tokens t on t.account_id = a.account_id
    where a.workspace_id = ${workspaceId} and a.steam_id = ${steamId} and a.disconnected_at is null`;
  return row?.account_id ?? null;
}

/** Deletes the account's token; what it held (never the ciphertext) when there was one. */
export async function deleteSealedToken(db: Queryable, accountId: string): Promise<{ expiresAt: Date; steamId: string; workspaceId: string } | null> {
  const [row] = await db<{ expires_at: Date; steam_id: string; workspace_id: string }[]>`
    delete from gameplatform_steam_tokens t using gameplatform_accounts a
    where t.account_id = ${accountId}::bigint and a.account_id = t.account_id
    returning t.expires_at, a.steam_id, a.workspace_id`;
  return row ? { expiresAt: row.expires_at, steamId: row.steam_id, workspaceId: row.workspace_id } : null;
}

export type SealedTokenRow = { account_id: string; workspace_id: string; ciphertext: Uint8Array; key_id: string };

/** Tokens sealed under another key than `keyId`, after `afterAccountId`, in account order. */
export async function findTokensNotUnderKey(db: Queryable, keyId: string, afterAccountId: string | null, limit: number): Promise<SealedTokenRow[]> {
  return db<SealedTokenRow[]>`
    select t.account_id::text as account_id, a.workspace_id, t.ciphertext, t.key_id
    from gameplatform_steam_tokens t join gameplatform_accounts a on a.account_id = t.account_id
    where t.key_id <> ${keyId} ${afterAccountId ? db`and t.account_id > ${afterAccountId}::bigint` : db``}
    order by t.account_id
    limit ${limit}`;
}

/** Replaces a token's ciphertext if it is still the one read (a PUT in between wins). */
export async function replaceTokenCiphertext(db: Queryable, row: SealedTokenRow, sealed: { ciphertext: Buffer; keyId: string }): Promise<boolean> {
  const updated = await db`
    update gameplatform_steam_tokens set ciphertext = ${sealed.ciphertext}, key_id = ${sealed.keyId}
    where account_id = ${row.account_id}::bigint and key_id = ${row.key_id} and ciphertext = ${Buffer.from(row.ciphertext)}
    returning account_id`;
  return updated.length === 1;
}
