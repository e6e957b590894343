import type { Queryable } from '../platform/db.ts';
import { sha256Hex } from '../util/crypto.ts';
import { normaliseEmail } from './accounts.ts';

// Failed sign-ins allowed per window before further attempts are refused (correct password or not).
export const SIGN_IN_WINDOW_SECONDS = 15 * 60;
export const SIGN_IN_MAX_FAILURES_PER_EMAIL = 5;
export const SIGN_IN_MAX_FAILURES_PER_IP = 20;

export function emailSubject(email: string): string {
  return `email:${sha256Hex(normaliseEmail(email))}`;
}

export function ipSubject(ip: string): string {
  return `ip:${ip}`;
}

/** Seconds until the caller may try again, or 0 when neither the email nor the IP is locked out. */
export async function signInRetryAfter(db: Queryable, email: string, ip: string | null, now: Date): Promise<number> {
  const since = new Date(now.getTime() - SIGN_IN_WINDOW_SECONDS * 1000);
  const subjects = [emailSubject(email), ...(ip ? [ipSubject(ip)] : [])];
  const rows = await db<{ subject: string; failures: number }[]>`
    select subject, count(*)::int as failures
    from sign_in_failures
    where subject in ${db(subjects)} and failed_at > ${since}
    group by subject`;
  let retryAfter = 0;
  for (const row of rows) {
    const max = row.subject.startsWith('email:') ? SIGN_IN_MAX_FAILURES_PER_EMAIL : SIGN_IN_MAX_FAILURES_PER_IP;
    if (row.failures < max) continue;
    // Locked until the failure that tipped the limit leaves the window.
    const [tipping] = await db<{ failed_at: Date }[]>`
      select failed_at from sign_in_failures where subject = ${row.subject} and failed_at > ${since}
      order by failed_at desc offset ${max - 1} limit 1`;
    const until = (tipping?.failed_at.getTime() ?? now.getTime()) + SIGN_IN_WINDOW_SECONDS * 1000;
    retryAfter = Math.max(retryAfter, Math.ceil((until - now.getTime()) / 1000));
  }
  return retryAfter;
}

export async function recordSignInFailure(db: Queryable, email: string, ip: string | null, now: Date): Promise<void> {
  const subjects = [emailSubject(email), ...(ip ? [ipSubject(ip)] : [])];
  await db`insert into sign_in_failures (subject, failed_at) select unnest(${subjects}::text[]), ${now}`;
}

export async function clearSignInFailures(db: Queryable, email: string): Promise<void> {
  await db`delete from sign_in_failures where subject = ${emailSubject(email)}`;
}

export async function deleteOldSignInFailures(db: Queryable, now: Date): Promise<number> {
  const rows = await db`delete from sign_in_failures where failed_at < ${new Date(now.getTime() - SIGN_IN_WINDOW_SECONDS * 1000)} returning id`;
  return rows.length;
}
