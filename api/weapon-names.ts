import { catalogWeaponNames } from '../shared/catalog/repository.ts';
import { errors } from '../shared/http/errors.ts';
import type { AppDeps } from './deps.ts';

const WEAPON_NAMES_TTL_MS = 60_000;

/**
 * Checks a weapon name against the catalog's own weapon, knife and glove names (read from the
 * database, so the API never loads the item library), cached for a minute per process. A typo is a
 * 400 naming the choices; before the catalog is loaded there is nothing to check against.
 */
export function weaponNameCheck(deps: Pick<AppDeps, 'sql'>) {
  let weapons: { names: Set<string>; list: string[]; loadedAt: number } | null = null;
  return async function checkWeapon(weapon: string | undefined, field: string): Promise<void> {
    if (weapon === undefined) return;
    if (!weapons || Date.now() - weapons.loadedAt > WEAPON_NAMES_TTL_MS || (!weapons.names.has(weapon) && weapons.list.length === 0)) {
      const list = await catalogWeaponNames(deps.sql);
      weapons = { names: new Set(list), list, loadedAt: Date.now() };
    }
    if (weapons.list.length > 0 && !weapons.names.has(weapon)) {
      throw errors.invalidRequest(`Unknown weapon ${JSON.stringify(weapon)}.`, [
        { field, message: `expected one of ${weapons.list.map((name) => JSON.stringify(name)).join('|')}` },
      ]);
    }
  };
}
