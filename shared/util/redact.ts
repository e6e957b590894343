// docs/design.md §7: any object key naming a secret is redacted at any depth, arrays included.
const secretKeyPattern = /secret|token|password|api_key|authorization|signature|private_key/i;

export const REDACTED = '[REDACTED]';

export function isSecretKey(key: string): boolean {
  return secretKeyPattern.test(key);
}

export function redactSecrets(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(redactSecrets);
  if (value !== null && typeof value === 'object') {
    const result: Record<string, unknown> = {};
    for (const [key, inner] of Object.entries(value)) {
      result[key] = isSecretKey(key) ? REDACTED : redactSecrets(inner);
    }
    return result;
  }
  return value;
}
