import { z } from 'zod';
import { insightsSchema, itemIdentitySchema, itemStateSchema } from '../../inspect/index.ts';
import { itemImageSchema } from '../../media/images/item-images.ts';
import { assetValueSchema } from '../valuation.ts';
import { PROTECTION_REASONS } from './holds.ts';
import { INVENTORY_CONTEXTS } from './steam-community.ts';

/**
 * Our inventory records (docs/design.md §11): one asset as GET /v2/inventories shows it, and the page. What a
 * snapshot stores per asset is the record without its valuation (StoredAsset).
 */

export { assetValueSchema };

export const protectionSchema = z
  .object({
    protected: z
      .boolean()
      .describe(
        'True when Steam marks the item sealed, its text says trade-protected, or it was read from context 16: it cannot be traded, consumed or modified, and a received item’s trade may still be reversed',
      ),
    reason: z
      .enum(PROTECTION_REASONS)
      .nullable()
      .describe(
        '`trade_protected` (received in a trade, 7 days), `market_listing` (listed on the Steam Community Market: Steam’s sealed_type 1), or null when not protected',
      ),
    until: z
      .string()
      .nullable()
      .describe('When protection ends (ISO 8601), read from Steam’s text as for trade_hold_until; null when not protected or when Steam gives no instant'),
    context: z
      .union(INVENTORY_CONTEXTS.map((context) => z.literal(context)) as [z.ZodLiteral<2>, z.ZodLiteral<16>])
      .describe('The Steam inventory context the asset was read from: 2, or 16 (protected items, read with the owner’s token)'),
  })
  .describe('Trade protection (docs/design.md §17). Snapshots stored before this field existed show it as read from context 2, not protected');

export const inventoryAssetSchema = z.object({
  asset_id: z.string(),
  class_id: z.string(),
  instance_id: z.string(),
  market_hash_name: z.string().nullable(),
  catalog_id: z.string().nullable().describe('null when the catalog does not know the item'),
  name: z.string().nullable(),
  type: z.string().nullable(),
  tradable: z.boolean(),
  marketable: z.boolean(),
  trade_hold_until: z
    .string()
    .nullable()
    .describe(
      'When the item becomes tradable (ISO 8601), for any hold, protected or not: from the `[date]` token of Steam’s text, else the dated "Tradable After" / "Tradable/Marketable After" / "… transferred until" text (read as GMT), else the year-less "29 Jun @ 7:00am" form (GMT, the nearest such instant not more than 2 days before the read), else the description’s item_expiration; null when none gives one',
    ),
  protection: protectionSchema,
  item: itemIdentitySchema.nullable().describe('null when neither the certificate nor the catalog identifies the item'),
  state: itemStateSchema.describe(
    'From the item certificate (property 6) where it has the value, else paint seed (property 1), wear (property 2), name tag (property 5), a standalone charm’s pattern (property 3) and an attached charm’s pattern (asset_accessories, property 3)',
  ),
  insights: insightsSchema,
  certificate: z.string().nullable().describe('Asset property 6, the hex inspect certificate'),
  inspect_link: z.string().nullable(),
  image: itemImageSchema
    .nullable()
    .describe(
      'docs/design.md §18: the icon this asset’s own Steam description carries (exactly what Steam shows it with: `source: "steam"`), else cs2-lib’s image of the skin by wear, else null. Snapshots stored before this field existed show cs2-lib’s image',
    ),
  value: assetValueSchema
    .nullable()
    .describe('With `valuation=<marketplace>`: the item and its stickers and charms at that marketplace (docs/design.md §14), else null'),
});
export type InventoryAsset = z.infer<typeof inventoryAssetSchema>;
/** What inventory_assets.record holds: the asset without its valuation (added when read). */
export type StoredAsset = Omit<InventoryAsset, 'value'>;

export const inventoryPageSchema = z.object({
  steam_id: z.string(),
  snapshot_id: z.string(),
  contexts: z
    .array(z.union([z.literal(2), z.literal(16)]))
    .describe(
      'The Steam inventory contexts the snapshot holds: [2, 16] when your workspace has a live owner token for this account (trade-protected items and Community Market listings included), else [2] (the public read: protected items are absent)',
    ),
  fetched_at: z.string(),
  stale: z.boolean().describe('True when the snapshot is older than INVENTORY_TTL_SECONDS (Steam failed, or a cursor pins an older snapshot)'),
  total_assets: z.number().int(),
  data: z.array(inventoryAssetSchema),
  next_cursor: z.string().nullable(),
});
