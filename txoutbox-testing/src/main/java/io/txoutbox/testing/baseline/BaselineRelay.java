package io.txoutbox.testing.baseline;

import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import javax.sql.DataSource;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The relays people write first, kept as baselines: tests show the history checker catches what they get wrong,
 * benchmarks show what they cost. They read the txoutbox outbox table and write the {@code event_id} header.
 */
public abstract class BaselineRelay implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(BaselineRelay.class);

    protected final DataSource dataSource;
    protected final String table;
    protected final KafkaProducer<byte[], byte[]> producer;
    private final AtomicBoolean running = new AtomicBoolean(true);
    private final AtomicLong sent = new AtomicLong();
    private final Thread thread;

    protected BaselineRelay(String name, DataSource dataSource, String qualifiedTable, String bootstrapServers,
            Properties producerOverrides) {
        this.dataSource = dataSource;
        this.table = qualifiedTable;
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers);
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
        if (producerOverrides != null) {
            p.putAll(producerOverrides);
        }
        this.producer = new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer());
        this.thread = new Thread(this::loop, "txoutbox-testing-" + name);
        this.thread.setDaemon(true);
    }

    public BaselineRelay start() {
        thread.start();
        return this;
    }

    public long sent() {
        return sent.get();
    }

    protected void countSent(int n) {
        sent.addAndGet(n);
    }

    /** One poll; returns the number of rows handled. */
    protected abstract int pollOnce(Connection c) throws Exception;

    private void loop() {
        while (running.get()) {
            try (Connection c = dataSource.getConnection()) {
                c.setAutoCommit(false);
                while (running.get()) {
                    if (pollOnce(c) == 0) {
                        Thread.sleep(5);
                    }
                }
            } catch (InterruptedException e) {
                return;
            } catch (Exception e) {
                if (running.get()) {
                    log.warn("baseline relay failed, reconnecting: {}", e.toString());
                }
            }
        }
    }

    protected static ProducerRecord<byte[], byte[]> record(String topic, String key, String payload, UUID eventId) {
        ProducerRecord<byte[], byte[]> r = new ProducerRecord<>(topic,
                key == null ? null : key.getBytes(StandardCharsets.UTF_8),
                payload == null ? null : payload.getBytes(StandardCharsets.UTF_8));
        r.headers().add("event_id", eventId.toString().getBytes(StandardCharsets.UTF_8));
        return r;
    }

    @Override
    public void close() {
        running.set(false);
        try {
            thread.join(10_000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        producer.close(java.time.Duration.ofSeconds(5));
    }

    static void rollbackQuietly(Connection c) {
        try {
            c.rollback();
        } catch (SQLException ignored) {
            // reconnecting anyway
        }
    }
}
