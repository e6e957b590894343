/**
 * ISteamUser/GetPlayerSummaries/v2 as api.steampowered.com answers it: `{response: {players: […]}}`,
 * unknown ids simply missing from `players`, a bad or missing key a 403 HTML page.
 */
import { type FakeState, retryAfterHeaders, takeFailure } from './state.ts';

/** Steam's own body for a rejected key (it is HTML even on a JSON endpoint). */
const FORBIDDEN_HTML =
  '<html><head><title>Forbidden</title></head><body><h1>Forbidden</h1>Access is denied. Retrying will not help. Please verify your <pre>key=</pre> parameter.</body></html>';

const html = (status: number, body: string, headers: Record<string, string> = {}) =>
  new Response(body, { status, headers: { 'content-type': 'text/html; charset=UTF-8', ...headers } });

const STATUS_TEXT: Record<number, string> = { 429: 'Too Many Requests', 500: 'Internal Server Error', 502: 'Bad Gateway', 503: 'Service Unavailable' };

export function getPlayerSummaries(state: FakeState, url: URL): Response {
  const failure = takeFailure(state, 'profiles');
  if (failure) {
    const text = STATUS_TEXT[failure.status] ?? 'Error';
    return html(failure.status, `<html><head><title>${text}</title></head><body><h1>${text}</h1></body></html>`, retryAfterHeaders(failure));
  }
  if (url.searchParams.get('key') !== state.apiKey) return html(403, FORBIDDEN_HTML);
  const raw = url.searchParams.get('steamids');
  if (raw === null)
    return html(400, "<html><head><title>Bad Request</title></head><body><h1>Bad Request</h1>Required parameter 'steamids' is missing</body></html>");
  // Steam answers at most 100 ids per call and ignores the rest.
  const ids = raw
    .split(',')
    .map((id) => id.trim())
    .filter(Boolean)
    .slice(0, 100);
  const players = ids.flatMap((id) => {
    const summary = state.profiles.get(id);
    return summary ? [summary] : [];
  });
  return Response.json({ response: { players } });
}
