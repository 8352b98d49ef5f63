-- txoutbox schema version 1: the outbox table.
-- Placeholders (Flyway syntax, also filled by txoutbox's own migrate): ${schema}, ${outbox_table}, ${shards}.
-- Identifiers are validated against ^[a-z_][a-z0-9_]{0,62}$ before they are put here.

CREATE SCHEMA IF NOT EXISTS "${schema}";

-- The shard of a partition key: first 4 bytes of md5(key) as an unsigned number, modulo the shard count.
-- IMMUTABLE and based on md5 (stable across versions and platforms) so the table can compute it for every writer.
CREATE OR REPLACE FUNCTION "${schema}".txoutbox_shard(partition_key text, shards integer)
    RETURNS smallint
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN (('x' || lpad(substr(md5(partition_key), 1, 8), 16, '0'))::bit(64)::bigint % shards)::smallint;

-- A UUID version 7 (RFC 9562: 48-bit Unix milliseconds, version, random), the default event id for writers that
-- do not bring one. PostgreSQL 15 has no uuidv7(): this sets the time prefix and the version bits of a random UUID.
CREATE OR REPLACE FUNCTION "${schema}".txoutbox_uuidv7()
    RETURNS uuid
    LANGUAGE sql VOLATILE PARALLEL SAFE
    RETURN encode(
        set_bit(set_bit(
            overlay(uuid_send(gen_random_uuid())
                    placing substring(int8send((extract(epoch FROM clock_timestamp()) * 1000)::bigint) FROM 3)
                    FROM 1 FOR 6),
            52, 1), 53, 1),
        'hex')::uuid;

-- One row per event. Rows are kept after publishing (audit, replay) until retention removes them.
-- state: PENDING (to send; published_at NULL), PUBLISHED (published_at set), PARKED (its key waits for an
-- operator), DEAD (given up by policy; its key moved on).
--
-- Primary key: event_id alone. UUIDv7 ids are time-ordered, so a range of event_ids is a range of time: the table
-- can later become a table partitioned BY RANGE (event_id) with time-bounded partitions and still keep a real
-- UNIQUE(event_id), because the partition key is part of every unique constraint. id is the claim order (identity,
-- never given by writers) and is deliberately not a unique constraint, which partitioning by event_id would forbid.
CREATE TABLE IF NOT EXISTS "${schema}"."${outbox_table}" (
    id                bigint      GENERATED ALWAYS AS IDENTITY,
    event_id          uuid        NOT NULL DEFAULT "${schema}".txoutbox_uuidv7(),
    topic             text        NOT NULL,
    partition_key     text,
    shard             smallint    NOT NULL GENERATED ALWAYS AS
                          ("${schema}".txoutbox_shard(coalesce(partition_key, event_id::text), ${shards})) STORED,
    aggregate_type    text        NOT NULL,
    aggregate_id      text        NOT NULL,
    aggregate_version bigint,
    event_type        text        NOT NULL,
    payload           jsonb,
    payload_bytes     bytea,
    headers           jsonb       NOT NULL DEFAULT '{}'::jsonb,
    created_at        timestamptz NOT NULL DEFAULT now(),
    state             text        NOT NULL DEFAULT 'PENDING',
    attempts          integer     NOT NULL DEFAULT 0,
    next_attempt_at   timestamptz,
    last_error        text,
    published_at      timestamptz,
    CONSTRAINT "${outbox_table}_pkey" PRIMARY KEY (event_id),
    CONSTRAINT "${outbox_table}_one_payload" CHECK (payload IS NULL OR payload_bytes IS NULL),
    CONSTRAINT "${outbox_table}_state" CHECK (state IN ('PENDING', 'PARKED', 'DEAD', 'PUBLISHED')),
    CONSTRAINT "${outbox_table}_headers" CHECK (jsonb_typeof(headers) = 'object')
);

-- The relay's claim: pending rows in id order. Partial, so published (and parked, dead) rows leave the hot index.
-- The shard filter is applied while walking it: a relay lane owns a fixed share of the shards.
CREATE INDEX IF NOT EXISTS "${outbox_table}_pending"
    ON "${schema}"."${outbox_table}" (id) INCLUDE (shard)
    WHERE state = 'PENDING';

-- Heads of keys that wait: parked, or failed and backing off. Normally empty; read before every claim.
CREATE INDEX IF NOT EXISTS "${outbox_table}_waiting"
    ON "${schema}"."${outbox_table}" (shard, partition_key)
    WHERE state = 'PARKED' OR (state = 'PENDING' AND next_attempt_at IS NOT NULL);

-- Replay, retention and status look rows up by id.
CREATE INDEX IF NOT EXISTS "${outbox_table}_id"
    ON "${schema}"."${outbox_table}" USING brin (id);

COMMENT ON TABLE "${schema}"."${outbox_table}" IS
    'txoutbox outbox: events written in business transactions, published by a relay. Shards: ${shards}.';
