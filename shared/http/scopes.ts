// docs/design.md §5: every recognised scope, in this stable order (GET /v2/meta/scopes).
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
  // Appended (docs/design.md §5: new scopes go last so the order clients saw never changes).
  'accounts:write',
  'trade:read',
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

/**
 * Whether `granted` covers `required`: the scope itself, or its `:write` sibling for a `:read`
 * (docs/design.md §10 and §11: a write scope also grants the matching read, e.g. trade:write reads intents).
 */
export function grantsScope(granted: readonly string[], required: Scope): boolean {
  if (granted.includes(required)) return true;
  return required.endsWith(':read') && granted.includes(`${required.slice(0, -':read'.length)}:write`);
}
