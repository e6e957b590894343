import type { Queryable } from '../platform/db.ts';
import { type ApiKeyPrincipal, findApiKeyByHash } from './api-keys.ts';

/** Redis channel on which revocations and workspace changes are announced to every API process. */
export const KEY_INVALIDATION_CHANNEL = 'api-keys:invalidate';
export const INVALIDATE_ALL = '*';

/**
 * A short-lived per-process cache of key lookups, so the hot path costs no database round trip.
 * Revocation clears the entry here at once and in other processes through KEY_INVALIDATION_CHANNEL;
 * the TTL bounds staleness if an announcement is lost.
 */
export class ApiKeyCache {
  private readonly entries = new Map<string, { principal: ApiKeyPrincipal | null; expiresAt: number }>();

  constructor(
    private readonly db: Queryable,
    private readonly ttlMs = 10_000,
    private readonly maxEntries = 50_000,
  ) {}

  async lookup(keyHash: string): Promise<ApiKeyPrincipal | null> {
    const now = Date.now();
    const cached = this.entries.get(keyHash);
    if (cached && cached.expiresAt > now) return cached.principal;
    const principal = await findApiKeyByHash(this.db, keyHash);
    if (this.entries.size >= this.maxEntries) this.entries.clear();
    this.entries.set(keyHash, { principal, expiresAt: now + this.ttlMs });
    return principal;
  }

  invalidate(keyHash: string): void {
    if (keyHash === INVALIDATE_ALL) this.entries.clear();
    else this.entries.delete(keyHash);
  }
}
