"""The store: one logical schema rendered per engine, the chDB and ClickHouse-server backends,
rollups and retention."""
