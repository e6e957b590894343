import { CEconItemPreviewDataBlock } from '@csfloat/cs2-inspect-serializer';
import { buf as crc32 } from 'crc-32';
import { type CharmState, familyOfDefinition, type ItemFamily, type ItemState, MAX_NAME_TAG_LENGTH, type StickerState } from './selector.ts';

/**
 * The offline item-certificate decoder of docs/design.md §10 "Inspect decode": the hex of an inspect link, or
 * asset property 6 of a Steam inventory (docs/design.md §11). Layout: byte 0 is an XOR key, every later byte is
 * XORed with it; the last 4 bytes (big-endian) are a checksum of the payload between them, which is a
 * `CEconItemPreviewDataBlock`. The protobuf is read with @csfloat/cs2-inspect-serializer's message
 * type, except the plain encoding the game writes, which readPlainBlock reads to the same values
 * faster; the unmasking and the checksum are ours because the library skips the checksum on masked
 * links (key ≠ 0) and docs/design.md §10 says we do not.
 */

export type DecodedItem = {
  item: { family: ItemFamily; definition_index: number };
  state: ItemState;
  rarity: number | null;
  quality: number | null;
  origin: number | null;
  item_id: string | null;
  /** The certificate as decoded, normalised to uppercase hex. */
  certificate: string;
};

/** A certificate that is not valid hex, has a bad length or checksum, or holds no readable item. */
export class CertificateError extends Error {
  readonly code = 'invalid_certificate';
  constructor(message: string) {
    super(message);
    this.name = 'CertificateError';
  }
}

/** Key byte + at least one payload byte + 4 checksum bytes. */
const MIN_CERTIFICATE_BYTES = 6;
/** Real certificates are under 300 bytes (five stickers, a charm, a name tag); this bounds the work. */
export const MAX_CERTIFICATE_BYTES = 2048;
/** docs/design.md §10: the selector carries at most this many stickers and charms. */
const MAX_STICKERS = 32;
const MAX_CHARMS = 8;

const HEX = /^[0-9A-Fa-f]*$/;

/**
 * docs/design.md §10: `(crc & 0xFFFF) ^ (len × crc) mod 2³²` with crc the CRC-32 of the key byte followed by
 * the unmasked payload. Math.imul keeps the product exact mod 2³² whatever the length.
 */
export function certificateChecksum(key: number, payload: Uint8Array): number {
  const crc = crc32(payload, crc32([key]));
  return ((crc & 0xffff) ^ Math.imul(payload.length, crc)) >>> 0;
}

const float32 = new DataView(new ArrayBuffer(4));

/** paintwear travels as the bits of a float32 in a uint32 field. */
function wearFromBits(bits: number): number {
  float32.setUint32(0, bits);
  return float32.getFloat32(0);
}

function bitsFromWear(wear: number): number {
  float32.setFloat32(0, wear);
  return float32.getUint32(0);
}

/** What decodeCertificate reads of a CEconItemPreviewDataBlock (the library's message type has these fields too). */
export type BlockSticker = {
  slot?: number;
  stickerId?: number;
  wear?: number;
  scale?: number;
  rotation?: number;
  offsetX?: number;
  offsetY?: number;
  offsetZ?: number;
  pattern?: number;
};
export type PreviewBlock = {
  itemid?: bigint;
  defindex?: number;
  paintindex?: number;
  rarity?: number;
  quality?: number;
  paintwear?: number;
  paintseed?: number;
  killeaterscoretype?: number;
  killeatervalue?: number;
  customname?: string;
  origin?: number;
  stickers: BlockSticker[];
  keychains: BlockSticker[];
};

/**
 * The block read directly, for the plain encoding the game and tools write: every field a known one
 * of its own wire type, varints of at most 5 bytes (the item id's at most 7), ASCII name tags, and
 * each sticker's length exactly its fields. Anything else gives null and the library's reader
 * decides (reads it or throws), so what comes out is what the library reads. The library builds a
 * reader, a TextDecoder and reflection state per message: ~5 µs a certificate, this ~0.5 µs
 * (inventories decode thousands per read).
 *
 * Field numbers (CEconItemPreviewDataBlock): 2 itemid (uint64), 3 defindex, 4 paintindex, 5 rarity,
 * 6 quality, 7 paintwear, 8 paintseed, 9 killeaterscoretype, 10 killeatervalue, 11 customname
 * (string), 12 stickers, 14 origin, 20 keychains; 1, 13, 15–19 are read and not kept (uint32, 18
 * int32). Sticker: 1 slot, 2 sticker_id, 3 wear, 4 scale, 5 rotation, 6 tint_id, 7 offset_x,
 * 8 offset_y, 9 offset_z, 10 pattern, 11 highlight_reel (floats at 3–5 and 7–9, uint32 elsewhere).
 */
export function readPlainBlock(bytes: Uint8Array): PreviewBlock | null {
  const reader = new PlainReader(bytes);
  const block: PreviewBlock = { stickers: [], keychains: [] };
  const end = bytes.length;
  while (reader.pos < end) {
    const tag = reader.varint32();
    if (tag < 0) return null;
    const field = tag >>> 3;
    const wireType = tag & 7;
    if (field === 12 || field === 20) {
      if (wireType !== 2) return null;
      const sticker = readPlainSticker(reader);
      if (!sticker) return null;
      (field === 12 ? block.stickers : block.keychains).push(sticker);
      continue;
    }
    if (field === 11) {
      if (wireType !== 2) return null;
      const name = reader.ascii();
      if (name === null) return null;
      block.customname = name;
      continue;
    }
    if (wireType !== 0 || field < 1 || field > 19) return null;
    if (field === 2) {
      const id = reader.varint49();
      if (id < 0) return null;
      block.itemid = BigInt(id);
      continue;
    }
    const value = reader.varint32();
    if (value < 0) return null;
    switch (field) {
      case 3:
        block.defindex = value;
        break;
      case 4:
        block.paintindex = value;
        break;
      case 5:
        block.rarity = value;
        break;
      case 6:
        block.quality = value;
        break;
      case 7:
        block.paintwear = value;
        break;
      case 8:
        block.paintseed = value;
        break;
      case 9:
        block.killeaterscoretype = value;
        break;
      case 10:
        block.killeatervalue = value;
        break;
      case 14:
        block.origin = value;
        break;
      default: // 1, 13, 15–19: not kept
    }
  }
  return reader.pos === end ? block : null;
}

const STICKER_FLOAT_FIELDS = 0b1110111000; // 3, 4, 5, 7, 8, 9

function readPlainSticker(reader: PlainReader): BlockSticker | null {
  const length = reader.varint32();
  if (length < 0) return null;
  const end = reader.pos + length;
  if (end > reader.length) return null;
  const sticker: BlockSticker = {};
  while (reader.pos < end) {
    const tag = reader.varint32();
    if (tag < 0) return null;
    const field = tag >>> 3;
    const wireType = tag & 7;
    if (field < 1 || field > 11) return null;
    if ((STICKER_FLOAT_FIELDS >>> field) & 1) {
      if (wireType !== 5 || reader.pos + 4 > end) return null;
      const value = reader.float32();
      switch (field) {
        case 3:
          sticker.wear = value;
          break;
        case 4:
          sticker.scale = value;
          break;
        case 5:
          sticker.rotation = value;
          break;
        case 7:
          sticker.offsetX = value;
          break;
        case 8:
          sticker.offsetY = value;
          break;
        default:
          sticker.offsetZ = value;
      }
      continue;
    }
    if (wireType !== 0) return null;
    const value = reader.varint32();
    if (value < 0) return null;
    if (field === 1) sticker.slot = value;
    else if (field === 2) sticker.stickerId = value;
    else if (field === 10) sticker.pattern = value;
    // 6 tint_id, 11 highlight_reel: not kept
  }
  return reader.pos === end ? sticker : null;
}

/** The few reads readPlainBlock needs; each gives -1 / null where the library's reader might differ or throw. */
class PlainReader {
  pos = 0;
  readonly length: number;
  private readonly view: DataView;
  constructor(private readonly bytes: Uint8Array) {
    this.length = bytes.length;
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }

  /** An unsigned varint of at most 5 bytes, as protobuf-ts's uint32() reads it; -1 past the end or when longer. */
  varint32(): number {
    const bytes = this.bytes;
    let result = 0;
    for (let shift = 0; shift < 28; shift += 7) {
      if (this.pos >= this.length) return -1;
      const b = bytes[this.pos++]!;
      result |= (b & 0x7f) << shift;
      if ((b & 0x80) === 0) return result;
    }
    if (this.pos >= this.length) return -1;
    const b = bytes[this.pos++]!;
    if ((b & 0x80) !== 0) return -1;
    // The library keeps the low 4 bits of the fifth byte.
    return (result | ((b & 0x0f) << 28)) >>> 0;
  }

  /** An unsigned varint of at most 7 bytes (below 2^49, exact as a double); -1 otherwise. */
  varint49(): number {
    const bytes = this.bytes;
    let result = 0;
    let scale = 1;
    for (let read = 0; read < 7; read += 1) {
      if (this.pos >= this.length) return -1;
      const b = bytes[this.pos++]!;
      result += (b & 0x7f) * scale;
      if ((b & 0x80) === 0) return result;
      scale *= 128;
    }
    return -1;
  }

  float32(): number {
    const value = this.view.getFloat32(this.pos, true);
    this.pos += 4;
    return value;
  }

  /** A length-delimited string of ASCII bytes (the same text as a UTF-8 decode); null otherwise. */
  ascii(): string | null {
    const length = this.varint32();
    if (length < 0 || this.pos + length > this.length) return null;
    const bytes = this.bytes;
    let text = '';
    for (let i = this.pos; i < this.pos + length; i += 1) {
      const b = bytes[i]!;
      if (b >= 0x80) return null;
      text += String.fromCharCode(b);
    }
    this.pos += length;
    return text;
  }
}

/** Decodes a hex certificate; any bad input throws CertificateError and nothing else. */
export function decodeCertificate(hex: string): DecodedItem {
  if (typeof hex !== 'string') throw new CertificateError('The certificate must be a string of hex digits.');
  if (hex.length === 0) throw new CertificateError('The certificate is empty.');
  if (hex.length > MAX_CERTIFICATE_BYTES * 2) {
    throw new CertificateError(`The certificate is longer than ${MAX_CERTIFICATE_BYTES} bytes.`);
  }
  if (!HEX.test(hex)) throw new CertificateError('The certificate is not hexadecimal.');
  if (hex.length % 2 !== 0) throw new CertificateError('The certificate has an odd number of hex digits.');
  if (hex.length < MIN_CERTIFICATE_BYTES * 2) {
    throw new CertificateError(`The certificate is shorter than ${MIN_CERTIFICATE_BYTES} bytes.`);
  }

  const bytes = Buffer.from(hex, 'hex');
  const key = bytes[0]!;
  if (key !== 0) for (let i = 1; i < bytes.length; i++) bytes[i] = bytes[i]! ^ key;
  const payload = bytes.subarray(1, bytes.length - 4);
  const expected = bytes.readUInt32BE(bytes.length - 4);
  if (certificateChecksum(key, payload) !== expected) {
    throw new CertificateError('The certificate checksum does not match its contents.');
  }

  let block: PreviewBlock;
  try {
    block = readPlainBlock(payload) ?? CEconItemPreviewDataBlock.fromBinary(payload);
  } catch {
    throw new CertificateError('The certificate does not hold a readable CEconItemPreviewDataBlock.');
  }
  if (block.defindex === undefined) throw new CertificateError('The certificate names no item definition.');

  return {
    item: { family: familyOfDefinition(block.defindex), definition_index: block.defindex },
    state: stateOf(block),
    rarity: block.rarity ?? null,
    quality: block.quality ?? null,
    origin: block.origin ?? null,
    item_id: block.itemid === undefined || block.itemid === 0n ? null : block.itemid.toString(),
    certificate: hex.toUpperCase(),
  };
}

/**
 * The selector state of a block, range-checked so the answer always passes itemStateSchema (docs/design.md §10:
 * out-of-range state is `invalid_item` downstream, so we refuse it here as a bad certificate).
 * Hand-written rather than a zod parse: inventories decode thousands of certificates per page.
 */
function stateOf(block: PreviewBlock): ItemState {
  const state: ItemState = {};
  if (block.paintindex !== undefined) state.paint_index = block.paintindex;
  if (block.paintseed !== undefined) {
    if (block.paintseed > 1000) throw new CertificateError(`The paint seed ${block.paintseed} is outside 0–1000.`);
    state.paint_seed = block.paintseed;
  }
  if (block.paintwear !== undefined) {
    const wear = wearFromBits(block.paintwear);
    if (!(wear >= 0 && wear <= 1)) throw new CertificateError('The wear is not a number between 0 and 1.');
    state.wear = wear;
  }
  // Either kill-eater field marks a kill counter; a fresh StatTrak item carries value 0.
  if (block.killeatervalue !== undefined || block.killeaterscoretype !== undefined) {
    state.stattrak = { value: block.killeatervalue ?? 0 };
  }
  if (block.customname !== undefined && block.customname !== '') {
    if (block.customname.length > MAX_NAME_TAG_LENGTH) {
      throw new CertificateError(`The name tag is longer than ${MAX_NAME_TAG_LENGTH} characters.`);
    }
    state.name_tag = block.customname;
  }
  if (block.stickers.length > 0) {
    if (block.stickers.length > MAX_STICKERS) throw new CertificateError(`The certificate has more than ${MAX_STICKERS} stickers.`);
    state.stickers = block.stickers.map(stickerOf);
  }
  if (block.keychains.length > 0) {
    if (block.keychains.length > MAX_CHARMS) throw new CertificateError(`The certificate has more than ${MAX_CHARMS} charms.`);
    state.charms = block.keychains.map(charmOf);
  }
  return state;
}

function finiteFloat(value: number | undefined, what: string): number | undefined {
  if (value !== undefined && !Number.isFinite(value)) throw new CertificateError(`The ${what} is not a finite number.`);
  return value;
}

function stickerOf(sticker: BlockSticker): StickerState {
  const slot = sticker.slot ?? 0;
  if (slot > 7) throw new CertificateError(`The sticker slot ${slot} is outside 0–7.`);
  if (sticker.stickerId === undefined) throw new CertificateError('A sticker names no sticker id.');
  const out: StickerState = { slot, sticker_id: sticker.stickerId };
  if (sticker.wear !== undefined) {
    if (!(sticker.wear >= 0 && sticker.wear <= 1)) throw new CertificateError('A sticker wear is not between 0 and 1.');
    out.wear = sticker.wear;
  }
  const scale = finiteFloat(sticker.scale, 'sticker scale');
  if (scale !== undefined) out.scale = scale;
  const rotation = finiteFloat(sticker.rotation, 'sticker rotation');
  if (rotation !== undefined) out.rotation = rotation;
  const offsetX = finiteFloat(sticker.offsetX, 'sticker offset');
  if (offsetX !== undefined) out.offset_x = offsetX;
  const offsetY = finiteFloat(sticker.offsetY, 'sticker offset');
  if (offsetY !== undefined) out.offset_y = offsetY;
  return out;
}

function charmOf(charm: BlockSticker): CharmState {
  // Charms ride in the `keychains` field with the Sticker message: sticker_id is the charm id.
  if (charm.stickerId === undefined) throw new CertificateError('A charm names no charm id.');
  const out: CharmState = { slot: charm.slot ?? 0, charm_id: charm.stickerId };
  if (charm.pattern !== undefined) out.pattern = charm.pattern;
  const offsetX = finiteFloat(charm.offsetX, 'charm offset');
  if (offsetX !== undefined) out.offset_x = offsetX;
  const offsetY = finiteFloat(charm.offsetY, 'charm offset');
  if (offsetY !== undefined) out.offset_y = offsetY;
  const offsetZ = finiteFloat(charm.offsetZ, 'charm offset');
  if (offsetZ !== undefined) out.offset_z = offsetZ;
  return out;
}

/** What encodeCertificate needs: the selector's definition and state plus the optional integers. */
export type CertificateInput = {
  item: { definition_index: number };
  state: ItemState;
  rarity?: number | null;
  quality?: number | null;
  origin?: number | null;
  item_id?: string | null;
};

/**
 * Builds a certificate for fakes and tests, with the library's protobuf serialiser. `key` 0 gives
 * the unmasked form tools make (the same hex as the library's generateHex); any other key the masked
 * form the game makes. Floats are stored as float32, so they come back rounded to float32.
 */
export function encodeCertificate(input: CertificateInput, options: { key?: number } = {}): string {
  const key = options.key ?? 0;
  if (!Number.isInteger(key) || key < 0 || key > 255) throw new RangeError('key must be a byte');
  const { state } = input;
  const block: CEconItemPreviewDataBlock = {
    defindex: input.item.definition_index,
    paintindex: state.paint_index,
    paintseed: state.paint_seed,
    paintwear: state.wear === undefined ? undefined : bitsFromWear(state.wear),
    rarity: input.rarity ?? undefined,
    quality: input.quality ?? undefined,
    origin: input.origin ?? undefined,
    itemid: input.item_id == null ? undefined : BigInt(input.item_id),
    killeatervalue: state.stattrak?.value,
    killeaterscoretype: state.stattrak ? 0 : undefined,
    customname: state.name_tag,
    stickers: (state.stickers ?? []).map((sticker) => ({
      slot: sticker.slot,
      stickerId: sticker.sticker_id,
      wear: sticker.wear,
      scale: sticker.scale,
      rotation: sticker.rotation,
      offsetX: sticker.offset_x,
      offsetY: sticker.offset_y,
    })),
    keychains: (state.charms ?? []).map((charm) => ({
      slot: charm.slot,
      stickerId: charm.charm_id,
      pattern: charm.pattern,
      offsetX: charm.offset_x,
      offsetY: charm.offset_y,
      offsetZ: charm.offset_z,
    })),
  };
  const payload = CEconItemPreviewDataBlock.toBinary(block);
  const bytes = Buffer.alloc(payload.length + 5);
  bytes[0] = key;
  bytes.set(payload, 1);
  bytes.writeUInt32BE(certificateChecksum(key, payload), payload.length + 1);
  if (key !== 0) for (let i = 1; i < bytes.length; i++) bytes[i] = bytes[i]! ^ key;
  return bytes.toString('hex').toUpperCase();
}
