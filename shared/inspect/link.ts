import { MAX_CERTIFICATE_BYTES } from './certificate.ts';

/** Input that is neither an inspect link we can decode offline nor a bare certificate. */
export class InspectLinkError extends Error {
  readonly code = 'invalid_link';
  constructor(message: string) {
    super(message);
    this.name = 'InspectLinkError';
  }
}

/** Room for the longest certificate plus the `steam://rungame/730/<SteamID64>/+…%20` prefix. */
const MAX_LINK_LENGTH = MAX_CERTIFICATE_BYTES * 2 + 128;

// docs/design.md §10: the two Steam link forms, `%20` or a space before the certificate.
const PREVIEW_LINK = /^steam:\/\/(?:rungame\/730\/\d+\/|run\/730\/\/)\+csgo_econ_action_preview(?:%20| )(.*)$/s;
const BARE_HEX = /^[0-9A-Fa-f]+$/;
// S<owner SteamID64> / M<market listing id>, A<asset id>, D<…>: only the game coordinator can answer.
const LEGACY = /^[SM]\d+A\d+D[0-9A-Fa-f]+$/;
// Control characters (NUL included) never belong in a link or a certificate.
// biome-ignore lint/suspicious/noControlCharactersInRegex: the point is to refuse input holding control characters (NUL to US, DEL)
const CONTROL = /[\u0000-\u001f\u007f]/;

/**
 * Returns the certificate of an inspect link (docs/design.md §10 "Inspect decode"), uppercased when it is hex.
 * A recognised link whose certificate is not valid hex is returned as it is, so decodeCertificate
 * answers it with `invalid_certificate` like any other bad certificate.
 */
export function parseInspectLink(link: string): string {
  if (typeof link !== 'string') throw new InspectLinkError('The link must be a string.');
  if (link.length > MAX_LINK_LENGTH) {
    throw new InspectLinkError(`The link is longer than ${MAX_LINK_LENGTH} characters.`);
  }
  const trimmed = link.trim();
  if (CONTROL.test(trimmed)) throw new InspectLinkError('The link contains control characters.');

  const match = PREVIEW_LINK.exec(trimmed);
  const certificate = match ? match[1]! : trimmed;
  if (LEGACY.test(certificate)) {
    throw new InspectLinkError(
      'Legacy S…A…D… and M…A…D… inspect links can only be resolved by the game coordinator, which this service does not use; send the link that carries the item certificate (hex) instead.',
    );
  }
  if (BARE_HEX.test(certificate)) return certificate.toUpperCase();
  if (match) return certificate;
  throw new InspectLinkError(
    'Not an inspect link: expected steam://rungame/730/<id>/+csgo_econ_action_preview%20<certificate>, steam://run/730//+csgo_econ_action_preview%20<certificate> or the bare hex certificate.',
  );
}
