// DESIGN 5: every recognised scope, in this stable order (GET /v2/meta/scopes).
export const SCOPES = [
  'catalog:read',
  'prices:read',
  'market:read',
  'inventory:read',
  'profiles:read',
  'accounts:read',
  'inspect:read',
  'media:read',
  'media:write',
  'trade:write',
  'webhooks:read',
  'webhooks:write',
  'audit:read',
  'audit:export',
  'usage:read',
] as const;

export type Scope = (typeof SCOPES)[number];

/** Granted to a key created without scopes: read-only, nothing that touches secrets or audit. */
export const DEFAULT_SCOPES: readonly Scope[] = [
  'catalog:read',
  'prices:read',
  'market:read',
  'inventory:read',
  'profiles:read',
  'inspect:read',
  'media:read',
  'usage:read',
];

const scopeSet = new Set<string>(SCOPES);

export function isScope(value: string): value is Scope {
  return scopeSet.has(value);
}

/** Deduplicated, in the stable order. */
export function normaliseScopes(scopes: readonly Scope[]): Scope[] {
  const wanted = new Set(scopes);
  return SCOPES.filter((scope) => wanted.has(scope));
}
