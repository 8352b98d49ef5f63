package io.txoutbox.example.spring.payments;

import io.txoutbox.Inbox;
import io.txoutbox.spring.TransactionalInbox;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.stereotype.Component;
import org.springframework.transaction.annotation.Transactional;
import tools.jackson.databind.json.JsonMapper;

/**
 * Pays each order once. Kafka delivers at least once (a rebalance or a restart before the offset commit sends a
 * record again); {@code once} records the event's id in {@code processed_event} in this transaction, together with
 * the payment, and skips the work for an id it has seen. The container commits the offset after this method's
 * transaction committed.
 */
@Component
public class PaymentListener {

    private final TransactionalInbox transactionalInbox;
    private final PaymentRepository payments;
    private final JsonMapper json;
    private final AtomicLong duplicatesSkipped = new AtomicLong();

    public PaymentListener(TransactionalInbox transactionalInbox, PaymentRepository payments, JsonMapper json) {
        this.transactionalInbox = transactionalInbox;
        this.payments = payments;
        this.json = json;
    }

    @KafkaListener(topics = "order.events", groupId = "payment")
    @Transactional
    public void on(ConsumerRecord<String, String> record) {
        Inbox.Outcome outcome = transactionalInbox.once("payment", record, () -> {
            OrderCreated order = json.readValue(record.value(), OrderCreated.class);
            payments.charge(order.orderId(), order.total());
        });
        if (outcome != Inbox.Outcome.APPLIED) {
            duplicatesSkipped.incrementAndGet();
        }
    }

    /** Records whose event this listener had already applied (counted when seen; the demo's summary reports it). */
    public long duplicatesSkipped() {
        return duplicatesSkipped.get();
    }
}
