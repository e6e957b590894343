import { EXTERIORS, ITEM_TYPES, RARITIES } from '../catalog/identity.ts';

/**
 * Market segments (docs/interface.md §4, market index and market summary): a segment is one catalog attribute,
 * its value an exact attribute value. Items without the attribute (a sticker has no weapon or
 * exterior) belong to no value of that segment. The whole market is no segment.
 */
export const SEGMENTS = ['type', 'weapon', 'rarity', 'exterior'] as const;
export type Segment = (typeof SEGMENTS)[number];

/** Allowed values of the segments with a fixed list; `weapon` values are the catalog's own names. */
export const FIXED_SEGMENT_VALUES: Record<Exclude<Segment, 'weapon'>, readonly string[]> = {
  type: ITEM_TYPES,
  rarity: RARITIES,
  exterior: EXTERIORS,
};

/** A segment filter as the API receives it: both absent (the whole market) or both present. */
export type SegmentFilter = { segment: Segment; value: string } | null;
