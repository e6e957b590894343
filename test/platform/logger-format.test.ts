import { describe, expect, test } from 'bun:test';
import { Writable } from 'node:stream';
import { parseConfig } from '../../shared/platform/config.ts';
import { createLogger } from '../../shared/platform/logger.ts';

/**
 * `npm start` in a terminal writes readable log lines (LOG_FORMAT=pretty, chosen by scripts/dev.ts
 * when its output is a terminal); JSON stays the format everywhere else (the default), and the
 * redaction of secrets holds in both.
 */
function capture() {
  const chunks: string[] = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      chunks.push(String(chunk));
      done();
    },
  });
  return { stream, text: () => chunks.join('') };
}

describe('log format', () => {
  test('pretty: one readable line per entry with time, level, name and message, fields after it, secrets redacted', () => {
    const out = capture();
    const log = createLogger({ level: 'info', name: 'api', format: 'pretty' }, out.stream);
    log.info({ snapshot_id: 7, token: 'sk_live_secret' }, 'price snapshot built');
    // biome-ignore lint/suspicious/noControlCharactersInRegex: strips ANSI colour codes, which start with ESC
    const text = out.text().replace(/\u001b\[[0-9;]*m/g, '');
    expect(text.startsWith('{')).toBe(false);
    expect(text).toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] INFO \(api\): price snapshot built\n/);
    expect(text).toContain('snapshot_id: 7');
    expect(text).toContain('[REDACTED]');
    expect(text).not.toContain('sk_live_secret');
  });

  test('json stays the default format', () => {
    expect(parseConfig({}).LOG_FORMAT).toBe('json');
    expect(() => parseConfig({ LOG_FORMAT: 'yaml' })).toThrow();
    const lines: string[] = [];
    const log = createLogger({ level: 'info', name: 'api' }, { write: (line: string) => void lines.push(line) });
    log.info({ token: 'sk_live_secret' }, 'hello');
    expect(JSON.parse(lines[0]!)).toMatchObject({ level: 30, name: 'api', msg: 'hello', token: '[REDACTED]' });
  });
});
