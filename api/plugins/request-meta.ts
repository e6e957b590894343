import { Elysia } from 'elysia';
import type { AppDeps } from '../deps.ts';
import { requestIdOf } from './errors.ts';

/** What services record about the request that caused a change: its id (audit events) and the time. */
export type RequestMeta = { requestId: string; now: Date };

/** Resolves `requestMeta` for the routes of a group that records changes (audit, idempotency). */
export function requestMetaPlugin(deps: Pick<AppDeps, 'now'>) {
  return new Elysia({ name: 'request-meta' }).resolve({ as: 'scoped' }, ({ set }) => ({
    requestMeta: { requestId: requestIdOf(set), now: deps.now() } satisfies RequestMeta,
  }));
}
