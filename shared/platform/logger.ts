import pino, { type DestinationStream, type Logger } from 'pino';
import pretty from 'pino-pretty';
import { logContextFields } from './log-context.ts';

export type { Logger };

// Keys whose values never reach a log line (docs/design.md §6: no secrets in logs).
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

/** Errors without the SQL text and bound parameters that postgres.js attaches (hashes, emails, …). */
function errorSerializer(error: unknown) {
  const serialized = pino.stdSerializers.err(error as Error) as Record<string, unknown>;
  delete serialized.query;
  delete serialized.parameters;
  delete serialized.args;
  return serialized;
}

/**
 * `destination`: where lines go (stdout by default; tests capture them). `format: 'pretty'` writes
 * readable lines for a terminal (time, level, name, message, then the fields), on this thread, as
 * lines are written: no transport worker.
 */
export function createLogger(options: { level: string; name: string; format?: 'json' | 'pretty' }, destination?: DestinationStream): Logger {
  const settings = {
    name: options.name,
    level: options.level,
    redact: { paths: redactPaths, censor: '[REDACTED]' },
    serializers: { err: errorSerializer },
    base: { pid: process.pid },
    timestamp: pino.stdTimeFunctions.isoTime,
    // The request id or job id of whatever is being handled when the line is written (shared/platform/log-context.ts).
    mixin: logContextFields,
  };
  if (options.format === 'pretty') {
    const stream = pretty({
      colorize: process.env.NO_COLOR === undefined,
      sync: true,
      translateTime: 'SYS:HH:MM:ss.l',
      ignore: 'pid,hostname',
      destination: destination ?? 1,
    });
    return pino(settings, stream);
  }
  return destination ? pino(settings, destination) : pino(settings);
}
