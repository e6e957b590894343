/** The source names this deployment knows (docs/design.md §9, §13 and §14); `SOURCES` enables a subset. */
export const SOURCE_NAMES = ['skinport', 'steam', 'csfloat', 'csmarket', 'lisskins', 'waxpeer', 'whitemarket', 'bitskins', 'csdeals', 'skinbaron'] as const;
export type SourceName = (typeof SOURCE_NAMES)[number];

/** Each source's real host, the default of its `SOURCE_<NAME>_URL` (docs/design.md §9, §13 and §14). */
export const SOURCE_DEFAULT_URLS: Record<SourceName, string> = {
  skinport: 'https://api.skinport.com',
  steam: 'https://steamcommunity.com',
  csfloat: 'https://csfloat.com',
  csmarket: 'https://market.csgo.com',
  lisskins: 'https://lis-skins.com',
  waxpeer: 'https://api.waxpeer.com',
  whitemarket: 'https://api.white.market',
  bitskins: 'https://api.bitskins.com',
  csdeals: 'https://cs.deals',
  skinbaron: 'https://api.skinbaron.de',
};
