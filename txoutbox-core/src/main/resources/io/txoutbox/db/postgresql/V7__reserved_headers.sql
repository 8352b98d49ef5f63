-- txoutbox schema version 7: the outbox refuses a new row whose headers use a name txoutbox writes itself.
-- Placeholders (Flyway syntax, also filled by txoutbox's own migrate): ${schema}, ${outbox_table}.
--
-- The Kafka transport writes event_id, event_type, aggregate_type, aggregate_id and aggregate_version on every
-- record and owns the names starting with "txoutbox" (in any case); a row whose headers column holds one of them
-- cannot be sent, and its key would be parked at the relay, far from the writer's mistake. One constraint per name,
-- so that PostgreSQL's error (which names the constraint) names the header:
--   new row for relation "outbox_event" violates check constraint "header_event_id_is_reserved"
-- and one more for the same names in another case only (so a row is refused by one constraint) and the "txoutbox"
-- prefix. The five are a key lookup (headers ? 'event_id'); only the sixth walks the keys with a case-insensitive
-- regular expression, once per row: six such walks cost 5.5 µs per inserted row here, this way 1.7 µs (bulk INSERT,
-- one header, PostgreSQL 15).
-- The names carry no table name, so they fit in 63 characters whatever the table is called (CHECK constraint names
-- are per table).
--
-- Only rows as writers insert them are checked: PENDING and never tried by a relay (last_error IS NULL). A row the
-- relay has parked, dead-lettered or published, or an operator has requeued or discarded, is never refused, so no
-- relay or admin UPDATE of a row written before this version can fail on it.
--
-- Added NOT VALID: no scan, only a brief ACCESS EXCLUSIVE lock for the catalog change (on every partition of a
-- partitioned table). txoutbox's migrate validates them after this transaction commits, each in a transaction of its
-- own under SHARE UPDATE EXCLUSIVE (writers go on); until then they already guard every new row. With another
-- migration tool, run ALTER TABLE ... VALIDATE CONSTRAINT ... for each of them later (or leave them NOT VALID).

ALTER TABLE "${schema}"."${outbox_table}" DROP CONSTRAINT IF EXISTS "header_event_id_is_reserved";
ALTER TABLE "${schema}"."${outbox_table}" ADD CONSTRAINT "header_event_id_is_reserved"
    CHECK (state <> 'PENDING' OR last_error IS NOT NULL OR NOT headers ? 'event_id') NOT VALID;

ALTER TABLE "${schema}"."${outbox_table}" DROP CONSTRAINT IF EXISTS "header_event_type_is_reserved";
ALTER TABLE "${schema}"."${outbox_table}" ADD CONSTRAINT "header_event_type_is_reserved"
    CHECK (state <> 'PENDING' OR last_error IS NOT NULL OR NOT headers ? 'event_type') NOT VALID;

ALTER TABLE "${schema}"."${outbox_table}" DROP CONSTRAINT IF EXISTS "header_aggregate_type_is_reserved";
ALTER TABLE "${schema}"."${outbox_table}" ADD CONSTRAINT "header_aggregate_type_is_reserved"
    CHECK (state <> 'PENDING' OR last_error IS NOT NULL OR NOT headers ? 'aggregate_type') NOT VALID;

ALTER TABLE "${schema}"."${outbox_table}" DROP CONSTRAINT IF EXISTS "header_aggregate_id_is_reserved";
ALTER TABLE "${schema}"."${outbox_table}" ADD CONSTRAINT "header_aggregate_id_is_reserved"
    CHECK (state <> 'PENDING' OR last_error IS NOT NULL OR NOT headers ? 'aggregate_id') NOT VALID;

ALTER TABLE "${schema}"."${outbox_table}" DROP CONSTRAINT IF EXISTS "header_aggregate_version_is_reserved";
ALTER TABLE "${schema}"."${outbox_table}" ADD CONSTRAINT "header_aggregate_version_is_reserved"
    CHECK (state <> 'PENDING' OR last_error IS NOT NULL OR NOT headers ? 'aggregate_version') NOT VALID;

ALTER TABLE "${schema}"."${outbox_table}" DROP CONSTRAINT IF EXISTS "header_txoutbox_or_other_case_is_reserved";
ALTER TABLE "${schema}"."${outbox_table}" ADD CONSTRAINT "header_txoutbox_or_other_case_is_reserved"
    CHECK (state <> 'PENDING' OR last_error IS NOT NULL
           OR NOT jsonb_path_exists(headers, '$.keyvalue() ? ((@.key like_regex "^(event_id|event_type|aggregate_type|aggregate_id|aggregate_version)$" flag "i" && !(@.key like_regex "^(event_id|event_type|aggregate_type|aggregate_id|aggregate_version)$")) || @.key like_regex "^txoutbox" flag "i")')) NOT VALID;
