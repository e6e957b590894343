-- docs/design.md §18: how each render is drawn. `3d` with a real model of the definition in ITEM_FILES_DIR,
-- `card` (the item card: image, stickers, name tag, StatTrak counter, wear bar) without one. Decided
-- when the render is accepted and shown on it, so a render's answer never changes its mode. Renders
-- made before this migration were all drawn in 3D (stand-ins included).
alter table renders add column mode text not null default '3d' check (mode in ('3d', 'card'));
