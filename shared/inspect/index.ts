/** Offline item certificates (docs/design.md §10 "Inspect decode", docs/design.md §11 inventories): plain functions, no HTTP. */
export {
  CertificateError,
  type CertificateInput,
  certificateChecksum,
  type DecodedItem,
  decodeCertificate,
  encodeCertificate,
  MAX_CERTIFICATE_BYTES,
} from './certificate.ts';
export {
  type FloatInsight,
  floatInsightSchema,
  type ItemInsights,
  insightsSchema,
  itemInsights,
  phaseVersionOfPaint,
  wearRangeOf,
} from './insights.ts';
export { type ItemValidationResult, itemSelectorRequestSchema, validateItemSelector } from './item-validation.ts';
export { InspectLinkError, parseInspectLink } from './link.ts';
export {
  type CharmState,
  charmSchema,
  familyOfDefinition,
  ITEM_FAMILIES,
  type ItemFamily,
  type ItemIdentity,
  type ItemSelector,
  type ItemState,
  itemIdentitySchema,
  itemSelectorSchema,
  itemStateSchema,
  type StickerState,
  stickerSchema,
} from './selector.ts';
