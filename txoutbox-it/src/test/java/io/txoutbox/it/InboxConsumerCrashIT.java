package io.txoutbox.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.txoutbox.OutboxSchema;
import io.txoutbox.kafka.KafkaHeaders;
import io.txoutbox.testing.kafka.KafkaBroker;
import io.txoutbox.testing.postgres.TestDatabase;
import io.txoutbox.testing.postgres.TestPostgres;
import io.txoutbox.testing.postgres.TestSession;
import io.txoutbox.testing.process.JvmProcess;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.Properties;
import java.util.Random;
import java.util.UUID;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The Kafka inbox consumer as a separate JVM, SIGKILLed again and again (mid-batch: between its database commit and
 * its offset commit, or anywhere else) while it works through 10,000 events, a tenth of them on the topic twice.
 * Effects are rows in a business table without a unique constraint, so a duplicate effect would show.
 */
class InboxConsumerCrashIT {

    private static final Logger log = LoggerFactory.getLogger(InboxConsumerCrashIT.class);
    /**
     * The eight kills come within the first ~6,000 effects (each after up to 1,500 more); 20,000 until 2026-12-04
     * only lengthened the last, unkilled run (3 of CI's minutes for both modes).
     */
    private static final int EVENTS = 10_000;
    private static final int KEYS = 200;

    private KafkaBroker kafka;
    private TestDatabase db;
    /**
     * The test's own session for counting effects: polled every 20 ms, a new connection per count cost PostgreSQL a
     * backend start each time, CPU taken from the consumer under test.
     */
    private TestSession probe;

    @BeforeEach
    void setUp() throws SQLException {
        kafka = KafkaBroker.shared();
        db = TestPostgres.shared().newDatabase("inbox_crash");
        OutboxSchema.builder().schema(db.schema()).build().migrate(db.dataSource());
        db.execute("CREATE TABLE effect (id bigserial PRIMARY KEY, event_id uuid NOT NULL, k text NOT NULL,"
                + " seq int NOT NULL)");
        probe = db.session();
    }

    @AfterEach
    void tearDown() throws Exception {
        db.close(); // and the test's session
    }

    private long effects() {
        return probe.queryLong("SELECT count(*) FROM effect");
    }

    @ParameterizedTest
    @ValueSource(strings = {"handle", "store"})
    void killed_repeatedly_mid_batch_applies_every_effect_exactly_once_in_key_order(String mode) throws Exception {
        String topic = "payments-" + mode + "-" + UUID.randomUUID();
        kafka.createTopic(topic, 3);
        kafka.createTopic(topic + ".dlt", 1);
        produce(topic);
        TestPostgres pg = db.server();
        JvmProcess.Builder process = JvmProcess.builder(InboxConsumerProcessMain.class).name("inbox-" + mode)
                .logFile(java.nio.file.Path.of("target", "inbox-consumer-" + mode + ".log"))
                .jvmArgs("-Xmx256m").args(db.jdbcUrl(), pg.user(), pg.password(), db.schema(),
                        kafka.bootstrapServers(), topic, mode, "payments-" + mode);
        Random random = new Random(42);
        int kills = 0;
        long started = System.nanoTime();
        while (kills < 8 && effects() < EVENTS) {
            try (JvmProcess p = process.start()) {
                p.awaitLine("INBOX-CONSUMER-STARTED.*", Duration.ofMinutes(1));
                long target = effects() + 1 + random.nextInt(1_500);
                // let it get into its batches, then SIGKILL: no shutdown hook, no offset commit of the batch at hand
                await().atMost(Duration.ofMinutes(2)).pollInterval(Duration.ofMillis(20))
                        .until(() -> effects() >= Math.min(target, EVENTS));
                p.kill();
                assertThat(p.awaitExit(Duration.ofSeconds(30))).isEqualTo(137);
                kills++;
                log.info("kill {}: {} effects", kills, effects());
            }
        }
        try (JvmProcess last = process.start()) {
            last.awaitLine("INBOX-CONSUMER-STARTED.*", Duration.ofMinutes(1));
            await().atMost(Duration.ofMinutes(5)).until(() -> effects() >= EVENTS);
            // and a little longer, so late duplicates would show up
            long offsetsSettled = System.nanoTime() + Duration.ofSeconds(3).toNanos();
            await().atMost(Duration.ofSeconds(30)).until(() -> System.nanoTime() > offsetsSettled);
        }
        log.info("{} mode: {} events, {} kills, {} s", mode, EVENTS, kills, (System.nanoTime() - started) / 1_000_000_000);
        assertThat(kills).as("the consumer really was killed mid-way").isGreaterThanOrEqualTo(3);
        assertThat(effects()).as("exactly once").isEqualTo(EVENTS);
        assertThat(db.queryLong("SELECT count(DISTINCT event_id) FROM effect")).as("none missing").isEqualTo(EVENTS);
        try (Connection c = db.connect(); Statement st = c.createStatement();
                ResultSet rs = st.executeQuery("SELECT count(*) FROM (SELECT seq, lag(seq) OVER (PARTITION BY k"
                        + " ORDER BY id) AS prev FROM effect) x WHERE prev IS NOT NULL AND prev <> seq - 1")) {
            rs.next();
            assertThat(rs.getLong(1)).as("effects out of key order").isZero();
        }
    }

    /** EVENTS events over KEYS keys, seq 1.. per key; every tenth sent twice (a relay's resend). */
    private void produce(String topic) throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", kafka.bootstrapServers());
        p.put("key.serializer", ByteArraySerializer.class.getName());
        p.put("value.serializer", ByteArraySerializer.class.getName());
        p.put("linger.ms", "5");
        int[] seq = new int[KEYS];
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p)) {
            for (int i = 0; i < EVENTS; i++) {
                int k = i % KEYS;
                ProducerRecord<byte[], byte[]> r = new ProducerRecord<>(topic, ("k" + k).getBytes(StandardCharsets.UTF_8),
                        Integer.toString(++seq[k]).getBytes(StandardCharsets.UTF_8));
                r.headers().add(KafkaHeaders.EVENT_ID, UUID.randomUUID().toString().getBytes(StandardCharsets.UTF_8));
                r.headers().add(KafkaHeaders.EVENT_TYPE, "Seq".getBytes(StandardCharsets.UTF_8));
                producer.send(r);
                if (i % 10 == 0) {
                    producer.send(r);
                }
            }
            producer.flush();
        }
    }
}
