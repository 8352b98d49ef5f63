-- txoutbox schema version 8: the outbox's installation id.
-- Placeholders (Flyway syntax, also filled by txoutbox's own migrate): ${schema}, ${outbox_table}.

-- One row: a random id made once, by the migrate that creates this table, for this outbox table. It names the outbox
-- installation, not a process or a host: every relay instance, restart, replica and failover of this outbox reads
-- the same id, and every other outbox (another schema, database or cluster) has another. The Kafka transport builds
-- each lane's default transactional.id from it ('txoutbox-<id>-<lane index>'), so a new owner of a lane fences the
-- old one, and two services with default settings on one broker never fence each other. A database restored or
-- cloned from another's backup carries the same id: run both and their relays fence each other (the relay notices,
-- stops the lane and says so); give the copy a new id with UPDATE ... SET id = gen_random_uuid(), its relays stopped.
CREATE TABLE IF NOT EXISTS "${schema}"."${outbox_table}_installation" (
    one_row    boolean     NOT NULL DEFAULT true,
    id         uuid        NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT "${outbox_table}_inst_pkey" PRIMARY KEY (one_row),
    CONSTRAINT "${outbox_table}_inst_one_row" CHECK (one_row)
);

INSERT INTO "${schema}"."${outbox_table}_installation" (id)
SELECT gen_random_uuid()
WHERE NOT EXISTS (SELECT FROM "${schema}"."${outbox_table}_installation");
