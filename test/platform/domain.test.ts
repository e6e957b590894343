import { describe, expect, test } from 'bun:test';
import { z } from 'zod';
import { decodeCursor, encodeCursor } from '../../shared/http/cursor.ts';
import type { ApiError } from '../../shared/http/errors.ts';
import { requestFingerprint } from '../../shared/idempotency/records.ts';
import { ConfigError, parseConfig } from '../../shared/platform/config.ts';
import { budgetsFor } from '../../shared/usage/budgets.ts';
import { rateLimitHeaders } from '../../shared/usage/metering.ts';
import { canonicalJson } from '../../shared/util/canonical-json.ts';
import { redactSecrets } from '../../shared/util/redact.ts';

describe('config', () => {
  test('a bad value fails naming the variable', () => {
    const attempt = (env: Record<string, string>) => {
      try {
        parseConfig(env);
        return null;
      } catch (error) {
        expect(error).toBeInstanceOf(ConfigError);
        return (error as ConfigError).message;
      }
    };
    expect(attempt({ PORT: 'eighty' })).toContain('PORT');
    expect(attempt({ REDIS_URL: 'not a url' })).toContain('REDIS_URL');
    expect(attempt({ WEBHOOK_SECRET_KEY: 'c2hvcnQ=' })).toContain('WEBHOOK_SECRET_KEY');
    expect(attempt({ NODE_ENV: 'production' })).toContain('SIGNING_KEY');
    expect(attempt({ SOURCES: 'skinport, Steam!' })).toContain('SOURCES');
  });

  test('defaults follow docs/design.md §4 and lists are parsed', () => {
    const config = parseConfig({ SOURCES: 'skinport, steam ,csfloat', WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' });
    expect(config.PORT).toBe(3000);
    expect(config.SOURCES).toEqual(['skinport', 'steam', 'csfloat']);
    expect(config.WEBHOOK_ALLOW_PRIVATE_TARGETS).toBe(true);
    expect(config.WEBHOOK_SECRET_KEY).toBeUndefined();
  });
});

describe('cursors', () => {
  const isPosition = z.object({ n: z.number() });
  const key = 'unit-test-signing-key-000';

  test('round-trip only with the same list, filters and key', () => {
    const cursor = encodeCursor(key, 'things', { a: 1, b: null }, { n: 7 });
    expect(decodeCursor(key, 'things', { b: null, a: 1 }, cursor, isPosition)).toEqual({ n: 7 });
    const invalid = (run: () => unknown) => {
      try {
        run();
        return null;
      } catch (error) {
        return (error as ApiError).code;
      }
    };
    expect(invalid(() => decodeCursor(key, 'things', { a: 2, b: null }, cursor, isPosition))).toBe('invalid_cursor');
    expect(invalid(() => decodeCursor(key, 'others', { a: 1, b: null }, cursor, isPosition))).toBe('invalid_cursor');
    expect(invalid(() => decodeCursor('another-signing-key-0000', 'things', { a: 1, b: null }, cursor, isPosition))).toBe('invalid_cursor');
    expect(invalid(() => decodeCursor(key, 'things', { a: 1, b: null }, `${cursor}x`, isPosition))).toBe('invalid_cursor');
    // Signed by us but of another shape (a position an older release wrote, say): still a 400.
    const otherShape = encodeCursor(key, 'things', { a: 1, b: null }, { n: 'seven' });
    expect(invalid(() => decodeCursor(key, 'things', { a: 1, b: null }, otherShape, isPosition))).toBe('invalid_cursor');
  });
});

describe('redaction', () => {
  test('replaces secret-named values at any depth, arrays included, and keeps the rest', () => {
    const redacted = redactSecrets({
      label: 'ok',
      Password: 'p',
      nested: [{ api_key: 'k', value: 1 }, [{ webhook_secret: 's', private_key: { x: 1 } }]],
      headers: { Authorization: 'Bearer x', 'x-signature': 'v1,abc' },
    });
    expect(redacted).toEqual({
      label: 'ok',
      Password: '[REDACTED]',
      nested: [{ api_key: '[REDACTED]', value: 1 }, [{ webhook_secret: '[REDACTED]', private_key: '[REDACTED]' }]],
      headers: { Authorization: '[REDACTED]', 'x-signature': '[REDACTED]' },
    });
  });
});

describe('canonical JSON and fingerprints', () => {
  test('key order and white space do not matter; values do', () => {
    expect(canonicalJson({ b: [2, { d: 1, c: 0 }], a: 'x' })).toBe('{"a":"x","b":[2,{"c":0,"d":1}]}');
    const base = { method: 'POST', path: '/v1/me/keys', body: { label: 'a', scopes: ['x'] } };
    expect(requestFingerprint(base)).toBe(requestFingerprint({ ...base, body: { scopes: ['x'], label: 'a' } }));
    expect(requestFingerprint(base)).not.toBe(requestFingerprint({ ...base, body: { label: 'b', scopes: ['x'] } }));
    expect(requestFingerprint(base)).not.toBe(requestFingerprint({ ...base, path: '/v1/me/keys?x=1' }));
  });
});

describe('budgets', () => {
  test('tier defaults from docs/design.md §5, custom budgets override', () => {
    expect(budgetsFor({ tier: 'free', minuteBudget: null, dayBudget: null })).toEqual({ minute: 120, day: 20_000 });
    expect(budgetsFor({ tier: 'pro', minuteBudget: null, dayBudget: null })).toEqual({ minute: 1_200, day: 1_000_000 });
    expect(budgetsFor({ tier: 'enterprise', minuteBudget: 50, dayBudget: null }).minute).toBe(50);
  });

  test('RateLimit headers name both windows', () => {
    const window = (limit: number, used: number, resetSeconds: number) => ({ limit, used, remaining: limit - used, resetsAt: new Date(), resetSeconds });
    expect(rateLimitHeaders({ minute: window(120, 3, 42), day: window(20_000, 3, 3_600) })).toEqual({
      'ratelimit-policy': '"minute";q=120;w=60, "day";q=20000;w=86400',
      ratelimit: '"minute";r=117;t=42, "day";r=19997;t=3600',
    });
  });
});

describe('scopes', () => {
  test('a write scope grants its read, and nothing else', async () => {
    const { grantsScope } = await import('../../shared/http/scopes.ts');
    expect(grantsScope(['trade:write'], 'trade:read')).toBe(true);
    expect(grantsScope(['media:write'], 'media:read')).toBe(true);
    expect(grantsScope(['trade:read'], 'trade:write')).toBe(false);
    expect(grantsScope(['audit:export'], 'audit:read')).toBe(false);
    expect(grantsScope(['webhooks:read'], 'trade:read')).toBe(false);
  });
});
