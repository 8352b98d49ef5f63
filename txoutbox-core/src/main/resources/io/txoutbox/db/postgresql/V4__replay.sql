-- txoutbox schema version 4: replay checkpoints.
-- Placeholders (Flyway syntax, also filled by txoutbox's own migrate): ${schema}, ${outbox_table}.

-- One row per named replay of this outbox table: how far it got (the last outbox id it has sent, in id order) and
-- the filter it was started with, so that a run with the same name resumes, and one with another filter is refused.
CREATE TABLE IF NOT EXISTS "${schema}"."${outbox_table}_replay" (
    name        text        NOT NULL,
    filter      text        NOT NULL,
    last_id     bigint      NOT NULL DEFAULT 0,
    up_to_id    bigint      NOT NULL,
    replayed    bigint      NOT NULL DEFAULT 0,
    skipped     bigint      NOT NULL DEFAULT 0,
    started_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    finished_at timestamptz,
    CONSTRAINT "${outbox_table}_replay_pkey" PRIMARY KEY (name)
);
