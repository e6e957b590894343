import SteamID from 'steamid';

/** A parsed Steam account in the three notations every game-platform response carries (docs/design.md §11). */
export type SteamIds = { steam_id: string; steam_id2: string; steam_id3: string };

/**
 * SteamID64, SteamID2 (`STEAM_0:…` or `STEAM_1:…`) or SteamID3 (`[U:1:…]`) of an individual account
 * in the public universe, or null for anything else: vanity names, groups, other universes,
 * malformed or out-of-range numbers. SteamID2 is rendered in the `STEAM_0:` form.
 */
export function parseSteamId(input: string): SteamIds | null {
  if (input.length === 0 || input.length > 32 || input.trim() !== input) return null;
  let id: SteamID;
  try {
    id = new SteamID(input);
  } catch {
    return null;
  }
  if (!id.isValidIndividual() || id.universe !== SteamID.Universe.PUBLIC) return null;
  const steamId64 = id.getSteamID64();
  // The package accepts 64-bit numbers it then wraps or pads; only its own canonical spelling counts.
  if (/^[0-9]+$/.test(input) && input !== steamId64) return null;
  return { steam_id: steamId64, steam_id2: id.getSteam2RenderedID(), steam_id3: id.getSteam3RenderedID() };
}

/** The three notations of a SteamID64 we stored ourselves (a valid individual id). */
export function steamIdsOf(steamId64: string): SteamIds {
  const ids = parseSteamId(steamId64);
  if (!ids) throw new Error(`not an individual public SteamID64: ${steamId64}`);
  return ids;
}
