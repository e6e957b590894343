import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import type { Config } from '../platform/config.ts';

/** docs/design.md §8: a signing secret is `whsec_` + base64 of 32 random bytes (Standard Webhooks' form). */
export const SIGNING_SECRET_PREFIX = 'whsec_';

export function generateSigningSecret(): string {
  return SIGNING_SECRET_PREFIX + randomBytes(32).toString('base64');
}

/** The HMAC key of a signing secret: the base64-decoded part after `whsec_`. */
export function signingKeyOf(secret: string): Buffer {
  if (!secret.startsWith(SIGNING_SECRET_PREFIX)) throw new Error('not a webhook signing secret');
  return Buffer.from(secret.slice(SIGNING_SECRET_PREFIX.length), 'base64');
}

/**
 * A key id names which WEBHOOK_SECRET_KEY sealed a stored secret without revealing anything about
 * the key: a truncated SHA-256 under a fixed label. Derived, so operators never have to keep ids
 * and keys in step by hand.
 */
export function secretKeyId(key: Buffer): string {
  return `k1_${createHash('sha256').update('webhook-secret-key-id\n').update(key).digest('hex').slice(0, 16)}`;
}

export class SecretKeyUnavailableError extends Error {
  constructor(readonly keyId: string) {
    super(`no configured webhook secret key has id ${keyId} (WEBHOOK_SECRET_KEY / WEBHOOK_SECRET_KEYS_PREVIOUS)`);
  }
}

const IV_BYTES = 12;
const TAG_BYTES = 16;
// The endpoint id is the associated data: a ciphertext copied onto another endpoint's row fails to open.
const associatedData = (endpointId: string) => Buffer.from(`webhook-endpoint-secret\n${endpointId}`);

/**
 * Secrets at rest (docs/design.md §8): AES-256-GCM under the current WEBHOOK_SECRET_KEY, stored as
 * iv ‖ tag ‖ ciphertext beside the key id. Keys listed in WEBHOOK_SECRET_KEYS_PREVIOUS still open
 * what they sealed, so a rotation is: make the new key current, list the old one as previous,
 * run the rewrap command, then drop the old key.
 */
export class SecretKeyring {
  private readonly keys = new Map<string, Buffer>();
  private readonly current: { id: string; key: Buffer } | null;

  constructor(current: Buffer | null, previous: readonly Buffer[] = []) {
    for (const key of [...previous, ...(current ? [current] : [])]) {
      if (key.length !== 32) throw new Error('webhook secret keys are 32 bytes');
      this.keys.set(secretKeyId(key), key);
    }
    this.current = current ? { id: secretKeyId(current), key: current } : null;
  }

  private static readonly byConfig = new WeakMap<object, SecretKeyring>();

  /** fromConfig, built once per configuration object (readers that are handed no keyring use it). */
  static ofConfig(config: Pick<Config, 'WEBHOOK_SECRET_KEY' | 'WEBHOOK_SECRET_KEYS_PREVIOUS'>): SecretKeyring {
    let keyring = SecretKeyring.byConfig.get(config);
    if (!keyring) {
      keyring = SecretKeyring.fromConfig(config);
      SecretKeyring.byConfig.set(config, keyring);
    }
    return keyring;
  }

  static fromConfig(config: Pick<Config, 'WEBHOOK_SECRET_KEY' | 'WEBHOOK_SECRET_KEYS_PREVIOUS'>): SecretKeyring {
    const decode = (value: string) => Buffer.from(value, 'base64');
    return new SecretKeyring(config.WEBHOOK_SECRET_KEY ? decode(config.WEBHOOK_SECRET_KEY) : null, config.WEBHOOK_SECRET_KEYS_PREVIOUS.map(decode));
  }

  /** Whether new secrets can be stored (docs/interface.md §6: otherwise creation answers 503). */
  get canSeal(): boolean {
    return this.current !== null;
  }

  get currentKeyId(): string | null {
    return this.current?.id ?? null;
  }

  seal(endpointId: string, secret: string): { ciphertext: Buffer; keyId: string } {
    return this.sealBound(associatedData(endpointId), secret);
  }

  open(endpointId: string, ciphertext: Uint8Array, keyId: string): string {
    return this.openBound(associatedData(endpointId), ciphertext, keyId);
  }

  /**
   * Seals any other secret under the same keys (a Steam owner token, docs/design.md §17). `binding` is the
   * associated data: name the purpose and the row (e.g. `gameplatform-steam-token\n<account_id>`),
   * so a ciphertext opens only where it was sealed.
   */
  sealBound(binding: Buffer, secret: string): { ciphertext: Buffer; keyId: string } {
    if (!this.current) throw new Error('WEBHOOK_SECRET_KEY is not configured');
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.current.key, iv);
    cipher.setAAD(binding);
    const sealed = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
    return { ciphertext: Buffer.concat([iv, cipher.getAuthTag(), sealed]), keyId: this.current.id };
  }

  openBound(binding: Buffer, ciphertext: Uint8Array, keyId: string): string {
    const key = this.keys.get(keyId);
    if (!key) throw new SecretKeyUnavailableError(keyId);
    const bytes = Buffer.from(ciphertext);
    const decipher = createDecipheriv('aes-256-gcm', key, bytes.subarray(0, IV_BYTES));
    decipher.setAAD(binding);
    decipher.setAuthTag(bytes.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
    return Buffer.concat([decipher.update(bytes.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8');
  }
}
