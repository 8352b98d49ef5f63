-- txoutbox schema version 10: inbox operations (the outbox's operator verbs and audit for the inbox, as V3).
-- Placeholders (Flyway syntax, also filled by txoutbox's own migrate): ${schema}. Idempotent: with two outbox tables
-- in one schema this script runs twice (see V2). None of it rewrites or scans the table: ADD COLUMN without a default
-- is a catalog change only, and the new state check is added NOT VALID (every existing row already satisfies the old,
-- narrower check; the new one is enforced for every row written from now on).

-- failed_at: when the event was last parked or given up (set by the inbox worker, and by the receiver for a record it
-- keeps DEAD). operator_action / operator_name / operator_at: the last change an operator made through InboxAdmin
-- (REQUEUED, DISCARDED, SKIPPED), who made it and when (the database's clock).
ALTER TABLE "${schema}".inbox_event ADD COLUMN IF NOT EXISTS failed_at timestamptz;
ALTER TABLE "${schema}".inbox_event ADD COLUMN IF NOT EXISTS operator_action text;
ALTER TABLE "${schema}".inbox_event ADD COLUMN IF NOT EXISTS operator_name text;
ALTER TABLE "${schema}".inbox_event ADD COLUMN IF NOT EXISTS operator_at timestamptz;

-- DISCARDED: an operator gave up on a parked or dead event. Final: never processed, never requeued, kept for audit
-- (InboxAdmin.purge removes only PROCESSED rows), not pending; its key moves on.
ALTER TABLE "${schema}".inbox_event DROP CONSTRAINT IF EXISTS inbox_event_state;
ALTER TABLE "${schema}".inbox_event ADD CONSTRAINT inbox_event_state
    CHECK (state IN ('PENDING', 'PROCESSED', 'PARKED', 'DEAD', 'DISCARDED')) NOT VALID;

-- Parked, dead and discarded inbox rows, for the admin's lists and the status counts and gauges per consumer: V5's
-- index of parked and dead rows, now with the discarded ones (normally few, so a small index; receiving never touches
-- it, the worker only when it parks or gives up an event). On an existing large inbox this build holds receivers back
-- for its duration: create it CONCURRENTLY yourself first, and this statement does nothing; then V5's index is
-- dropped (a moment's ACCESS EXCLUSIVE lock; drop it CONCURRENTLY yourself first, and that statement does nothing).
CREATE INDEX IF NOT EXISTS inbox_event_failed_or_discarded
    ON "${schema}".inbox_event (consumer, id)
    WHERE state IN ('PARKED', 'DEAD', 'DISCARDED');
DROP INDEX IF EXISTS "${schema}".inbox_event_failed;
