import type { AppDeps } from '../deps.ts';

/** What Elysia passes as `server`: null when the app is driven through `app.handle`. */
export type RequestIpSource = { requestIP(request: Request): { address: string } | null } | null;

/**
 * The client address (sign-in limits, per-address limits of the keyless endpoints): the first
 * X-Forwarded-For entry only when TRUST_PROXY is set (behind a proxy we control), else the peer.
 */
export function clientIp(deps: Pick<AppDeps, 'config'>, request: Request, server: RequestIpSource): string | null {
  if (deps.config.TRUST_PROXY) {
    const forwarded = request.headers.get('x-forwarded-for')?.split(',')[0]?.trim();
    if (forwarded) return forwarded.slice(0, 64);
  }
  return server?.requestIP(request)?.address ?? null;
}
