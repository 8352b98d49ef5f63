-- txoutbox schema version 6: the inbox keeps record keys and header values byte for byte.
-- Placeholders (Flyway syntax, also filled by txoutbox's own migrate): ${schema}. Idempotent: with two outbox tables
-- in one schema this script runs twice (see V2).
--
-- Kafka keys and header values are bytes: a Schema Registry key starts with a 0x00 magic byte, foreign producers send
-- any bytes, and text cannot hold NUL or invalid UTF-8. key_bytes holds the key exactly (every row written from this
-- version on); partition_key keeps a text form used for per-key order and the shard: the key itself when it is
-- valid UTF-8 without NUL and does not start with \x, else \x and the key's bytes in lowercase hex. header_bytes holds
-- the headers exactly, only for rows where some header is not text (NULL: the headers column is exact).
--
-- Both columns are nullable without a default: adding them changes only the catalog (no table rewrite). The ALTER
-- takes ACCESS EXCLUSIVE for an instant but queues behind open transactions on inbox_event; run the migration with a
-- lock_timeout on a busy inbox. Rows stored before this version get key_bytes from a batched backfill that the
-- migration runs after this script commits, in short transactions of its own (txoutbox_backfill records when it is
-- done); readers take a NULL key_bytes as the UTF-8 of partition_key, so nothing waits for the backfill.
ALTER TABLE "${schema}".inbox_event
    ADD COLUMN IF NOT EXISTS key_bytes bytea,
    ADD COLUMN IF NOT EXISTS header_bytes bytea;

COMMENT ON COLUMN "${schema}".inbox_event.key_bytes IS
    'The record key exactly; partition_key is its text form (the text, or backslash-x and hex for other bytes).';
COMMENT ON COLUMN "${schema}".inbox_event.header_bytes IS
    'The headers exactly (txoutbox format 1), only when some header is not text; NULL: headers is exact.';

-- Completed online steps (backfills run after a script's transaction), one row each, with what they did.
CREATE TABLE IF NOT EXISTS "${schema}".txoutbox_backfill (
    step        text        NOT NULL PRIMARY KEY,
    rows_done   bigint      NOT NULL,
    batches     integer     NOT NULL,
    finished_at timestamptz NOT NULL DEFAULT now()
);
