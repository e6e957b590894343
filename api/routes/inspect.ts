import { Elysia } from 'elysia';
import { z } from 'zod';
import { ApiError } from '../../shared/http/errors.ts';
import { text } from '../../shared/http/validation.ts';
import {
  CertificateError,
  decodeCertificate,
  InspectLinkError,
  insightsSchema,
  itemIdentitySchema,
  itemInsights,
  itemStateSchema,
  MAX_CERTIFICATE_BYTES,
  parseInspectLink,
} from '../../shared/inspect/index.ts';
import { routeResponses } from '../openapi.ts';
import { type ApiKeyPluginDeps, apiKeyPlugin } from '../plugins/api-key.ts';

/**
 * docs/design.md §10 "Inspect decode": an inspect link or bare certificate decoded offline (no game
 * coordinator), answered as the item selector plus the certificate's integers, and (docs/design.md §14) the
 * item's insights beside `item` and `state`, never inside `state`, so the answer still passes to
 * renders and viewer sessions unchanged. No Idempotency-Key: decoding is a pure function of the link.
 */

// The longest certificate the decoder reads, plus room for the `steam://rungame/730/<SteamID64>/+…%20`
// prefix and surrounding blanks; anything longer cannot decode, so it is refused before any work.
const MAX_LINK_LENGTH = MAX_CERTIFICATE_BYTES * 2 + 128;

const decodeBody = z
  .object({
    link: text({ min: 1, max: MAX_LINK_LENGTH }).describe(
      'steam://rungame/730/<id>/+csgo_econ_action_preview%20<HEX>, steam://run/730//+csgo_econ_action_preview%20<HEX> (%20 or a space), or the bare hex certificate (Steam inventory asset property 6)',
    ),
  })
  .strict();

const decodeAnswer = z.object({
  item: itemIdentitySchema.describe('The item selector’s identity: pass item and state unchanged to renders and viewer sessions'),
  state: itemStateSchema,
  insights: insightsSchema,
  rarity: z.number().int().nullable().describe('The game’s rarity integer, null when the certificate has none'),
  quality: z.number().int().nullable().describe('The game’s quality integer'),
  origin: z.number().int().nullable().describe('The game’s origin integer'),
  item_id: z.string().nullable().describe('The asset id (decimal), null for tool-made certificates'),
  certificate: z.string().describe('The certificate decoded, uppercase hex'),
});

const linkDetail = (message: string) => [{ field: 'body.link', message }];

/** Plain function for the route and the bench: link in, decoded item and its insights out, errors as the API's 400s. */
export function decodeInspectLink(link: string): z.infer<typeof decodeAnswer> {
  try {
    const { item, state, ...rest } = decodeCertificate(parseInspectLink(link));
    return { item, state, insights: itemInsights(item, state), ...rest };
  } catch (error) {
    if (error instanceof CertificateError || error instanceof InspectLinkError) {
      throw new ApiError(400, error.code, error.message, linkDetail(error.message));
    }
    throw error;
  }
}

export function inspectRoutes(deps: ApiKeyPluginDeps) {
  return new Elysia({ name: 'inspect-routes' }).use(apiKeyPlugin(deps)).post('/v2/inspect/decode', ({ body }) => decodeInspectLink(body.link), {
    operation: 'inspect.decode',
    body: decodeBody,
    detail: {
      summary: 'Decode an inspect link',
      description: [
        "Decodes an inspect link, or a bare item certificate (Steam inventory asset property 6), offline into the item selector (`item` and `state`: pass them unchanged to renders and viewer sessions), the item's insights, and the certificate's rarity, quality, origin and asset id. Legacy `S…A…D…` / `M…A…D…` links need the game coordinator, which this service does not use: they are refused as `invalid_link`. No Idempotency-Key: decoding is a pure function of the link.",
        'Errors: 400 `invalid_link`, 400 `invalid_certificate`.',
      ].join('\n\n'),
      tags: ['media'],
      responses: routeResponses({ 200: { description: 'The decoded item: item and state form the item selector', body: decodeAnswer } }),
    },
  });
}
