-- txoutbox schema version 3: operations (dead-letter and parked-key admin, audit).
-- Placeholders (Flyway syntax, also filled by txoutbox's own migrate): ${schema}, ${outbox_table}.
-- Every statement is idempotent and none rewrites or scans the table: ADD COLUMN without a default is a catalog
-- change only, and the new state check is added NOT VALID (every existing row already satisfies the old, narrower
-- check; the new one is enforced for every row written from now on).

-- failed_at: when the event was last parked or dead-lettered (set by the relay).
-- operator_action / operator_name / operator_at: the last change an operator made through OutboxAdmin
-- (REQUEUED, DISCARDED, SKIPPED), who made it and when (the database's clock).
ALTER TABLE "${schema}"."${outbox_table}" ADD COLUMN IF NOT EXISTS failed_at timestamptz;
ALTER TABLE "${schema}"."${outbox_table}" ADD COLUMN IF NOT EXISTS operator_action text;
ALTER TABLE "${schema}"."${outbox_table}" ADD COLUMN IF NOT EXISTS operator_name text;
ALTER TABLE "${schema}"."${outbox_table}" ADD COLUMN IF NOT EXISTS operator_at timestamptz;

-- DISCARDED: an operator gave up on a parked or dead event. Final: never sent, never requeued by "all dead", kept
-- for audit (retention removes only PUBLISHED rows).
ALTER TABLE "${schema}"."${outbox_table}" DROP CONSTRAINT IF EXISTS "${outbox_table}_state";
ALTER TABLE "${schema}"."${outbox_table}" ADD CONSTRAINT "${outbox_table}_state"
    CHECK (state IN ('PENDING', 'PARKED', 'DEAD', 'PUBLISHED', 'DISCARDED')) NOT VALID;

-- The BRIN index on id serves retention, replay and status by id range. A page range that was never summarized
-- matches every query, so between two vacuums each id-range read also read the whole unsummarized tail of the
-- table: have autovacuum summarize each range as soon as it fills.
ALTER INDEX "${schema}"."${outbox_table}_id" SET (autosummarize = on);

-- Parked, dead and discarded rows, for the admin's lists and the status counts (normally few, so a small index; a
-- writer never touches it, the relay only when it parks or dead-letters). On an existing large table this build
-- holds writers back for its duration: create it CONCURRENTLY yourself first, and this statement does nothing.
CREATE INDEX IF NOT EXISTS "${outbox_table}_failed"
    ON "${schema}"."${outbox_table}" (id)
    WHERE state IN ('PARKED', 'DEAD', 'DISCARDED');
