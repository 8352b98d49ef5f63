package io.txoutbox.internal;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.UUID;

/**
 * The shard of a partition key: the first four bytes of the key's MD5, read as an unsigned number, modulo the shard
 * count. The same function exists in SQL ({@code txoutbox_shard}), computed by the table itself, so writers in any
 * language get the same shard; MD5 is chosen because it is stable across PostgreSQL versions and platforms, unlike
 * PostgreSQL's internal hash functions.
 */
public final class Shards {

    private Shards() {
    }

    public static int of(String key, UUID eventId, int shards) {
        String basis = key != null ? key : eventId.toString();
        byte[] d = md5(basis.getBytes(StandardCharsets.UTF_8));
        long first = ((d[0] & 0xFFL) << 24) | ((d[1] & 0xFFL) << 16) | ((d[2] & 0xFFL) << 8) | (d[3] & 0xFFL);
        return (int) (first % shards);
    }

    private static byte[] md5(byte[] input) {
        try {
            return MessageDigest.getInstance("MD5").digest(input);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("MD5 is required by every Java platform", e);
        }
    }
}
