import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * Fields every log line carries while one request or one job is being handled (`request_id`;
 * `job_id` and `job_name`), so lines written by shared code that only holds the process logger
 * still name what they belong to. The logger reads them on each line (shared/platform/logger.ts `mixin`).
 */
export type LogContext = { request_id: string } | { job_id: string; job_name: string };

const storage = new AsyncLocalStorage<LogContext>();

/** Runs `work` (and everything it awaits or schedules) with `context` on its log lines. */
export function runWithLogContext<T>(context: LogContext, work: () => T): T {
  return storage.run(context, work);
}

/**
 * Binds `context` to the rest of the current execution and what it schedules. For request hooks,
 * which cannot wrap the handler that follows them; each request is dispatched on its own, so one
 * request's binding never reaches another's.
 */
export function bindLogContext(context: LogContext): void {
  storage.enterWith(context);
}

/** The fields of the current request or job, as a new object (pino merges a line's own fields into it). */
export function logContextFields(): Partial<Record<string, string>> {
  const context = storage.getStore();
  return context ? { ...context } : {};
}
