-- txoutbox schema version 2: the inbox (consumer side).
-- Placeholders (Flyway syntax, also filled by txoutbox's own migrate): ${schema}. The inbox tables have fixed names
-- in that schema (inbox_event, processed_event, applied_version); several consumers share them, told apart by the
-- consumer column. Every statement is idempotent: txoutbox's migrate records versions per outbox table, so with two
-- outbox tables in one schema this script runs twice.

-- Dedupe for handlers that apply their effects directly (Inbox.once): one row per consumer and event, written in the
-- handler's own transaction; a conflict means "already done". processed_at serves retention.
CREATE TABLE IF NOT EXISTS "${schema}".processed_event (
    consumer     text        NOT NULL,
    event_id     uuid        NOT NULL,
    processed_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT processed_event_pkey PRIMARY KEY (consumer, event_id)
);

-- Retention deletes by age; rows arrive in time order, so a BRIN index is enough and costs the writers nothing.
CREATE INDEX IF NOT EXISTS processed_event_age
    ON "${schema}".processed_event USING brin (processed_at);

-- The highest aggregate version a consumer applied (Inbox.once with a version). Never removed by retention: it is
-- the defence that still holds when an event older than the dedupe retention is replayed.
CREATE TABLE IF NOT EXISTS "${schema}".applied_version (
    consumer       text        NOT NULL,
    aggregate_type text        NOT NULL,
    aggregate_id   text        NOT NULL,
    version        bigint      NOT NULL,
    applied_at     timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT applied_version_pkey PRIMARY KEY (consumer, aggregate_type, aggregate_id)
);

-- The durable inbox: one row per consumer and received event. PK (consumer, event_id): a redelivery is dropped, and
-- two consumers sharing the database never drop each other's events.
-- state: PENDING (to process), PROCESSED, PARKED (its key waits for an operator), DEAD (given up; the key moved on).
-- shard: the key's hash into a fixed 64 shards (the same txoutbox_shard function as the outbox), the unit of inbox
-- worker ownership; id: the processing order (received order; per key that is the Kafka offset order).
CREATE TABLE IF NOT EXISTS "${schema}".inbox_event (
    id                bigint      GENERATED ALWAYS AS IDENTITY,
    consumer          text        NOT NULL,
    event_id          uuid        NOT NULL,
    source_topic      text,
    source_partition  integer,
    source_offset     bigint,
    partition_key     text,
    shard             smallint    NOT NULL GENERATED ALWAYS AS
                          ("${schema}".txoutbox_shard(coalesce(partition_key, event_id::text), 64)) STORED,
    event_type        text,
    aggregate_type    text,
    aggregate_id      text,
    aggregate_version bigint,
    payload           bytea,
    headers           jsonb       NOT NULL DEFAULT '{}'::jsonb,
    received_at       timestamptz NOT NULL DEFAULT now(),
    state             text        NOT NULL DEFAULT 'PENDING',
    attempts          integer     NOT NULL DEFAULT 0,
    next_attempt_at   timestamptz,
    last_error        text,
    processed_at      timestamptz,
    CONSTRAINT inbox_event_pkey PRIMARY KEY (consumer, event_id),
    CONSTRAINT inbox_event_state CHECK (state IN ('PENDING', 'PROCESSED', 'PARKED', 'DEAD')),
    CONSTRAINT inbox_event_headers CHECK (jsonb_typeof(headers) = 'object')
);

-- The worker's claim: pending rows of a consumer in id order; processed rows leave the index.
CREATE INDEX IF NOT EXISTS inbox_event_pending
    ON "${schema}".inbox_event (consumer, id) INCLUDE (shard)
    WHERE state = 'PENDING';

-- Heads of keys that wait (parked, or failed and backing off). Normally empty; read before every claim.
CREATE INDEX IF NOT EXISTS inbox_event_waiting
    ON "${schema}".inbox_event (consumer, shard, partition_key)
    WHERE state = 'PARKED' OR (state = 'PENDING' AND next_attempt_at IS NOT NULL);

-- Retention of processed rows.
CREATE INDEX IF NOT EXISTS inbox_event_processed
    ON "${schema}".inbox_event (consumer, processed_at)
    WHERE state = 'PROCESSED';

COMMENT ON TABLE "${schema}".inbox_event IS
    'txoutbox inbox: received events, processed by an InboxWorker in its own transactions. 64 shards.';
