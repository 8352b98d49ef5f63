package io.txoutbox.test;

import io.txoutbox.OutboxPartitioning;
import io.txoutbox.OutboxSchema;
import io.txoutbox.internal.SchemaMigrator;
import java.sql.Connection;
import java.sql.DriverManager;
import java.time.Clock;
import java.time.Instant;
import java.time.ZoneOffset;

/**
 * A migrate that converts an outbox table into a daily-partitioned one, as its own JVM, for tests that SIGKILL it at a
 * step of the conversion ({@code -Dtxoutbox.hooks=convert-...=kill}). Arguments: jdbcUrl user password schema table
 * clockEpochMillis (the conversion's "now"). Prints {@code CONVERSION-DONE} when migrate returns.
 */
public final class ConversionProcessMain {

    public static void main(String[] args) throws Exception {
        OutboxSchema schema = OutboxSchema.builder().schema(args[3]).outboxTable(args[4]).shards(8)
                .partitioned(OutboxPartitioning.daily()).build();
        Clock clock = Clock.fixed(Instant.ofEpochMilli(Long.parseLong(args[5])), ZoneOffset.UTC);
        try (Connection c = DriverManager.getConnection(args[0], args[1], args[2])) {
            new SchemaMigrator(schema, clock).migrate(c);
        }
        System.out.println("CONVERSION-DONE");
    }
}
