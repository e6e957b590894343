import type { Scope } from '../http/scopes.ts';
import type { Queryable } from '../platform/db.ts';
import { randomToken, sha256Hex } from '../util/crypto.ts';
import { newId } from '../util/ids.ts';
import type { Tier } from './workspaces.ts';

export const KEY_PREFIX_LENGTH = 12;

export type ApiKeyMetadata = {
  id: string;
  label: string;
  prefix: string;
  scopes: Scope[];
  created_at: Date;
  revoked_at: Date | null;
};

/** What authentication needs to know about a presented key, in one indexed lookup. */
export type ApiKeyPrincipal = {
  keyId: string;
  label: string;
  prefix: string;
  scopes: Scope[];
  revoked: boolean;
  workspace: {
    id: string;
    name: string;
    tier: Tier;
    minuteBudget: number | null;
    dayBudget: number | null;
    suspended: boolean;
  };
};

export function generateRawKey(): string {
  return `cs2_${randomToken(30)}`;
}

export function hashKey(rawKey: string): string {
  return sha256Hex(rawKey);
}

export async function insertApiKey(
  db: Queryable,
  input: { workspaceId: string; accountId: string | null; label: string; scopes: Scope[]; now: Date },
): Promise<ApiKeyMetadata & { key: string }> {
  const key = generateRawKey();
  const id = newId();
  const prefix = key.slice(0, KEY_PREFIX_LENGTH);
  await db`
    insert into api_keys (id, workspace_id, created_by_account_id, label, prefix, key_hash, scopes, created_at)
    values (${id}, ${input.workspaceId}, ${input.accountId}, ${input.label}, ${prefix}, ${hashKey(key)},
            ${input.scopes}::text[], ${input.now})`;
  return { id, key, label: input.label, prefix, scopes: input.scopes, created_at: input.now, revoked_at: null };
}

/**
 * Looks a key up by the SHA-256 of the presented secret. Comparing digests through a unique index
 * leaks nothing usable about the secret, so no separate constant-time comparison is needed.
 */
export async function findApiKeyByHash(db: Queryable, keyHash: string): Promise<ApiKeyPrincipal | null> {
  const [row] = await db<
    {
      id: string;
      label: string;
      prefix: string;
      scopes: Scope[];
      revoked_at: Date | null;
      workspace_id: string;
      name: string;
      tier: Tier;
      minute_budget: number | null;
      day_budget: number | null;
      suspended_at: Date | null;
    }[]
  >`
    select k.id, k.label, k.prefix, k.scopes, k.revoked_at, w.id as workspace_id, w.name, w.tier,
           w.minute_budget, w.day_budget, w.suspended_at
    from api_keys k join workspaces w on w.id = k.workspace_id
    where k.key_hash = ${keyHash}`;
  if (!row) return null;
  return {
    keyId: row.id,
    label: row.label,
    prefix: row.prefix,
    scopes: row.scopes,
    revoked: row.revoked_at !== null,
    workspace: {
      id: row.workspace_id,
      name: row.name,
      tier: row.tier,
      minuteBudget: row.minute_budget,
      dayBudget: row.day_budget,
      suspended: row.suspended_at !== null,
    },
  };
}

export async function listApiKeys(db: Queryable, workspaceId: string): Promise<ApiKeyMetadata[]> {
  return db<ApiKeyMetadata[]>`
    select id, label, prefix, scopes, created_at, revoked_at from api_keys
    where workspace_id = ${workspaceId} order by created_at desc, id desc`;
}

/** Revokes a live key of the workspace; null when there is no such key (absent, foreign or revoked). */
export async function revokeApiKey(db: Queryable, workspaceId: string, keyId: string, now: Date): Promise<(ApiKeyMetadata & { key_hash: string }) | null> {
  const [row] = await db<(ApiKeyMetadata & { key_hash: string })[]>`
    update api_keys set revoked_at = ${now}
    where id = ${keyId} and workspace_id = ${workspaceId} and revoked_at is null
    returning id, label, prefix, scopes, created_at, revoked_at, key_hash`;
  return row ?? null;
}

export async function findKeyHashesOfWorkspace(db: Queryable, workspaceId: string): Promise<string[]> {
  const rows = await db<{ key_hash: string }[]>`select key_hash from api_keys where workspace_id = ${workspaceId}`;
  return rows.map((row) => row.key_hash);
}
