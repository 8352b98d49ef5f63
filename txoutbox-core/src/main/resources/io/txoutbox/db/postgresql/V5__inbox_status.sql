-- txoutbox schema version 5: inbox status.
-- Placeholders (Flyway syntax, also filled by txoutbox's own migrate): ${schema}. Idempotent: with two outbox tables
-- in one schema this script runs twice (see V2).

-- Parked and dead inbox rows, for the admin's lists and the status counts and gauges per consumer (normally few, so
-- a small index; receiving never touches it, the worker only when it parks or gives up an event). Without it the dead
-- count reads the whole table, processed rows included. On an existing large inbox this build holds receivers back
-- for its duration: create it CONCURRENTLY yourself first, and this statement does nothing.
CREATE INDEX IF NOT EXISTS inbox_event_failed
    ON "${schema}".inbox_event (consumer, id)
    WHERE state IN ('PARKED', 'DEAD');
