-- txoutbox schema version 9: an index of the rows that back off, for the relay's claim floor.
-- Placeholders (Flyway syntax, also filled by txoutbox's own migrate): ${schema}, ${outbox_table}.
--
-- The relay's claim floor stays at or below the first row of its lane that backs off (PENDING with a
-- next_attempt_at: failed and waiting for its retry, or released by an operator and due), and each claim starts
-- there at the latest. Before this version the relay read every waiting key of the lane (the "waiting" index, with
-- its parked rows) before each claim and the floor stayed below the first parked row as well, so a mass park
-- (200,000 parked keys) made every claim read and send them all, and one long-parked key pinned the floor. This
-- index holds only the rows that back off (normally none, or a few), so the lowest one per lane is one short read.
--
-- Built in the migration's transaction: it takes a SHARE lock (writers wait) for one scan of the table. On a large
-- table, create it beforehand with CREATE INDEX CONCURRENTLY under the same name and definition; this script then
-- leaves it as it is. On a partitioned outbox the index is created on the parent, so on every partition.
CREATE INDEX IF NOT EXISTS "${outbox_table}_backoff"
    ON "${schema}"."${outbox_table}" (id) INCLUDE (shard)
    WHERE state = 'PENDING' AND next_attempt_at IS NOT NULL;
