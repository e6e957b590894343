import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ScalarRender } from '@elysiajs/openapi/scalar';
import type { ElysiaOpenAPIConfig } from '@elysiajs/openapi/types';
import { Elysia } from 'elysia';

/**
 * The API reference page's script, served by the API itself from the pinned `@scalar/api-reference`
 * package, so `GET /docs` renders with no internet (the plugin's default is an unpinned CDN build).
 */

// The package's exports map hides dist/browser, so resolve its main entry and step over to the bundle.
const scalarDist = dirname(fileURLToPath(import.meta.resolve('@scalar/api-reference')));
const scalarBundle = join(scalarDist, 'browser', 'standalone.js');
const scalarVersion = (JSON.parse(readFileSync(join(scalarDist, '..', 'package.json'), 'utf8')) as { version: string }).version;

export const DOCS_SCRIPT_PATH = '/docs/scalar.js';

// The plugin types `scalar` with @scalar/types' parsed configuration (every default filled in) and
// without the per-document options (`agent`); Scalar takes a partial one and applies its defaults.
type ScalarOptions = NonNullable<ElysiaOpenAPIConfig['scalar']>;
// `mcp` is typed here too: the pinned 1.46 (the last for Node 20) has no MCP generator, a later one would.
type ScalarPageOptions = Partial<ScalarOptions> & { agent?: { disabled?: boolean }; mcp?: { disabled?: boolean } };

/**
 * Options for the plugin's Scalar page. The version in the script URL changes with the package, so
 * the year-long cache below never serves a browser an old bundle after an upgrade.
 */
const scalarPageOptions: ScalarPageOptions = {
  cdn: `${DOCS_SCRIPT_PATH}?v=${scalarVersion}`,
  version: scalarVersion,
  // Scalar's defaults fetch fonts from its CDN and report telemetry; the page must stay on our origin.
  withDefaultFonts: false,
  telemetry: false,
  // Its AI chat, MCP generator and share/deploy tools hand the document to Scalar's hosted services.
  agent: { disabled: true },
  mcp: { disabled: true },
  showDeveloperTools: 'never',
};
const docsPageScalar = scalarPageOptions as ScalarOptions;

// ScalarRender writes the title and description into HTML attributes as they are; ours quotes JSON.
const escapeHtml = (text: string): string => text.replace(/[&<>"']/g, (char) => `&#${char.charCodeAt(0)};`);

/**
 * `/openapi.json`, `/docs` and the page's script. `page` is what the HTML head shows (the document's
 * title and a one-line description; the full introduction is rendered from the document). The
 * document's `servers` entry is PUBLIC_BASE_URL, else the request's own origin, so the page's
 * request samples are absolute URLs of this API.
 */
export function docsRoutes(buildDocument: () => object, page: { title: string; description: string; version: string }, publicBaseUrl?: string) {
  let document: object | null = null;
  const html = ScalarRender({ ...page, title: escapeHtml(page.title), description: escapeHtml(page.description) }, { ...docsPageScalar, url: '/openapi.json' });
  return new Elysia({ name: 'docs-routes' })
    .get(
      '/openapi.json',
      ({ request }) => {
        document ??= buildDocument();
        const url = publicBaseUrl?.replace(/\/+$/, '') ?? new URL(request.url).origin;
        // `servers` follows `info` as in any OpenAPI document; the paths come after.
        const { openapi, info, ...rest } = document as { openapi: string; info: object };
        return {
          openapi,
          info,
          servers: [{ url, description: publicBaseUrl ? 'This deployment (PUBLIC_BASE_URL)' : 'The origin this document was fetched from' }],
          ...rest,
        };
      },
      { detail: { hide: true } },
    )
    .get('/docs', () => new Response(html, { headers: { 'content-type': 'text/html; charset=utf-8' } }), { detail: { hide: true } })
    .get(
      DOCS_SCRIPT_PATH,
      () =>
        // Bun.file streams from disk: the 4 MB bundle is never held in the API's memory.
        new Response(Bun.file(scalarBundle), {
          headers: {
            'content-type': 'text/javascript; charset=utf-8',
            'cache-control': 'public, max-age=31536000, immutable',
          },
        }),
      { detail: { hide: true } },
    );
}
