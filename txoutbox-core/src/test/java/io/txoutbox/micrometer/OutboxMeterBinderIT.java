package io.txoutbox.micrometer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.txoutbox.OutboxSchema;
import io.txoutbox.testing.postgres.PostgresExtension;
import io.txoutbox.testing.postgres.TestDatabase;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.sql.SQLException;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicBoolean;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The table gauges: names and tags, values from the table, NaN while the table cannot be read, and back. */
class OutboxMeterBinderIT {

    @RegisterExtension
    static final PostgresExtension postgres = new PostgresExtension();

    private static final Duration WAIT = Duration.ofSeconds(30);

    @Test
    void gauges_follow_the_table_and_read_nan_while_it_cannot_be_read() {
        TestDatabase db = postgres.database();
        OutboxSchema schema = OutboxSchema.builder().schema(db.schema()).outboxTable("gauges").shards(4).build();
        schema.migrate(db.dataSource());
        String t = schema.qualifiedOutboxTable();
        db.execute("INSERT INTO " + t + " (topic, partition_key, aggregate_type, aggregate_id, event_type, payload)"
                + " SELECT 'orders', 'k' || i, 'Order', 'o' || i, 'E', '{}' FROM generate_series(1, 3) i",
                "UPDATE " + t + " SET state = 'PARKED' WHERE partition_key = 'k1'",
                "UPDATE " + t + " SET state = 'DEAD' WHERE partition_key = 'k2'");
        AtomicBoolean broken = new AtomicBoolean();
        DataSource switchable = (DataSource) Proxy.newProxyInstance(getClass().getClassLoader(),
                new Class<?>[] {DataSource.class}, (proxy, method, args) -> {
                    if (broken.get() && method.getName().equals("getConnection")) {
                        throw new SQLException("connection refused (test)", "08001");
                    }
                    try {
                        return method.invoke(db.dataSource(), args);
                    } catch (InvocationTargetException e) {
                        throw e.getCause();
                    }
                });
        String outbox = schema.schema() + ".gauges";
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        try (OutboxMeterBinder binder = new OutboxMeterBinder(switchable, schema, Duration.ofSeconds(1))) {
            binder.bindTo(registry);
            await().atMost(WAIT).until(() -> registry.find(OutboxMeterBinder.PENDING).tags("topic", "orders")
                    .gauge() != null);
            Gauge pending = registry.get(OutboxMeterBinder.PENDING).tags("outbox", outbox, "topic", "orders").gauge();
            Gauge age = registry.get(OutboxMeterBinder.EVENT_AGE).tags("outbox", outbox, "topic", "orders").gauge();
            Gauge parked = registry.get(OutboxMeterBinder.PARKED_KEYS).tags("outbox", outbox).gauge();
            Gauge dead = registry.get(OutboxMeterBinder.DEAD_EVENTS).tags("outbox", outbox).gauge();
            await().atMost(WAIT).until(() -> pending.value() == 1.0 && parked.value() == 1.0 && dead.value() == 1.0);
            assertThat(age.value()).isGreaterThanOrEqualTo(0.0);
            assertThat(age.getId().getBaseUnit()).isEqualTo("seconds");

            broken.set(true);
            await().atMost(WAIT).until(() -> Double.isNaN(pending.value()) && Double.isNaN(parked.value()));
            broken.set(false);
            db.execute("UPDATE " + t + " SET state = 'PUBLISHED', published_at = now() WHERE state = 'PENDING'");
            await().atMost(WAIT).until(() -> pending.value() == 0.0 && age.value() == 0.0 && parked.value() == 1.0);

            assertThatThrownBy(() -> binder.bindTo(registry)).hasMessageContaining("bound already");
        } finally {
            registry.close();
        }
    }

    @Test
    void shard_gauges_are_off_by_default_and_follow_the_table_when_on() {
        TestDatabase db = postgres.database();
        OutboxSchema schema = OutboxSchema.builder().schema(db.schema()).outboxTable("shard_gauges").shards(2)
                .build();
        schema.migrate(db.dataSource());
        String t = schema.qualifiedOutboxTable();
        db.execute("INSERT INTO " + t + " (topic, partition_key, aggregate_type, aggregate_id, event_type, payload)"
                + " SELECT 'orders', 'k' || i, 'Order', 'o' || i, 'E', '{}' FROM generate_series(1, 20) i",
                "UPDATE " + t + " SET created_at = now() - interval '1 hour' WHERE id IN (SELECT min(id) FROM " + t
                        + " WHERE shard = 1)");
        long pendingOfShard1 = db.queryLong("SELECT count(*) FROM " + t + " WHERE shard = 1");
        String outbox = schema.schema() + ".shard_gauges";
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        try (OutboxMeterBinder plain = new OutboxMeterBinder(db.dataSource(), schema, Duration.ofSeconds(1));
                OutboxMeterBinder perShard = new OutboxMeterBinder(db.dataSource(), schema, Duration.ofSeconds(1),
                        true)) {
            SimpleMeterRegistry plainRegistry = new SimpleMeterRegistry();
            plain.bindTo(plainRegistry);
            await().atMost(WAIT).until(() -> plainRegistry.find(OutboxMeterBinder.PENDING).gauge() != null
                    && plainRegistry.get(OutboxMeterBinder.PENDING).gauge().value() == 20.0);
            assertThat(plainRegistry.find(OutboxMeterBinder.SHARD_PENDING).meters()).isEmpty();
            assertThat(plainRegistry.find(OutboxMeterBinder.SHARD_EVENT_AGE).meters()).isEmpty();

            perShard.bindTo(registry);
            await().atMost(WAIT).until(() -> registry.find(OutboxMeterBinder.SHARD_PENDING).meters().size() == 2);
            Gauge pending = registry.get(OutboxMeterBinder.SHARD_PENDING).tags("outbox", outbox, "shard", "1")
                    .gauge();
            Gauge age = registry.get(OutboxMeterBinder.SHARD_EVENT_AGE).tags("outbox", outbox, "shard", "1").gauge();
            Gauge ageOfShard0 = registry.get(OutboxMeterBinder.SHARD_EVENT_AGE).tags("outbox", outbox, "shard", "0")
                    .gauge();
            await().atMost(WAIT).until(() -> pending.value() == pendingOfShard1);
            assertThat(age.value()).isBetween(3600.0, 3600.0 + 600);
            assertThat(ageOfShard0.value()).isLessThan(600.0);
            assertThat(age.getId().getBaseUnit()).isEqualTo("seconds");

            db.execute("UPDATE " + t + " SET state = 'PUBLISHED', published_at = now() WHERE shard = 1");
            await().atMost(WAIT).until(() -> pending.value() == 0.0 && age.value() == 0.0);
            plainRegistry.close();
        } finally {
            registry.close();
        }
    }
}
