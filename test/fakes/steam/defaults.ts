/** Kept apart from server.ts so scripts/dev.ts can read it without loading the item library. */

/** A made-up Web API key in Steam's format (32 hex digits), accepted by the fake by default. */
export const DEFAULT_STEAM_FAKE_API_KEY = '5EA7F4CE0000000000000000DEADBEEF';
