package io.txoutbox.internal.pg;

import static org.assertj.core.api.Assertions.assertThat;

import io.txoutbox.OutboxSchema;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * The golden numbers of every advisory lock key for the default configuration ({@code public.outbox_event}, inbox
 * consumer "orders", replay "rebuild"). They are part of the contract between versions: relays of two versions in
 * a rolling deploy exclude each other only while they compute the same keys. The literals were computed once from
 * the code paths that took the locks before {@link AdvisoryLocks} existed ({@code relay.RelaySql.lockKey} and
 * {@code memberKey}, {@code inbox.InboxSql.lockKey} and {@code consumerHash}, {@code DefaultOutboxRetention.runLockKey},
 * and the formulas in {@code SchemaMigrator}, {@code DefaultOutboxReplay}, {@code InboxKeyBackfill} and
 * {@code PartitionConversion}); never recompute them from the code under test.
 */
class AdvisoryLockKeysTest {

    private static final OutboxSchema DEFAULTS = OutboxSchema.defaults();

    /** CRC32 of "public.outbox_event": the high half of the relay's keys, the second int of retention's. */
    private static final int RELAY_TABLE_HASH = -1256566400;
    /** Relay lanes 0..3 (kind 1). */
    private static final long[] RELAY_LANES = {
        -5396911593252388864L, -5396911593252388863L, -5396911593252388862L, -5396911593252388861L};
    /** Relay lane count 4 and 2 (kind 2, shared). */
    private static final long RELAY_LANE_COUNT_4 = -5396911593252323324L;
    private static final long RELAY_LANE_COUNT_2 = -5396911593252323326L;
    /** Relay member keys (kind 3 << 28 | lanes << 14 | cap) for 4 lanes cap 4, and 2 lanes cap 2. */
    private static final long RELAY_MEMBER_4_4 = -5396911592447082492L;
    private static final long RELAY_MEMBER_2_2 = -5396911592447115262L;

    /** CRC32 of "public.inbox_event.orders". */
    private static final int INBOX_ORDERS_HASH = -945289125;
    /** Inbox lanes 0..3 of consumer "orders": InboxSql's kind 3. */
    private static final long[] INBOX_LANES = {
        -4059985877139259392L, -4059985877139259391L, -4059985877139259390L, -4059985877139259389L};
    /** Inbox lane count 4: InboxSql's kind 4. */
    private static final long INBOX_LANE_COUNT_4 = -4059985877139193852L;

    /** Replay "rebuild" of the default outbox ("repl" and the CRC32 of {@code "public"."outbox_event_replay"/rebuild}). */
    private static final long REPLAY_REBUILD = 8243118302759692721L;
    private static final String REPLAY_CHECKPOINTS = "\"public\".\"outbox_event_replay\"";

    /** Two-int keys: namespace, hash. */
    private static final int[] MIGRATION = {1954049890, -977423767};
    private static final int[] MIGRATION_STEPS = {1954049907, 1066246909};
    private static final int[] RETENTION = {1954050676, -1256566400};
    private static final int[] INBOX_BACKFILL = {1954046566, 1611747001};
    private static final int[] PARTITION_CONVERSION = {1954050147, 1066246909};

    @Test
    void relay_keys_of_the_default_outbox_are_unchanged() {
        assertThat(AdvisoryLocks.relayTableHash(DEFAULTS)).isEqualTo(RELAY_TABLE_HASH);
        for (int i = 0; i < 4; i++) {
            assertSingle(AdvisoryLocks.relayLane(DEFAULTS, i), RELAY_LANES[i], "relay lane " + i);
        }
        assertSingle(AdvisoryLocks.relayLaneCount(DEFAULTS, 4), RELAY_LANE_COUNT_4, "relay lane count 4");
        assertSingle(AdvisoryLocks.relayLaneCount(DEFAULTS, 2), RELAY_LANE_COUNT_2, "relay lane count 2");
        assertSingle(AdvisoryLocks.relayMember(DEFAULTS, 4, 4), RELAY_MEMBER_4_4, "relay member 4/4");
        assertSingle(AdvisoryLocks.relayMember(DEFAULTS, 2, 2), RELAY_MEMBER_2_2, "relay member 2/2");
    }

    @Test
    void the_inbox_consumer_hash_is_unchanged() {
        assertThat(AdvisoryLocks.inboxConsumerHash("public", "orders")).isEqualTo(INBOX_ORDERS_HASH);
    }

    /**
     * The inbox worker's kinds are 3 and 4 (the old {@code InboxSql.LOCK_KIND_LANE}/{@code LOCK_KIND_LANE_COUNT}); at
     * 1c1618a the registry put the relay's kinds (1, 2) there, which this test caught.
     */
    @Test
    void inbox_lane_keys_of_consumer_orders_are_unchanged() {
        for (int i = 0; i < 4; i++) {
            assertSingle(AdvisoryLocks.inboxLane(INBOX_ORDERS_HASH, i), INBOX_LANES[i], "inbox lane " + i);
        }
        assertSingle(AdvisoryLocks.inboxLaneCount(INBOX_ORDERS_HASH, 4), INBOX_LANE_COUNT_4, "inbox lane count 4");
    }

    @Test
    void replay_and_one_off_job_keys_are_unchanged() {
        assertSingle(AdvisoryLocks.replay(REPLAY_CHECKPOINTS, "rebuild"), REPLAY_REBUILD, "replay");
        assertPair(AdvisoryLocks.migration("public"), MIGRATION, "migration");
        assertPair(AdvisoryLocks.migrationSteps(DEFAULTS), MIGRATION_STEPS, "migration steps");
        assertPair(AdvisoryLocks.retention(DEFAULTS), RETENTION, "retention");
        assertPair(AdvisoryLocks.inboxBackfill("public"), INBOX_BACKFILL, "inbox backfill");
        assertPair(AdvisoryLocks.partitionConversion("public", "outbox_event"), PARTITION_CONVERSION,
                "partition conversion");
    }

    @Test
    void the_pg_locks_condition_names_the_golden_halves() {
        assertThat(AdvisoryLocks.relayLane(DEFAULTS, 1).pgLocksCondition()).isEqualTo(
                "locktype = 'advisory' AND classid::bigint = " + (RELAY_LANES[1] >>> 32) + " AND objid::bigint = 65537"
                        + " AND objsubid = 1");
        assertThat(AdvisoryLocks.retention(DEFAULTS).pgLocksCondition()).isEqualTo(
                "locktype = 'advisory' AND classid::bigint = 1954050676 AND objid::bigint = "
                        + Integer.toUnsignedLong(RETENTION[1]) + " AND objsubid = 2");
    }

    /**
     * No two default keys meet in {@code pg_locks}: one-bigint keys are compared as bigints, two-int keys as pairs
     * (the two forms never meet: objsubid 1 and 2). Checked on the golden literals, so that it holds for the numbers
     * the relays of every version take, whatever computes them.
     */
    @Test
    void no_two_default_keys_collide() {
        List<Long> singles = new ArrayList<>();
        for (long k : RELAY_LANES) {
            singles.add(k);
        }
        singles.add(RELAY_LANE_COUNT_4);
        singles.add(RELAY_LANE_COUNT_2);
        singles.add(RELAY_MEMBER_4_4);
        singles.add(RELAY_MEMBER_2_2);
        for (long k : INBOX_LANES) {
            singles.add(k);
        }
        singles.add(INBOX_LANE_COUNT_4);
        singles.add(REPLAY_REBUILD);
        // and the lane counts and member keys of the other lane counts up to 4 (2 and 4 are golden above)
        for (int lanes : new int[] {1, 3}) {
            singles.add(AdvisoryLocks.relayLaneCount(DEFAULTS, lanes).single());
            singles.add(AdvisoryLocks.relayMember(DEFAULTS, lanes, lanes).single());
        }
        assertThat(new HashSet<>(singles)).as("one-bigint keys are pairwise distinct").hasSize(singles.size());
        assertThat((int) (RELAY_LANES[0] >> 32)).as("relay and inbox high halves differ")
                .isNotEqualTo((int) (INBOX_LANES[0] >> 32));
        Set<List<Integer>> pairs = new HashSet<>();
        for (int[] p : List.of(MIGRATION, MIGRATION_STEPS, RETENTION, INBOX_BACKFILL, PARTITION_CONVERSION)) {
            pairs.add(List.of(p[0], p[1]));
        }
        assertThat(pairs).as("two-int keys are pairwise distinct").hasSize(5);
    }

    private static void assertSingle(AdvisoryLocks.Key key, long golden, String what) {
        assertThat(key.pair()).as(what + " is a one-bigint key").isFalse();
        assertThat(key.single()).as(what).isEqualTo(golden);
    }

    private static void assertPair(AdvisoryLocks.Key key, int[] golden, String what) {
        assertThat(key.pair()).as(what + " is a two-int key").isTrue();
        assertThat(new int[] {key.first(), key.second()}).as(what).containsExactly(golden);
    }
}
