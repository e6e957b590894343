import { z } from 'zod';
import { ApiError, type ErrorDetail, errors } from '../http/errors.ts';
import { itemImageSchema } from '../media/images/item-image-schema.ts';
import { SOURCE_NAMES, type SourceName } from '../platform/source-names.ts';
import { fxSchema } from '../prices/currency.ts';

/**
 * Trade intents (docs/design.md §11, docs/interface.md §2.8 / §3): the stored row, the JSON clients see and the rules that
 * need no database. A draft reserves its outgoing assets; cancel and expiry release them.
 */
export const TRADE_INTENT_KINDS = ['create_offer', 'accept_offer'] as const;
export type TradeIntentKind = (typeof TRADE_INTENT_KINDS)[number];
export const TRADE_INTENT_STATES = ['draft', 'cancelled', 'expired'] as const;
export type TradeIntentState = (typeof TRADE_INTENT_STATES)[number];

/** docs/design.md §11: a draft lives at most 14 days. */
export const TRADE_INTENT_MAX_LIFETIME_MS = 14 * 86_400_000;
/** docs/design.md §11: an owner's inventory snapshot older than this is fetched again before the asset check. */
export const TRADE_INVENTORY_MAX_AGE_SECONDS = 600;
export const TRADE_ASSETS_PER_SIDE_MAX = 256;
/** Steam's own limit on a trade offer message. */
export const TRADE_MESSAGE_MAX_LENGTH = 128;
export const DEFAULT_VALUATION_MARKETPLACE: SourceName = 'skinport';

export type TradeIntentRow = {
  id: string;
  workspace_id: string;
  account_id: string;
  kind: TradeIntentKind;
  state: TradeIntentState;
  external_reference: string;
  message: string | null;
  partner_steam_id: string | null;
  give: string[];
  receive: string[];
  /** sql/0025: the entries captured at creation; '[]' for intents made before it (see assetsOf). */
  assets: TradeIntentAsset[];
  target_trade_id: string | null;
  valuation: Valuation;
  expires_at: Date;
  created_at: Date;
  updated_at: Date;
  /** created_at with microseconds, for cursor positions. */
  created_at_text: string;
  reservations: { asset_id: string; expires_at: Date; released_at: Date | null }[];
  /** docs/design.md §17: the partner's counts over the workspace's stored trades (trades-repository.ts partnerRiskColumns). */
  partner_trades: number;
  partner_reversals: number;
};

export type TradeIntentPosition = { created_at: string; id: string };

export const valuationSchema = z.object({
  marketplace: z.enum(SOURCE_NAMES),
  give_total: z
    .string()
    .describe('Sum of the given assets’ values (docs/design.md §14: item at its phase version, no fallback, plus its stickers and charms), a decimal string'),
  receive_total: z.string().describe('Sum of the received assets’ values, a decimal string'),
  currency: z.string().describe('USD as stored, or the `?currency=` asked for'),
  unpriced_asset_ids: z.array(z.string()).describe('Assets of either side whose item has no price at this marketplace (its stickers and charms still count)'),
});
export type Valuation = z.infer<typeof valuationSchema>;

export const TRADE_INTENT_SIDES = ['give', 'receive'] as const;
export type TradeIntentSide = (typeof TRADE_INTENT_SIDES)[number];

export const tradeIntentAssetSchema = z.object({
  asset_id: z.string(),
  side: z.enum(TRADE_INTENT_SIDES).describe('`give`: this account gives it; `receive`: this account receives it'),
  market_hash_name: z
    .string()
    .nullable()
    .describe(
      'As the asset’s inventory record showed it when the intent was created; null when Steam gave none, or for intents created before this field existed',
    ),
  catalog_id: z.string().nullable().describe('null when the catalog does not know the item, or for intents created before this field existed'),
  image: itemImageSchema
    .nullable()
    .describe(
      'docs/design.md §18: the asset’s inventory record’s `image` when the intent was created (the icon its own Steam description carries, else cs2-lib’s image of the skin by wear), kept with the intent and not refreshed; null when the record had none, or for intents created before this field existed',
    ),
});
export type TradeIntentAsset = z.infer<typeof tradeIntentAssetSchema>;

export const tradeIntentSchema = z.object({
  trade_intent_id: z.uuid(),
  kind: z.enum(TRADE_INTENT_KINDS),
  state: z.enum(TRADE_INTENT_STATES),
  account_id: z.number().int(),
  external_reference: z.string(),
  message: z.string().nullable(),
  expires_at: z.string(),
  give: z.array(z.string()).describe('Asset ids this account gives (for accept_offer: the target offer’s receive)'),
  receive: z.array(z.string()).describe('Asset ids this account receives (for accept_offer: the target offer’s give)'),
  assets: z
    .array(tradeIntentAssetSchema)
    .describe(
      'Every asset of `give` then of `receive`, in their order, with its name, catalog id and image (docs/design.md §18) as its owner’s inventory record showed them when the asset check passed',
    ),
  partner_steam_id: z.string().nullable().describe('SteamID64 of the other side'),
  target_trade_id: z.uuid().nullable(),
  valuation: valuationSchema,
  reservations: z.array(
    z.object({
      asset_id: z.string(),
      expires_at: z.string(),
      released_at: z.string().nullable().describe('Set when the intent was cancelled or expired'),
    }),
  ),
  risk: z
    .object({
      partner_reversals: z.number().int().describe("Trades the partner reversed during their trade protection, over this workspace's connected accounts"),
      partner_trades: z
        .number()
        .int()
        .describe("Trades between the partner and this workspace's connected accounts (as GET /v2/gameplatform/counterparties/{id} counts them)"),
    })
    .describe(
      "docs/design.md §17: the partner's history with this workspace, from the trades read while accounts have owner tokens; counted when the intent is read",
    ),
  created_at: z.string(),
  updated_at: z.string(),
  currency: z.string().optional().describe('With `?currency=` other than USD: the currency of the valuation'),
  fx: fxSchema.optional(),
});
export type TradeIntent = z.infer<typeof tradeIntentSchema>;

export function toTradeIntent(row: TradeIntentRow): TradeIntent {
  return {
    trade_intent_id: row.id,
    kind: row.kind,
    state: row.state,
    account_id: Number(row.account_id),
    external_reference: row.external_reference,
    message: row.message,
    expires_at: row.expires_at.toISOString(),
    give: row.give,
    receive: row.receive,
    assets: assetsOf(row),
    partner_steam_id: row.partner_steam_id,
    target_trade_id: row.target_trade_id,
    valuation: row.valuation,
    reservations: row.reservations.map((reservation) => ({
      asset_id: reservation.asset_id,
      expires_at: new Date(reservation.expires_at).toISOString(),
      released_at: reservation.released_at ? new Date(reservation.released_at).toISOString() : null,
    })),
    risk: { partner_reversals: row.partner_reversals, partner_trades: row.partner_trades },
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

/**
 * One entry per id of give then receive: the stored entry of that side and id, else (intents created
 * before sql/0025 stored '[]') the id and side with null name, catalog id and image, so `assets`
 * always lists exactly give and receive (docs/decisions.md "Trade intents' assets").
 */
export function assetsOf(row: Pick<TradeIntentRow, 'give' | 'receive' | 'assets'>): TradeIntentAsset[] {
  const stored = new Map((row.assets ?? []).map((asset) => [`${asset.side}:${asset.asset_id}`, asset]));
  return TRADE_INTENT_SIDES.flatMap((side) =>
    row[side].map((assetId) => stored.get(`${side}:${assetId}`) ?? { asset_id: assetId, side, market_hash_name: null, catalog_id: null, image: null }),
  );
}

/** 400 invalid_intent naming the field(s) of the first check that failed (docs/design.md §11 order). */
export function invalidIntent(message: string, details: ErrorDetail[]): ApiError {
  return new ApiError(400, 'invalid_intent', message, details);
}

export function conflict(
  code: 'external_reference_conflict' | 'target_offer_conflict' | 'asset_reserved' | 'intent_not_cancellable',
  message: string,
  details?: ErrorDetail[],
): ApiError {
  const error = errors.conflict(code, message);
  return details ? new ApiError(error.status, error.code, error.message, details) : error;
}
