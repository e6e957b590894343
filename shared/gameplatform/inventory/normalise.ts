import {
  CertificateError,
  type CharmState,
  decodeCertificate,
  familyOfDefinition,
  type ItemIdentity,
  type ItemState,
  itemInsights,
} from '../../inspect/index.ts';
import { CHARM_PATTERN_MAX } from '../../inspect/item-validation.ts';
import { MAX_NAME_TAG_LENGTH } from '../../inspect/selector.ts';
import type { SeenIcon } from '../../media/images/item-icons.ts';
import { ICON_URL_PATTERN, type ImageHosts, type ItemImage, libSkinImage, steamIconImage } from '../../media/images/item-images.ts';
import { isObject } from '../steam-client.ts';
import { priceVersionOf } from '../valuation.ts';
import type { StoredAsset } from './asset-record.ts';
import { type HoldReading, readHold } from './holds.ts';
import { ASSET_ID, flag, type InventoryContext, type InventoryPage, stringOf } from './steam-community.ts';

/**
 * Steam community inventory pages → our asset records (docs/design.md §11, §14): one record per asset with
 * its item, state (certificate first, then the asset properties), insights, hold and inspect link.
 */

/**
 * What one asset's properties say. Steam's property ids (IEconService/GetAssetPropertySchema): 1 paint
 * seed, 2 wear, 3 charm pattern, 4 sticker wear, 5 name tag, 6 item certificate. Since 2025 the
 * certificate usually lacks the name tag and the charm patterns, which come as property 5, as
 * property 3 of a standalone charm, and as property 3 in the `standalone_properties` of the charm's
 * entry in `asset_accessories` (docs/design.md §14). Every entry also has a `name`, localized with `l=`:
 * only `propertyid` is read, never the name.
 */
type AssetProperties = {
  paintSeed?: number;
  wear?: number;
  /** Property 3 of the asset itself: a standalone charm's pattern. */
  charmPattern?: number;
  /** Property 5. */
  nameTag?: string;
  /** Property 6. */
  certificate: string | null;
  /** Property 3 of each accessory that has one, in Steam's order: the patterns of attached charms. */
  accessoryCharmPatterns: number[];
};

function charmPatternOf(property: Record<string, unknown>): number | undefined {
  const pattern = Number(stringOf(property.int_value));
  return Number.isInteger(pattern) && pattern >= 0 && pattern <= CHARM_PATTERN_MAX ? pattern : undefined;
}

/** The pattern (property 3) in one `asset_accessories` entry's standalone_properties, if any. */
function accessoryCharmPattern(accessory: unknown): number | undefined {
  if (!isObject(accessory) || !Array.isArray(accessory.standalone_properties)) return undefined;
  for (const property of accessory.standalone_properties) {
    if (isObject(property) && Number(property.propertyid) === 3) return charmPatternOf(property);
  }
  return undefined;
}

/**
 * Properties of one asset: `entry` is its `asset_properties` item, which carries `asset_accessories`
 * beside `asset_properties` (as the community inventory sends it); `looseAccessories` are entries
 * of a page-level `asset_accessories` array naming this asset id (read too, should Steam send them so).
 */
function readProperties(entry: unknown, looseAccessories: unknown[] = []): AssetProperties {
  const out: AssetProperties = { certificate: null, accessoryCharmPatterns: [] };
  const nested = isObject(entry) && Array.isArray(entry.asset_accessories) ? entry.asset_accessories : [];
  for (const accessories of [nested, looseAccessories]) {
    for (const accessory of accessories) {
      const pattern = accessoryCharmPattern(accessory);
      if (pattern !== undefined) out.accessoryCharmPatterns.push(pattern);
    }
  }
  if (!isObject(entry) || !Array.isArray(entry.asset_properties)) return out;
  for (const property of entry.asset_properties) {
    if (!isObject(property)) continue;
    const id = Number(property.propertyid);
    if (id === 1) {
      const seed = Number(stringOf(property.int_value));
      if (Number.isInteger(seed) && seed >= 0 && seed <= 1000) out.paintSeed = seed;
    } else if (id === 2) {
      const wear = Number(stringOf(property.float_value));
      if (Number.isFinite(wear) && wear >= 0 && wear <= 1) out.wear = wear;
    } else if (id === 3) {
      const pattern = charmPatternOf(property);
      if (pattern !== undefined) out.charmPattern = pattern;
    } else if (id === 5) {
      const nameTag = property.string_value;
      if (typeof nameTag === 'string' && nameTag.length >= 1 && nameTag.length <= MAX_NAME_TAG_LENGTH) out.nameTag = nameTag;
    } else if (id === 6) {
      const certificate = stringOf(property.string_value);
      if (certificate && certificate.length <= 4096 && /^[0-9A-Fa-f]+$/.test(certificate)) out.certificate = certificate.toUpperCase();
    }
  }
  return out;
}

/**
 * The state with what the properties add where the certificate (or the catalog) left a gap: the
 * certificate wins where it has the value (docs/design.md §14). A charm pattern needs a charm to go to, and
 * only the certificate names charm ids (an accessory carries a class id, not the charm id), so
 * patterns fill charms the certificate lists without one: property 3 of a standalone charm its
 * charms[0], the accessories' patterns the weapon's charms in order.
 */
function withPropertyValues(state: ItemState, item: ItemIdentity | null, props: AssetProperties): ItemState {
  let out = state;
  if (out.paint_seed === undefined && props.paintSeed !== undefined) out = { ...out, paint_seed: props.paintSeed };
  if (out.wear === undefined && props.wear !== undefined) out = { ...out, wear: props.wear };
  if (out.name_tag === undefined && props.nameTag !== undefined) out = { ...out, name_tag: props.nameTag };
  const patterns = item?.family === 'charm' ? (props.charmPattern === undefined ? [] : [props.charmPattern]) : props.accessoryCharmPatterns;
  if (out.charms && patterns.length > 0) {
    const charms: CharmState[] = out.charms.map((charm, position) => {
      const pattern = patterns[position];
      return charm.pattern === undefined && pattern !== undefined ? { ...charm, pattern } : charm;
    });
    out = { ...out, charms };
  }
  return out;
}

/** The inspect action's link as the description gives it (placeholders unfilled), else null. */
function inspectTemplateOf(actions: unknown): string | null {
  if (!Array.isArray(actions)) return null;
  const action = actions.find((entry) => isObject(entry) && typeof entry.link === 'string' && entry.link.includes('csgo_econ_action_preview'));
  return action ? (action as { link: string }).link : null;
}

/** The inspect link with its placeholders filled, or null when one stays unknown (or there is none). */
function inspectLinkOf(template: string | null, steamId64: string, assetId: string, certificate: string | null): string | null {
  if (template === null) return null;
  let link = template.replaceAll('%owner_steamid%', steamId64).replaceAll('%assetid%', assetId);
  if (link.includes('%propid:6%')) {
    if (!certificate) return null;
    link = link.replaceAll('%propid:6%', certificate);
  }
  return /%[a-z_:0-9]+%/i.test(link) ? null : link;
}

export type CatalogMatch = { catalog_id: string; definition_index: number | null; paint_index: number | null };

export type NormaliseOptions = {
  /** The context the pages were read from (docs/design.md §17: 16 holds protected items); default 2. */
  context?: InventoryContext;
  /** When the pages were read: a year-less hold date is resolved against it; default now. */
  readAt?: Date;
  /** Where item images are (docs/design.md §18); default the configuration's defaults (Steam's CDN, cs2-lib's host). */
  images?: ImageHosts;
};

/**
 * The records, how many assets had hold or protection text no form could read (their hold stays
 * null), and the distinct icons the descriptions carried.
 */
export type NormalisedInventory = { records: StoredAsset[]; unreadableHolds: number; icons: SeenIcon[] };

export const DEFAULT_IMAGE_HOSTS: ImageHosts = { STEAM_IMAGE_URL: 'https://community.cloudflare.steamstatic.com', ITEM_ASSETS_URL: 'https://cdn.cstrike.app' };

/**
 * docs/design.md §18: the asset's image is the icon its own description carries (what Steam shows it with);
 * a description without one falls back to cs2-lib's image of the skin (by wear), else null.
 */
export function assetImageOf(hosts: ImageHosts, iconUrl: string | null, item: StoredAsset['item'], state: ItemState): ItemImage | null {
  if (iconUrl) return steamIconImage(hosts, iconUrl);
  if (item && state.paint_index !== undefined) return libSkinImage(hosts, item.definition_index, state.paint_index, state.wear);
  return null;
}

/** What every asset of one description shares, read once per normalisation. */
type DescriptionFacts = {
  hold: HoldReading;
  marketHashName: string | null;
  match: CatalogMatch | undefined;
  name: string | null;
  type: string | null;
  tradable: boolean;
  marketable: boolean;
  inspectTemplate: string | null;
  /** Steam's icon_url, when it has the form of one. */
  iconUrl: string | null;
};

function descriptionFacts(description: Record<string, unknown>, catalog: Map<string, CatalogMatch>, context: InventoryContext, readAt: Date): DescriptionFacts {
  const marketHashName = typeof description.market_hash_name === 'string' ? description.market_hash_name : null;
  return {
    hold: readHold(description, context, readAt),
    marketHashName,
    match: marketHashName ? catalog.get(marketHashName) : undefined,
    name: typeof description.name === 'string' ? description.name : null,
    type: typeof description.type === 'string' ? description.type : null,
    tradable: flag(description.tradable),
    marketable: flag(description.marketable),
    inspectTemplate: inspectTemplateOf(description.actions),
    iconUrl: typeof description.icon_url === 'string' && ICON_URL_PATTERN.test(description.icon_url) ? description.icon_url : null,
  };
}

/** One record per asset, in upstream order; duplicate asset ids (overlapping pages) are kept once. */
export function normaliseInventory(
  steamId64: string,
  pages: InventoryPage[],
  catalog: Map<string, CatalogMatch>,
  options: NormaliseOptions = {},
): NormalisedInventory {
  const context = options.context ?? 2;
  const readAt = options.readAt ?? new Date();
  const hosts = options.images ?? DEFAULT_IMAGE_HOSTS;
  const icons = new Map<string, SeenIcon>();
  const descriptions = new Map<string, Record<string, unknown>>();
  const properties = new Map<string, unknown>();
  const looseAccessories = new Map<string, unknown[]>();
  for (const page of pages) {
    const pageAccessories = (page as { asset_accessories?: unknown }).asset_accessories;
    for (const accessory of Array.isArray(pageAccessories) ? pageAccessories : []) {
      if (!isObject(accessory) || typeof accessory.assetid !== 'string') continue;
      const list = looseAccessories.get(accessory.assetid);
      if (list) list.push(accessory);
      else looseAccessories.set(accessory.assetid, [accessory]);
    }
    for (const description of page.descriptions ?? []) {
      if (isObject(description)) descriptions.set(`${stringOf(description.classid)}_${stringOf(description.instanceid)}`, description);
    }
    for (const entry of page.asset_properties ?? []) {
      if (isObject(entry) && typeof entry.assetid === 'string') properties.set(entry.assetid, entry);
    }
  }
  const seen = new Set<string>();
  const records: StoredAsset[] = [];
  // Assets share descriptions (every case of a kind, every hold of a day): each is read once, its
  // hold and protection text parsed once, per normalisation.
  const facts = new Map<string, DescriptionFacts>();
  let unreadableHolds = 0;
  for (const page of pages) {
    for (const asset of page.assets ?? []) {
      if (!isObject(asset)) continue;
      const assetId = stringOf(asset.assetid);
      const classId = stringOf(asset.classid) ?? '0';
      const instanceId = stringOf(asset.instanceid) ?? '0';
      if (!assetId || !ASSET_ID.test(assetId) || seen.has(assetId)) continue;
      seen.add(assetId);
      const descriptionKey = `${classId}_${instanceId}`;
      let fact = facts.get(descriptionKey);
      if (!fact) {
        fact = descriptionFacts(descriptions.get(descriptionKey) ?? {}, catalog, context, readAt);
        facts.set(descriptionKey, fact);
      }
      const { hold, match } = fact;
      if (hold.unreadable) unreadableHolds += 1;
      const props = readProperties(properties.get(assetId), looseAccessories.get(assetId));
      let item: StoredAsset['item'] = null;
      let state: ItemState = {};
      if (props.certificate) {
        try {
          const decoded = decodeCertificate(props.certificate);
          item = decoded.item;
          state = decoded.state;
        } catch (error) {
          // A certificate we cannot read leaves the state to properties 1 and 2 (never a failure).
          if (!(error instanceof CertificateError)) throw error;
        }
      }
      if (!item && match?.definition_index != null) item = { family: familyOfDefinition(match.definition_index), definition_index: match.definition_index };
      if (state.paint_index === undefined && match?.paint_index != null) state = { paint_index: match.paint_index, ...state };
      state = withPropertyValues(state, item, props);
      if (fact.iconUrl && fact.marketHashName) {
        // The paint index decides the version (a Doppler phase), as for valuation.
        const version = priceVersionOf(state.paint_index);
        const key = `${fact.marketHashName}\u0000${version}\u0000${fact.iconUrl}`;
        if (!icons.has(key)) icons.set(key, { market_hash_name: fact.marketHashName, version, icon_url: fact.iconUrl });
      }
      records.push({
        asset_id: assetId,
        class_id: classId,
        instance_id: instanceId,
        market_hash_name: fact.marketHashName,
        catalog_id: match?.catalog_id ?? null,
        name: fact.name,
        type: fact.type,
        tradable: fact.tradable,
        marketable: fact.marketable,
        trade_hold_until: hold.trade_hold_until,
        protection: hold.protection,
        item,
        state,
        // Computed once here and stored with the record (docs/design.md §14), so reading a page never recomputes it.
        insights: itemInsights(item, state),
        certificate: props.certificate,
        inspect_link: inspectLinkOf(fact.inspectTemplate, steamId64, assetId, props.certificate),
        image: assetImageOf(hosts, fact.iconUrl, item, state),
      });
    }
  }
  return { records, unreadableHolds, icons: [...icons.values()] };
}
