package io.txoutbox.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.txoutbox.OutboxException;
import io.txoutbox.OutboxGrants;
import io.txoutbox.OutboxSchema;
import io.txoutbox.testing.kafka.KafkaBroker;
import io.txoutbox.testing.postgres.PostgresExtension;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.UUID;
import javax.sql.DataSource;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The Kafka inbox consumer in store mode logged in as a role with exactly the receiver's grants, and one short. */
@Tag("pg-version")
@Tag("pg-edge-majors")
class KafkaInboxConsumerPrivilegesIT {

    @RegisterExtension
    static final PostgresExtension postgres = new PostgresExtension();

    private static KafkaBroker kafka;
    private static OutboxSchema schema;

    @BeforeAll
    static void setUp() {
        kafka = KafkaBroker.shared();
        schema = OutboxSchema.builder().schema(postgres.database().schema()).build();
        schema.migrate(postgres.database().dataSource());
        postgres.database().execute("REVOKE EXECUTE ON FUNCTION " + schema.schema()
                + ".txoutbox_shard(text, integer) FROM PUBLIC");
    }

    private static void produce(String topic, int n) {
        Properties p = new Properties();
        p.put("bootstrap.servers", kafka.bootstrapServers());
        p.put("key.serializer", ByteArraySerializer.class.getName());
        p.put("value.serializer", ByteArraySerializer.class.getName());
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p)) {
            for (int i = 0; i < n; i++) {
                ProducerRecord<byte[], byte[]> r = new ProducerRecord<>(topic, ("k" + (i % 7))
                        .getBytes(StandardCharsets.UTF_8), ("{\"n\":" + i + "}").getBytes(StandardCharsets.UTF_8));
                r.headers().add(KafkaHeaders.EVENT_ID, UUID.randomUUID().toString().getBytes(StandardCharsets.UTF_8));
                r.headers().add(KafkaHeaders.EVENT_TYPE, "E".getBytes(StandardCharsets.UTF_8));
                producer.send(r);
            }
            producer.flush();
        }
    }

    private static KafkaInboxConsumer.Builder storing(DataSource ds, String topic, String consumer) {
        return KafkaInboxConsumer.builder().bootstrapServers(kafka.bootstrapServers()).groupId(consumer)
                .consumer(consumer).topics(topic).dataSource(ds).schema(schema).storeInInbox()
                .pollTimeout(Duration.ofMillis(100));
    }

    @Test
    void store_mode_as_the_receiver_role_stores_every_record() {
        String topic = "lp-store-" + UUID.randomUUID();
        kafka.createTopic(topic, 3);
        produce(topic, 300);
        DataSource receiver = postgres.database().loginRole("receiver",
                r -> OutboxGrants.sql(schema, OutboxGrants.Component.INBOX_RECEIVER, r));
        try (KafkaInboxConsumer c = storing(receiver, topic, "lp-store").build().start()) {
            await().atMost(Duration.ofMinutes(2)).until(() -> postgres.database().queryLong(
                    "SELECT count(*) FROM inbox_event WHERE consumer = 'lp-store'") == 300);
            assertThat(c.stats().loopErrors()).isZero();
        }
    }

    @Test
    void store_mode_without_the_insert_grant_fails_at_start_naming_it() {
        DataSource shortOne = postgres.database().loginRole("receiver_short", r -> {
            List<String> sql = new ArrayList<>(OutboxGrants.sql(schema, OutboxGrants.Component.INBOX_RECEIVER, r));
            sql.removeIf(s -> s.startsWith("GRANT INSERT"));
            return sql;
        });
        KafkaInboxConsumer c = storing(shortOne, "lp-short", "lp-short").build();
        assertThatThrownBy(c::start).isInstanceOf(OutboxException.class)
                .hasMessageContaining("GRANT INSERT ON TABLE \"" + schema.schema() + "\".inbox_event TO");
        c.close();
    }
}
