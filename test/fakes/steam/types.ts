/**
 * The Steam formats the fake speaks (docs/design.md §11), typed as Steam sends them: numbers that Steam
 * sends as strings (asset ids, amounts, float values) stay strings here.
 */

/** One entry of ISteamUser/GetPlayerSummaries/v2 `response.players`. */
export type PlayerSummary = {
  steamid: string;
  /** 1 private, 2 friends only, 3 public. */
  communityvisibilitystate: number;
  /** 1 when the user has set up a community profile. */
  profilestate: number;
  personaname: string;
  profileurl: string;
  avatar: string;
  avatarmedium: string;
  avatarfull: string;
  avatarhash: string;
  lastlogoff?: number;
  personastate: number;
  commentpermission?: number;
  primaryclanid?: string;
  /** Private data: Steam leaves these out unless the profile is public. */
  realname?: string;
  timecreated?: number;
  loccountrycode?: string;
  personastateflags?: number;
};

export type SteamAsset = {
  appid: 730;
  /** '16': trade-protected or listed on the Community Market (docs/design.md §17); absent from the public read. */
  contextid: '2' | '16';
  assetid: string;
  classid: string;
  instanceid: string;
  amount: '1';
};

export type SteamDescriptionLine = { type: string; value: string; name?: string; color?: string };

export type SteamTag = {
  category: string;
  internal_name: string;
  localized_category_name: string;
  localized_tag_name: string;
  color?: string;
};

export type SteamDescription = {
  appid: 730;
  classid: string;
  instanceid: string;
  currency: 0;
  background_color: string;
  icon_url: string;
  descriptions: SteamDescriptionLine[];
  tradable: 0 | 1;
  actions?: { link: string; name: string }[];
  owner_descriptions?: SteamDescriptionLine[];
  fraudwarnings?: string[];
  name: string;
  name_color: string;
  type: string;
  market_name: string;
  market_hash_name: string;
  market_actions?: { link: string; name: string }[];
  commodity: 0 | 1;
  market_tradable_restriction: number;
  market_marketable_restriction?: number;
  marketable: 0 | 1;
  tags: SteamTag[];
  /** 1 while the item is protected (docs/design.md §17: trade protection, or a Community Market listing). */
  sealed?: number;
  /** 1: listed on the Community Market. */
  sealed_type?: number;
  /** An ISO 8601 instant some holds carry instead of a date in their text. */
  item_expiration?: string;
};

/**
 * Steam's property ids (IEconService/GetAssetPropertySchema): 1 paint seed, 2 wear, 3 charm pattern,
 * 4 sticker wear, 5 name tag, 6 item certificate. `name` is localized with `l=` (English by default).
 */
export type SteamAssetProperty =
  | { propertyid: 1; int_value: string; name: string }
  | { propertyid: 2; float_value: string; name: string }
  | { propertyid: 3; int_value: string; name: string }
  | { propertyid: 4; float_value: string; name: string }
  | { propertyid: 5; string_value: string; name: string }
  | { propertyid: 6; string_value: string; name: string };

/**
 * One sticker or charm applied to the asset, as the community inventory has listed them (inside the
 * asset's `asset_properties` entry) since 2025: its own class id, what belongs to the charm or
 * sticker itself (`standalone_properties`: 3, the charm's pattern) and what belongs to its placement
 * (`parent_relationship_properties`: 4, the sticker's wear).
 */
export type SteamAssetAccessory = {
  classid: string;
  standalone_properties?: SteamAssetProperty[];
  parent_relationship_properties?: SteamAssetProperty[];
};

export type SteamAssetProperties = {
  appid: 730;
  contextid: '2' | '16';
  assetid: string;
  asset_properties: SteamAssetProperty[];
  asset_accessories?: SteamAssetAccessory[];
};

/**
 * A whole inventory in Steam's own format, in Steam's order (newest first); the fake cuts it into
 * pages. Every asset's classid_instanceid has one entry in `descriptions`.
 */
export type InventoryFixture = {
  assets: SteamAsset[];
  descriptions: SteamDescription[];
  asset_properties: SteamAssetProperties[];
};
