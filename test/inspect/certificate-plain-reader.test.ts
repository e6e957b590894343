import { describe, expect, test } from 'bun:test';
import { CEconItemPreviewDataBlock } from '@csfloat/cs2-inspect-serializer';
import fc from 'fast-check';
import { type BlockSticker, type PreviewBlock, readPlainBlock } from '../../shared/inspect/certificate.ts';

/**
 * decodeCertificate reads the plain encoding itself (readPlainBlock) and leaves anything else to
 * @csfloat/cs2-inspect-serializer's reader: whatever it reads must be what the library reads, on
 * the messages the game writes and on damaged ones (bytes changed, cut, inserted, fields appended).
 */

const STICKER_FIELDS = ['slot', 'stickerId', 'wear', 'scale', 'rotation', 'offsetX', 'offsetY', 'offsetZ', 'pattern'] as const;
const BLOCK_FIELDS = [
  'itemid',
  'defindex',
  'paintindex',
  'rarity',
  'quality',
  'paintwear',
  'paintseed',
  'killeaterscoretype',
  'killeatervalue',
  'customname',
  'origin',
] as const;

function kept(block: PreviewBlock | CEconItemPreviewDataBlock): unknown {
  const sticker = (entry: BlockSticker) => STICKER_FIELDS.map((field) => entry[field]);
  return [...BLOCK_FIELDS.map((field) => block[field]), block.stickers.map(sticker), block.keychains.map(sticker)];
}

const u32 = fc.integer({ min: 0, max: 0xffffffff });
const float = fc.float({ noNaN: true });
const sticker = fc.record(
  {
    slot: fc.integer({ min: 0, max: 7 }),
    stickerId: u32,
    wear: float,
    scale: float,
    rotation: float,
    tintId: u32,
    offsetX: float,
    offsetY: float,
    offsetZ: float,
    pattern: u32,
    highlightReel: u32,
  },
  { requiredKeys: [] },
);
const block = fc.record(
  {
    accountid: u32,
    itemid: fc.oneof(fc.bigInt({ min: 0n, max: 2n ** 49n - 1n }), fc.bigInt({ min: 0n, max: 2n ** 64n - 1n })),
    defindex: u32,
    paintindex: u32,
    rarity: u32,
    quality: u32,
    paintwear: u32,
    paintseed: u32,
    killeaterscoretype: u32,
    killeatervalue: u32,
    customname: fc.oneof({ arbitrary: fc.string({ maxLength: 24 }), weight: 4 }, { arbitrary: fc.string({ unit: 'grapheme', maxLength: 8 }), weight: 1 }),
    inventory: u32,
    origin: u32,
    questid: u32,
    dropreason: u32,
    musicindex: u32,
    entindex: fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }),
    petindex: u32,
    stickers: fc.array(sticker, { maxLength: 5 }),
    keychains: fc.array(sticker, { maxLength: 2 }),
  },
  { requiredKeys: ['stickers', 'keychains'] },
);
const damage = fc.array(
  fc.tuple(
    fc.integer({ min: 0, max: 4 }),
    fc.nat(),
    fc.integer({ min: 0, max: 255 }),
    fc.constantFrom(0x08, 0x10, 0x18, 0x3d, 0x5a, 0x62, 0x90, 0x98, 0xa2, 0x01, 0xff),
  ),
  { maxLength: 3 },
);

function damaged(bytes: Uint8Array, changes: [number, number, number, number][]): Uint8Array {
  const out = [...bytes];
  for (const [kind, at, byte, tag] of changes) {
    const position = out.length === 0 ? 0 : at % out.length;
    if (kind === 0 && out.length > 0) out[position] = byte;
    else if (kind === 1 && out.length > 0) out.splice(position, 1);
    else if (kind === 2) out.splice(position, 0, byte);
    else if (kind === 3) out.length = position;
    else out.push(tag, byte, byte ^ 0x80);
  }
  return Uint8Array.from(out);
}

function libraryRead(bytes: Uint8Array): unknown {
  try {
    return kept(CEconItemPreviewDataBlock.fromBinary(bytes));
  } catch {
    return 'throws';
  }
}

describe('readPlainBlock', () => {
  test('reads what the library reads, or leaves the message to it', () => {
    fc.assert(
      fc.property(block, damage, (message, changes) => {
        const bytes = damaged(CEconItemPreviewDataBlock.toBinary(CEconItemPreviewDataBlock.create(message)), changes);
        const plain = readPlainBlock(bytes);
        if (plain !== null) expect(kept(plain)).toEqual(libraryRead(bytes) as never);
      }),
      { numRuns: 5000 },
    );
  });

  test('reads every message as the game writes it (item id below 2^49, ASCII name tag, entindex not negative)', () => {
    const plainMessage = block.map((message) => ({
      ...message,
      ...(message.itemid === undefined ? {} : { itemid: message.itemid % 2n ** 49n }),
      // biome-ignore lint/suspicious/noControlCharactersInRegex: the class is every non-ASCII character, so its range starts at NUL
      ...(message.customname === undefined ? {} : { customname: message.customname.replace(/[^\x00-\x7f]/g, '?') }),
      ...(message.entindex === undefined ? {} : { entindex: Math.abs(message.entindex) % 2 ** 31 }),
    }));
    fc.assert(
      fc.property(plainMessage, (message) => {
        const bytes = CEconItemPreviewDataBlock.toBinary(CEconItemPreviewDataBlock.create(message));
        const plain = readPlainBlock(bytes);
        expect(plain).not.toBeNull();
        expect(kept(plain!)).toEqual(libraryRead(bytes) as never);
      }),
      { numRuns: 2000 },
    );
  });

  test('leaves unknown fields, other wire types and non-ASCII names to the library', () => {
    const unknownField = Uint8Array.from([0x18, 0x07, 0xa8, 0x01, 0x01]); // defindex 7, field 21
    const wrongWireType = Uint8Array.from([0x1d, 0, 0, 0, 0]); // defindex as fixed32
    const utf8Name = Uint8Array.from([0x18, 0x07, 0x5a, 0x02, 0xc3, 0xa9]); // customname "é"
    for (const bytes of [unknownField, wrongWireType, utf8Name]) expect(readPlainBlock(bytes)).toBeNull();
    expect(kept(readPlainBlock(Uint8Array.from([0x18, 0x07, 0x5a, 0x02, 0x68, 0x69]))!)).toEqual(
      libraryRead(Uint8Array.from([0x18, 0x07, 0x5a, 0x02, 0x68, 0x69])) as never,
    );
  });
});
