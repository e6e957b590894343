import { describe, expect, test } from 'bun:test';
import fc from 'fast-check';
import { parseSteamId } from '../../shared/gameplatform/steam-id.ts';

const BASE = 76561197960265728n; // individual, public universe, desktop instance, account 0

describe('parseSteamId', () => {
  test('reads the three notations of one account alike', () => {
    const expected = { steam_id: '76561197960287930', steam_id2: 'STEAM_0:0:11101', steam_id3: '[U:1:22202]' };
    for (const input of ['76561197960287930', 'STEAM_0:0:11101', 'STEAM_1:0:11101', '[U:1:22202]']) expect(parseSteamId(input)).toEqual(expected);
  });

  test('refuses vanity names, groups, other universes, account 0 and malformed input', () => {
    for (const input of [
      'gabelogannewell',
      '',
      ' 76561197960287930',
      '76561197960287930 ',
      '076561197960287930',
      '76561197960287930x',
      '103582791429521412',
      '[g:1:4]',
      '[U:1:0]',
      '[U:2:22202]',
      'STEAM_0:2:11101',
      '18446744073709551616',
      '1'.repeat(40),
      '\u0000',
      '7656119796028793\u0000',
    ]) {
      expect({ input, parsed: parseSteamId(input) }).toEqual({ input, parsed: null });
    }
  });

  test('property: every notation of an individual account round-trips to the same three', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 2 ** 32 - 1 }), (accountId) => {
        const steamId64 = (BASE + BigInt(accountId)).toString();
        const ids = parseSteamId(steamId64);
        expect(ids).not.toBeNull();
        expect(ids!.steam_id).toBe(steamId64);
        const y = accountId % 2;
        expect(ids!.steam_id2).toBe(`STEAM_0:${y}:${(accountId - y) / 2}`);
        expect(ids!.steam_id3).toBe(`[U:1:${accountId}]`);
        for (const notation of [ids!.steam_id2, ids!.steam_id2.replace('STEAM_0', 'STEAM_1'), ids!.steam_id3]) expect(parseSteamId(notation)).toEqual(ids);
      }),
      { seed: 11, numRuns: 500 },
    );
  });
});
