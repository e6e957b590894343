/** Offline item certificates (docs/design.md §10 "Inspect decode", docs/design.md §11 inventories): plain functions, no HTTP. */
export {
  certificateChecksum,
  CertificateError,
  decodeCertificate,
  encodeCertificate,
  MAX_CERTIFICATE_BYTES,
  type CertificateInput,
  type DecodedItem,
} from './certificate.ts';
export { InspectLinkError, parseInspectLink } from './link.ts';
export {
  charmSchema,
  familyOfDefinition,
  ITEM_FAMILIES,
  itemIdentitySchema,
  itemSelectorSchema,
  itemStateSchema,
  stickerSchema,
  type CharmState,
  type ItemFamily,
  type ItemIdentity,
  type ItemSelector,
  type ItemState,
  type StickerState,
} from './selector.ts';
export { itemSelectorRequestSchema, validateItemSelector, type ItemValidationResult } from './item-validation.ts';
export {
  floatInsightSchema,
  insightsSchema,
  itemInsights,
  phaseVersionOfPaint,
  wearRangeOf,
  type FloatInsight,
  type ItemInsights,
} from './insights.ts';
