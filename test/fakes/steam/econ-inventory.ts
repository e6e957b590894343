/**
 * IEconService/GetInventoryItemsWithDescriptions/v1 as api.steampowered.com answers an owner's
 * access token (docs/design.md §17): `?access_token=…&steamid=…&appid=730&contextid=2|16&get_descriptions=true
 * &get_asset_properties=true&count=…&start_assetid=…` → `{"response": {assets, descriptions,
 * asset_properties, total_inventory_count, more_items?, last_assetid?}}`, the community page's
 * records wrapped in `response`, for one context. The owner sees a private inventory too. A bad,
 * expired or revoked token is a 401 HTML page, another account's a 403 (access-tokens.ts).
 * Failures queued for 'inventory' apply here too (it is the same Steam inventory service).
 * Dates are rendered (this method has no preserve_bbcode): the year-less "29 Jun @ 7:00am" form.
 */
import { checkAccessToken } from './access-tokens.ts';
import { contextView, MAX_PAGE_COUNT, pageBody, resolveInventory } from './community-inventory.ts';
import { type FakeState, retryAfterHeaders, takeFailure } from './state.ts';

const html = (status: number, title: string, headers: Record<string, string> = {}) =>
  new Response(`<html><head><title>${title}</title></head><body><h1>${title}</h1></body></html>`, {
    status,
    headers: { 'content-type': 'text/html; charset=UTF-8', ...headers },
  });

export function econInventory(state: FakeState, url: URL): Response | Promise<Response> {
  const steamId = url.searchParams.get('steamid');
  const failure = takeFailure(state, 'inventory', steamId ?? undefined);
  if (failure?.stallMs !== undefined) return Bun.sleep(failure.stallMs).then(() => html(failure.status, 'Error', retryAfterHeaders(failure)));
  if (failure) return html(failure.status, failure.status === 429 ? 'Too Many Requests' : 'Error', retryAfterHeaders(failure));
  const checked = checkAccessToken(state, url, steamId);
  if (checked instanceof Response) return checked;
  const appId = url.searchParams.get('appid');
  const context = url.searchParams.get('contextid');
  if (!steamId || appId !== '730' || (context !== '2' && context !== '16')) return html(400, 'Bad Request');
  const rawCount = url.searchParams.get('count');
  const count = rawCount === null ? 100 : Number(rawCount);
  if (!Number.isInteger(count) || count < 1 || count > MAX_PAGE_COUNT * 2.5) return html(400, 'Bad Request');
  const resolved = resolveInventory(state, steamId);
  const inventory = resolved === 'private' ? state.hiddenInventories.get(steamId) : resolved;
  if (inventory === undefined || inventory === 'not_found') return Response.json({ response: {} });
  const body = pageBody(contextView(inventory, context), count, url.searchParams.get('start_assetid'), false);
  const withProperties = url.searchParams.get('get_asset_properties') === 'true' || url.searchParams.get('get_asset_properties') === '1';
  const withDescriptions = url.searchParams.get('get_descriptions') === 'true' || url.searchParams.get('get_descriptions') === '1';
  const { asset_properties: properties, descriptions, ...rest } = body;
  return Response.json({
    response: {
      ...rest,
      ...(withDescriptions && descriptions ? { descriptions } : {}),
      ...(withProperties && properties ? { asset_properties: properties } : {}),
    },
  });
}
