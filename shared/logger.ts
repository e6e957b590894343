import pino, { type Logger } from 'pino';

export type { Logger };

// Keys whose values never reach a log line (DESIGN 6: no secrets in logs).
const redactPaths = [
  'password',
  'token',
  'key',
  'secret',
  'authorization',
  '*.password',
  '*.token',
  '*.key',
  '*.secret',
  '*.authorization',
  'headers["x-api-key"]',
  'headers.authorization',
  'headers.cookie',
];

export function createLogger(options: { level: string; name: string }): Logger {
  return pino({
    name: options.name,
    level: options.level,
    redact: { paths: redactPaths, censor: '[REDACTED]' },
    base: { pid: process.pid },
    timestamp: pino.stdTimeFunctions.isoTime,
  });
}
