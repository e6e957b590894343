import { z } from 'zod';

/**
 * docs/design.md §18: `image: {url, source}` on records, in a module of its own (zod only) so documents built in
 * worker threads (the keyless price lists) describe it without loading @ianlucas/cs2-lib.
 */
export const itemImageSchema = z
  .object({
    url: z
      .string()
      .describe(
        'The image: Steam’s icon (`<STEAM_IMAGE_URL>/economy/image/<icon_url>`) or cs2-lib’s image (`<ITEM_ASSETS_URL>/images/….webp`). The art is Valve’s',
      ),
    source: z
      .enum(['steam', 'cs2-lib'])
      .describe('`steam`: the newest icon Steam showed this item with; `cs2-lib`: @ianlucas/cs2-lib’s image, used until Steam’s has been seen'),
  })
  .describe('docs/design.md §18: the item’s image; null when neither Steam nor cs2-lib has one');
export type ItemImage = z.infer<typeof itemImageSchema>;
