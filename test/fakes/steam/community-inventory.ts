/**
 * steamcommunity.com/inventory/{steamid}/730/2 (docs/design.md §11): pages of `count` (≤ 2000) assets after
 * `start_assetid`, with the descriptions and asset_properties of that page only (bbcode lines kept
 * with `preserve_bbcode=1`, else rendered as Steam renders them: docs/design.md §17); `more_items: 1`
 * and `last_assetid` while more remain. Errors carry the body `null`, as Steam's do: 403 private,
 * 400 bad count, 429 throttled, 500. An unknown account is 404 `null` (the status the service maps
 * to 404; Steam's own answer for a missing account has varied between 400, 403 and 404 over time).
 * Only context 2 is served here: assets in context 16 (protected, listed: docs/design.md §17) are left out,
 * as Steam leaves them out of the public read; econ-inventory.ts serves both to the owner's token.
 */
import type { InventoryState } from './data.ts';
import { yearlessText } from './items.ts';
import { type FakeState, retryAfterHeaders, takeFailure } from './state.ts';
import type { InventoryFixture, SteamAssetProperties, SteamDescription, SteamDescriptionLine } from './types.ts';

const nullBody = (status: number, headers: Record<string, string> = {}) =>
  new Response('null', { status, headers: { 'content-type': 'application/json; charset=utf-8', ...headers } });

/** Steam's limit since 2024: larger counts are refused outright. */
export const MAX_PAGE_COUNT = 2000;

type Indexed = { positions: Map<string, number>; descriptions: Map<string, SteamDescription>; properties: Map<string, SteamAssetProperties> };
const indexes = new WeakMap<InventoryFixture, Indexed>();

function indexOf(fixture: InventoryFixture): Indexed {
  let index = indexes.get(fixture);
  if (!index) {
    index = {
      positions: new Map(fixture.assets.map((asset, i) => [asset.assetid, i])),
      descriptions: new Map(fixture.descriptions.map((d) => [`${d.classid}_${d.instanceid}`, d])),
      properties: new Map(fixture.asset_properties.map((p) => [p.assetid, p])),
    };
    indexes.set(fixture, index);
  }
  return index;
}

const DATE_TOKEN = /\[date\](\d+)\[\/date\]/g;

function renderedLines(lines: SteamDescriptionLine[] | undefined): SteamDescriptionLine[] | undefined {
  if (!lines?.some((line) => line.type === 'bbcode')) return lines;
  return lines.map((line) =>
    line.type === 'bbcode'
      ? { ...line, type: 'html', value: line.value.replace(DATE_TOKEN, (_token, seconds: string) => yearlessText(new Date(Number(seconds) * 1000))) }
      : line,
  );
}

/**
 * A description as Steam sends it without preserve_bbcode=1 (docs/design.md §17): bbcode lines rendered as
 * HTML, their `[date]<unix>[/date]` tokens as the year-less "29 Jun @ 7:00am" (GMT here).
 */
function withoutBbcode(description: SteamDescription): SteamDescription {
  const owner = renderedLines(description.owner_descriptions);
  const lines = renderedLines(description.descriptions)!;
  if (owner === description.owner_descriptions && lines === description.descriptions) return description;
  return { ...description, descriptions: lines, ...(owner ? { owner_descriptions: owner } : {}) };
}

export function resolveInventory(state: FakeState, steamId64: string): InventoryState | undefined {
  const entry = state.inventories.get(steamId64);
  if (typeof entry !== 'function') return entry;
  const built = entry();
  state.inventories.set(steamId64, built);
  return built;
}

/** The assets of one context (2 unless an asset says 16), as a fixture of their own (cached per fixture). */
const contextViews = new WeakMap<InventoryFixture, Map<string, InventoryFixture>>();
export function contextView(fixture: InventoryFixture, context: '2' | '16'): InventoryFixture {
  let views = contextViews.get(fixture);
  if (!views) {
    views = new Map();
    contextViews.set(fixture, views);
  }
  let view = views.get(context);
  if (!view) {
    const assets = fixture.assets.filter((asset) => (asset.contextid ?? '2') === context);
    view = assets.length === fixture.assets.length ? fixture : { assets, descriptions: fixture.descriptions, asset_properties: fixture.asset_properties };
    views.set(context, view);
  }
  return view;
}

/** Steam's page body for `count` assets of `inventory` after `startAssetId` (null: from the first). */
export function pageBody(inventory: InventoryFixture, count: number, startAssetId: string | null, preserveBbcode: boolean): Record<string, unknown> {
  const total = inventory.assets.length;
  if (total === 0) return { total_inventory_count: 0 };
  const index = indexOf(inventory);
  let start = 0;
  if (startAssetId !== null) {
    const position = index.positions.get(startAssetId);
    // An asset id that is not (or no longer) there: the page is empty rather than a repeat of page 1.
    start = position === undefined ? total : position + 1;
  }
  const assets = inventory.assets.slice(start, start + count);
  const descriptionKeys = new Set(assets.map((a) => `${a.classid}_${a.instanceid}`));
  const descriptions = [...descriptionKeys]
    .map((key) => index.descriptions.get(key)!)
    .filter(Boolean)
    .map((description) => (preserveBbcode ? description : withoutBbcode(description)));
  const properties = assets.flatMap((a) => {
    const p = index.properties.get(a.assetid);
    return p ? [p] : [];
  });
  const more = start + assets.length < total;
  const last = assets.at(-1);
  return {
    assets,
    descriptions,
    asset_properties: properties,
    ...(more ? { more_items: 1, last_assetid: last!.assetid } : {}),
    total_inventory_count: total,
  };
}

export function inventoryPage(state: FakeState, steamId64: string, url: URL): Response | Promise<Response> {
  const failure = takeFailure(state, 'inventory', steamId64);
  if (failure?.stallMs !== undefined) return Bun.sleep(failure.stallMs).then(() => nullBody(failure.status, retryAfterHeaders(failure)));
  if (failure) return nullBody(failure.status, retryAfterHeaders(failure));
  const rawCount = url.searchParams.get('count');
  const count = rawCount === null ? 75 : Number(rawCount);
  if (!Number.isInteger(count) || count < 1 || count > MAX_PAGE_COUNT) return nullBody(400);
  const inventory = resolveInventory(state, steamId64);
  if (inventory === 'private') return nullBody(403);
  if (inventory === undefined || inventory === 'not_found') return nullBody(404);
  // The public read shows context 2 only: protected items and market listings (context 16) are absent (docs/design.md §17).
  const body = pageBody(contextView(inventory, '2'), count, url.searchParams.get('start_assetid'), url.searchParams.get('preserve_bbcode') === '1');
  return Response.json({ ...body, success: 1, rwgrsn: -2 });
}
