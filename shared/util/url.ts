/** `base` + `path` with exactly one slash between them (a configured upstream URL such as
 * `SOURCE_<NAME>_URL`, `FX_URL` or `STEAM_API_URL` may carry a path prefix). */
export function joinUrl(base: string, pathAndQuery: string): string {
  return `${base.replace(/\/+$/, '')}/${pathAndQuery.replace(/^\/+/, '')}`;
}
