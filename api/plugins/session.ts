import { Elysia } from 'elysia';
import { errors } from '../../shared/http/errors.ts';
import { findActiveSession, type SessionPrincipal } from '../../shared/identity/sessions.ts';
import type { AppDeps } from '../deps.ts';
import { errorResponses } from '../openapi.ts';

const TOKEN_MAX_LENGTH = 200;

/** The session token from `Authorization: Bearer …` or the `session` cookie (docs/design.md §5). */
export function sessionTokenOf(request: Request): string | null {
  const authorization = request.headers.get('authorization');
  if (authorization?.toLowerCase().startsWith('bearer ')) return authorization.slice(7).trim() || null;
  const cookie = request.headers.get('cookie');
  if (!cookie) return null;
  for (const part of cookie.split(';')) {
    const [name, ...rest] = part.trim().split('=');
    if (name === 'session') return decodeCookieValue(rest.join('='));
  }
  return null;
}

/** A cookie value that cannot be percent-decoded is no session at all (401), never a 500. */
function decodeCookieValue(value: string): string | null {
  try {
    return decodeURIComponent(value) || null;
  } catch {
    return null;
  }
}

/** `session: true` on a route: a signed-in account session is required (401 otherwise). */
export type SessionPluginDeps = Pick<AppDeps, 'sql' | 'log' | 'now'>;

/** The signed-in session of a request, or 401 (also for routes that accept a key instead). */
export async function authenticateSession(deps: SessionPluginDeps, request: Request): Promise<SessionPrincipal> {
  const token = sessionTokenOf(request);
  if (!token || token.length > TOKEN_MAX_LENGTH) throw errors.unauthorized('A signed-in session is required (Authorization: Bearer <token>).');
  let session: SessionPrincipal | null;
  try {
    session = await findActiveSession(deps.sql, token, deps.now());
  } catch (error) {
    deps.log.error({ err: error }, 'session lookup failed');
    throw errors.unavailable('database_unavailable', 'Sessions cannot be verified right now; retry shortly.');
  }
  if (!session) throw errors.unauthorized('The session is missing, expired or signed out.');
  return session;
}

export function sessionPlugin(deps: SessionPluginDeps) {
  return new Elysia({ name: 'session-auth' }).macro({
    session: (_required: true) => ({
      detail: { security: [{ session: [] }, { sessionCookie: [] }], responses: errorResponses(401, 503) },
      resolve: async ({ request }) => ({ session: await authenticateSession(deps, request) }),
    }),
  });
}
