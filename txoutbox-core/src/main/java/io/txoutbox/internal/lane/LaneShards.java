package io.txoutbox.internal.lane;

import java.util.ArrayList;
import java.util.List;

/**
 * Which shards a lane works: {@code shard % lanes == index}. Every process of one outbox (or one inbox consumer)
 * with the same lane count splits the shards the same way, so one lane's lock covers the same keys everywhere.
 */
public final class LaneShards {

    private LaneShards() {
    }

    /** The lane of {@code lanes} that works {@code shard}. */
    public static int laneOf(int shard, int lanes) {
        return shard % lanes;
    }

    /** The shards of lane {@code index} of {@code lanes}, out of {@code shards}, in order. */
    public static Integer[] of(int shards, int lanes, int index) {
        List<Integer> mine = new ArrayList<>();
        for (int s = 0; s < shards; s++) {
            if (laneOf(s, lanes) == index) {
                mine.add(s);
            }
        }
        return mine.toArray(new Integer[0]);
    }
}
