package io.txoutbox.kafka.internal;

import java.util.Map;
import java.util.function.Function;
import org.apache.kafka.clients.producer.Producer;

/**
 * What the lanes of one transport share — its settings, the record mapper, the topic probe, and one streak of
 * connection trouble for all of them — and how a lane's worker is made. Public for
 * {@link io.txoutbox.kafka.KafkaTransport}.
 */
public final class LaneProducers {

    private final ProducerSettings settings;
    private final ConnectionTrouble connectionTrouble;
    private final RecordMapper mapper;
    private final TopicProbe topicProbe;
    private final Function<Map<String, Object>, Producer<byte[], byte[]>> producerFactory;

    public LaneProducers(ProducerSettings settings,
            Function<Map<String, Object>, Producer<byte[], byte[]>> producerFactory) {
        this.settings = settings;
        this.connectionTrouble = new ConnectionTrouble("txoutbox-kafka", settings.sharedProperties());
        this.mapper = new RecordMapper(settings.maxRequestSize(), settings.bufferMemory());
        this.topicProbe = new TopicProbe(settings.adminProperties(), settings.requestTimeoutMs());
        this.producerFactory = producerFactory;
    }

    /** The real producer: byte-array key and value, as stored in the outbox. */
    public static Producer<byte[], byte[]> kafkaProducer(Map<String, Object> props) {
        return LaneProducer.kafkaProducer(props);
    }

    /** A lane's worker with its own thread; its producer is made on its first batch or {@code prepare}. */
    public LaneWorker start(String lane, String transactionalId) {
        return new LaneWorker(lane, new LaneProducer(lane, transactionalId, settings, connectionTrouble, mapper,
                topicProbe, producerFactory));
    }
}
