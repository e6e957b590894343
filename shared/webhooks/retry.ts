/**
 * The retry schedule (docs/design.md §8). `delaysMs[n]` is the wait before attempt n + 1, so the default
 * [0, 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h] makes eight attempts over about a day. Waits get
 * ±10 % jitter so deliveries that failed together (an endpoint's outage) do not return together.
 */
export const RETRY_JITTER = 0.1;
/** A receiver's Retry-After is honoured up to a day; beyond that the schedule decides. */
export const MAX_RETRY_AFTER_MS = 24 * 3_600_000;

/**
 * Milliseconds until the next attempt after `attemptsMade` attempts, or null when none is left.
 * A Retry-After from the receiver (429/503) defers the attempt to at least that long.
 */
export function nextRetryDelay(
  delaysMs: readonly number[],
  attemptsMade: number,
  retryAfterMs: number | null,
  random: () => number = Math.random,
): number | null {
  if (attemptsMade >= delaysMs.length) return null;
  const base = delaysMs[attemptsMade]!;
  const jittered = Math.round(base * (1 + (random() * 2 - 1) * RETRY_JITTER));
  return Math.max(jittered, Math.min(retryAfterMs ?? 0, MAX_RETRY_AFTER_MS));
}

/** Retry-After as delay-seconds or an HTTP date (RFC 9110 10.2.3), in ms from `now`; null if absent or unreadable. */
export function parseRetryAfter(value: string | null, now: Date): number | null {
  if (value === null) return null;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1000;
  const at = Date.parse(trimmed);
  if (Number.isNaN(at)) return null;
  return Math.max(0, at - now.getTime());
}
