-- txoutbox schema version 11: what the cursor progress model needs (docs/progress-models.md).
-- Placeholders (Flyway syntax, also filled by txoutbox's own migrate): ${schema}, ${outbox_table}.
-- Every statement is idempotent and none rewrites or scans the outbox table: the progress table is new, the state
-- check is added NOT VALID (every existing row satisfies the old, narrower one), and the index of held rows is built
-- over rows that no version before this one writes (one scan of the table under a SHARE lock: on a large table,
-- create it CONCURRENTLY yourself first, with the same name and definition, and this statement does nothing).

-- One row per relay lane of a table on the cursor model: every row of the lane's shards with id <= through_id is
-- settled (delivered, or recorded as failed or held). A row is published when it is PUBLISHED, or PENDING without a
-- next_attempt_at and at or below the highest through_id of the rows whose shards hold its shard. Advanced once per
-- settlement by one HOT update (no indexed column changes; fillfactor leaves room on the page).
CREATE TABLE IF NOT EXISTS "${schema}"."${outbox_table}_progress" (
    lane       text        NOT NULL,
    shards     smallint[]  NOT NULL,
    through_id bigint      NOT NULL,
    moved_at   timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT "${outbox_table}_progress_pkey" PRIMARY KEY (lane)
) WITH (fillfactor = 50);

-- HELD: a pending row the cursor passed while its key waited (behind a parked or backing-off head). Not claimable;
-- PENDING and due again (next_attempt_at) once the head is resolved.
ALTER TABLE "${schema}"."${outbox_table}" DROP CONSTRAINT IF EXISTS "${outbox_table}_state";
ALTER TABLE "${schema}"."${outbox_table}" ADD CONSTRAINT "${outbox_table}_state"
    CHECK (state IN ('PENDING', 'PARKED', 'DEAD', 'PUBLISHED', 'DISCARDED', 'HELD')) NOT VALID;

-- Held rows by key, for the claim's probe and for the release when the key's head is resolved. Normally empty.
CREATE INDEX IF NOT EXISTS "${outbox_table}_held"
    ON "${schema}"."${outbox_table}" (shard, partition_key, id)
    WHERE state = 'HELD';

-- "Which events are not published yet?" in plain SQL, whatever the table's progress model:
--   SELECT * FROM "<schema>"."<outbox_table>_unpublished"();
-- held rows, rows backing off or due, and fresh rows above their shard's cursor (on a table whose relays never ran
-- with cursors: every PENDING row). The three arms are the held, backoff and pending indexes' (the last from the
-- lowest cursor on). A function, not a view: its body is resolved when it runs, so it follows the table through a
-- conversion to a partitioned one (a view would stay bound to the old table, now a partition).
CREATE OR REPLACE FUNCTION "${schema}"."${outbox_table}_unpublished"()
    RETURNS TABLE (id bigint, event_id uuid, topic text, partition_key text, shard smallint, event_type text,
                   state text, created_at timestamptz, attempts integer, next_attempt_at timestamptz,
                   last_error text)
    LANGUAGE sql STABLE
AS $fn$
SELECT o.id, o.event_id, o.topic, o.partition_key, o.shard, o.event_type, o.state, o.created_at, o.attempts,
       o.next_attempt_at, o.last_error
FROM "${schema}"."${outbox_table}" o
WHERE o.state = 'HELD'
   OR (o.state = 'PENDING' AND o.next_attempt_at IS NOT NULL)
   OR (o.state = 'PENDING' AND o.next_attempt_at IS NULL
       AND o.id > (SELECT min(c) FROM (SELECT coalesce(max(p.through_id), 0) AS c
                   FROM generate_series(0, ${shards} - 1) s
                   LEFT JOIN "${schema}"."${outbox_table}_progress" p ON s = ANY(p.shards) GROUP BY s) x)
       AND o.id > (SELECT coalesce(max(p.through_id), 0) FROM "${schema}"."${outbox_table}_progress" p
                   WHERE o.shard = ANY(p.shards)))
ORDER BY o.id
$fn$;
