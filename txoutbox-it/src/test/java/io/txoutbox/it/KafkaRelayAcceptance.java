package io.txoutbox.it;

import io.txoutbox.OutboxMessage;
import io.txoutbox.kafka.KafkaTransport;
import io.txoutbox.spi.Transport;
import io.txoutbox.test.acceptance.RelayAcceptanceTest;
import io.txoutbox.test.acceptance.Sent;
import io.txoutbox.testing.history.Delivery;
import io.txoutbox.testing.history.Verifier;
import io.txoutbox.testing.kafka.KafkaBroker;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.header.Header;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/**
 * The relay acceptance suite with the Kafka transport on a real broker, one broker per class; a subclass names the
 * {@link KafkaTransport.Mode}. A poison record is one larger than its topic accepts ({@value #TOPIC_LIMIT} bytes, a
 * limit the scenario's topic is created with, raised to cure it), and what was delivered is read back with a
 * {@code read_committed} consumer from offset 0.
 */
abstract class KafkaRelayAcceptance extends RelayAcceptanceTest {

    private static final int TOPIC_LIMIT = 2_000;
    private static KafkaBroker kafka;

    @BeforeAll
    static void startBroker() {
        kafka = KafkaBroker.builder().property("auto.create.topics.enable", "false").start();
    }

    @AfterAll
    static void stopBroker() {
        kafka.close();
    }

    abstract KafkaTransport.Mode mode();

    @Override
    protected Transport newTransport() {
        return KafkaTransport.builder().bootstrapServers(kafka.bootstrapServers()).mode(mode()).build();
    }

    @Override
    protected String newTopic() {
        String topic = "orders-" + UUID.randomUUID().toString().substring(0, 8);
        kafka.createTopic(topic, 3, Map.of("max.message.bytes", String.valueOf(TOPIC_LIMIT)));
        return topic;
    }

    @Override
    protected String newDeadLetterTopic(String topic) {
        kafka.createTopic(topic + ".dlt", 1);
        return topic + ".dlt";
    }

    @Override
    protected List<Sent> delivered(String topic, int atLeast) {
        Map<String, Sent> read = new ConcurrentHashMap<>();
        List<Delivery> deliveries = Verifier.builder(kafka.bootstrapServers(), topic).expectedEvents(atLeast)
                .deadline(WAIT).eventIdExtractor(r -> {
                    Sent sent = sent(r);
                    read.put(r.partition() + "@" + r.offset(), sent);
                    return sent.eventId();
                }).build().readAll();
        return deliveries.stream().map(d -> read.get(d.partition() + "@" + d.offset())).toList();
    }

    private static Sent sent(ConsumerRecord<byte[], byte[]> r) {
        Map<String, String> headers = new HashMap<>();
        for (Header h : r.headers()) {
            if (h.value() != null) {
                headers.put(h.key(), new String(h.value(), StandardCharsets.UTF_8));
            }
        }
        return new Sent(r.topic(), r.key() == null ? null : new String(r.key(), StandardCharsets.UTF_8),
                Verifier.eventIdFromHeader(r, Verifier.DEFAULT_EVENT_ID_HEADER), headers.get("event_type"),
                r.value() == null ? null : new String(r.value(), StandardCharsets.UTF_8), headers);
    }

    /** The producer compresses (lz4): only random text stays larger than the topic's limit on the wire. */
    @Override
    protected OutboxMessage.Builder poison(OutboxMessage.Builder message) {
        byte[] random = new byte[TOPIC_LIMIT * 10 * 3 / 4];
        new Random(5).nextBytes(random);
        return message.jsonPayload("{\"blob\":\"" + Base64.getEncoder().encodeToString(random) + "\"}");
    }

    /** The operator raises the topic's limit. */
    @Override
    protected void curePoison(String topic) {
        try (Admin a = Admin.create(Map.of("bootstrap.servers", kafka.bootstrapServers()))) {
            a.incrementalAlterConfigs(Map.of(new ConfigResource(ConfigResource.Type.TOPIC, topic),
                    List.of(new AlterConfigOp(new ConfigEntry("max.message.bytes", "100000"),
                            AlterConfigOp.OpType.SET)))).all().get(30, TimeUnit.SECONDS);
        } catch (Exception e) {
            throw new IllegalStateException("could not raise the limit of " + topic, e);
        }
    }

    @Override
    protected String poisonError() {
        return "large";
    }

    @Override
    protected Optional<String> lacks(Capability capability) {
        if (capability != Capability.BROKER_OUTAGE) {
            return Optional.empty();
        }
        return Optional.of("the class shares one in-process broker, which cannot be stopped and started within a"
                + " test; BrokerOutageIT stops a broker process of its own");
    }
}
