/** How long one scrape waits on Redis or Postgres; Prometheus gives a whole scrape 10 s by default. */
export const COLLECT_TIMEOUT_MS = 2_000;

/**
 * `promise`, or a rejection after `ms`. BullMQ waits for its connection to be ready before it
 * sends a command and postgres.js waits to connect: with either down, a scrape would hang.
 */
export function bounded<T>(promise: Promise<T>, ms = COLLECT_TIMEOUT_MS): Promise<T> {
  let timer: Timer | undefined;
  return Promise.race([
    promise,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}
