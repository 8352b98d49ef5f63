package io.txoutbox.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.txoutbox.Outbox;
import io.txoutbox.OutboxAdmin;
import io.txoutbox.OutboxSchema;
import io.txoutbox.PollingRelay;
import io.txoutbox.kafka.KafkaTransport;
import io.txoutbox.spi.RelayListener;
import io.txoutbox.spi.SendResult;
import io.txoutbox.testing.history.HistoryAssert;
import io.txoutbox.testing.history.HistoryReport;
import io.txoutbox.testing.history.LedgerWriter;
import io.txoutbox.testing.kafka.KafkaBroker;
import io.txoutbox.testing.logging.CapturedStderr;
import io.txoutbox.testing.postgres.TestDatabase;
import io.txoutbox.testing.postgres.TestPostgres;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Two outboxes (two services: two schemas, each with its own relay and its own Kafka transport) on one broker. With
 * default settings their lanes must not share a {@code transactional.id}, or they fence each other's producers.
 */
class FencingIdentityIT {

    private static final Logger log = LoggerFactory.getLogger(FencingIdentityIT.class);
    private static final Duration WAIT = Duration.ofSeconds(60);
    private static final Pattern FENCED = Pattern.compile("producer fenced; \\d+ records not sent");

    private static KafkaBroker kafka;

    private final List<AutoCloseable> closing = new ArrayList<>();

    @BeforeAll
    static void broker() {
        kafka = KafkaBroker.shared();
    }

    @AfterEach
    void tearDown() throws Exception {
        for (int i = closing.size() - 1; i >= 0; i--) {
            closing.get(i).close();
        }
    }

    /** One service: its schema, its relay with default name and lanes, its own transport with default settings. */
    private final class Service {
        final TestDatabase db;
        final OutboxSchema schema;
        final String topic;
        final AtomicLong unavailable = new AtomicLong();
        final PollingRelay relay;
        final LedgerWriter writer;

        Service(String hint) {
            db = TestPostgres.shared().newDatabase(hint);
            closing.add(db);
            schema = ItSupport.schema(db);
            topic = hint + "-" + UUID.randomUUID().toString().substring(0, 8);
            kafka.createTopic(topic, 4);
            KafkaTransport transport = KafkaTransport.builder().bootstrapServers(kafka.bootstrapServers()).build();
            relay = PollingRelay.builder().dataSource(db.dataSource()).schema(schema).transport(transport)
                    .pollInterval(Duration.ofMillis(50))
                    .listener(new RelayListener() {
                        @Override
                        public void sendFailed(String topic, SendResult.Kind kind) {
                            if (kind == SendResult.Kind.UNAVAILABLE) {
                                unavailable.incrementAndGet();
                            }
                        }
                    }).build();
            closing.add(relay);
            Outbox outbox = Outbox.builder().schema(schema).afterPublish(relay::nudge).build();
            writer = ItSupport.ledgerWriter(db, outbox, topic).threads(2).keys(40).targetRate(150)
                    .duration(Duration.ofSeconds(6)).build();
            closing.add(writer);
        }

        long pending() {
            return OutboxAdmin.create(db.dataSource(), schema).pendingCount();
        }
    }

    private static int count(Pattern p, String text) {
        Matcher m = p.matcher(text);
        int n = 0;
        while (m.find()) {
            n++;
        }
        return n;
    }

    @Test
    void two_outboxes_with_default_settings_do_not_fence_each_other() throws Exception {
        try (CapturedStderr err = CapturedStderr.start()) {
            Service a = new Service("fence_a");
            Service b = new Service("fence_b");
            a.relay.start();
            b.relay.start();
            a.writer.start();
            b.writer.start();
            // both services write and relay at the same time, on every lane, for 6 s
            assertThat(a.writer.awaitDone(WAIT) && b.writer.awaitDone(WAIT)).isTrue();
            long drainStart = System.nanoTime();
            await().atMost(WAIT).until(() -> a.pending() == 0 && b.pending() == 0);
            long drainMs = (System.nanoTime() - drainStart) / 1_000_000;
            int fenced = count(FENCED, err.text());
            log.info("two default services: {} 'producer fenced' lines, UNAVAILABLE results a={} b={}, drain after "
                    + "the writers stopped {} ms, published a={} b={}", fenced, a.unavailable.get(),
                    b.unavailable.get(), drainMs, a.relay.stats().published(), b.relay.stats().published());
            assertThat(fenced).as("'producer fenced' log lines").isZero();
            assertThat(a.unavailable.get() + b.unavailable.get()).as("UNAVAILABLE results").isZero();
            for (Service s : List.of(a, b)) {
                HistoryReport report = ItSupport.check(s.db, kafka.bootstrapServers(), s.topic, WAIT);
                HistoryAssert.assertThat(report).isClean().hasNoDuplicates();
                assertThat(report.committed()).isGreaterThan(100);
            }
        }
    }
}
