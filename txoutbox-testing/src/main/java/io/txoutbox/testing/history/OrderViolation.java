package io.txoutbox.testing.history;

/**
 * A first delivery that overtook an earlier, committed and not yet delivered event of the same key.
 *
 * @param key         the ordering key
 * @param seq         the seq that was delivered too early
 * @param expectedSeq the lowest committed seq of the key not yet delivered at that point
 * @param partition   partition of the offending record
 * @param offset      offset of the offending record
 */
public record OrderViolation(String key, long seq, long expectedSeq, int partition, long offset) {

    @Override
    public String toString() {
        return key + ": seq " + seq + " before " + expectedSeq + " @" + partition + "/" + offset;
    }
}
