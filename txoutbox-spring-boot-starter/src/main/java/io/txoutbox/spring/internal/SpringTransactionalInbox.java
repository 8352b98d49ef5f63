package io.txoutbox.spring.internal;

import io.txoutbox.Inbox;
import io.txoutbox.kafka.KafkaInboxConsumer;
import io.txoutbox.spring.TransactionalInbox;
import java.sql.Connection;
import java.util.Objects;
import java.util.UUID;
import javax.sql.DataSource;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.springframework.jdbc.datasource.DataSourceUtils;
import org.springframework.transaction.support.TransactionSynchronizationManager;

/** The starter's {@link TransactionalInbox}: core's {@link Inbox#once} on the connection of the current transaction. */
public final class SpringTransactionalInbox implements TransactionalInbox {

    private final DataSource dataSource;
    private final Inbox inbox;

    public SpringTransactionalInbox(DataSource dataSource, Inbox inbox) {
        this.dataSource = Objects.requireNonNull(dataSource, "dataSource");
        this.inbox = Objects.requireNonNull(inbox, "inbox");
    }

    @Override
    public Inbox.Outcome once(String consumer, UUID eventId, Runnable work) {
        Objects.requireNonNull(work, "work");
        if (!TransactionSynchronizationManager.isActualTransactionActive()) {
            throw new IllegalStateException(message("there is no transaction in progress"));
        }
        Connection connection = DataSourceUtils.getConnection(dataSource);
        try {
            if (!DataSourceUtils.isConnectionTransactional(connection, dataSource)) {
                throw new IllegalStateException(message("the transaction in progress is not on the outbox's "
                        + "DataSource"));
            }
            return inbox.once(connection, consumer, eventId, c -> work.run());
        } finally {
            DataSourceUtils.releaseConnection(connection, dataSource);
        }
    }

    @Override
    public Inbox.Outcome once(String consumer, ConsumerRecord<?, ?> record, Runnable work) {
        return once(consumer, KafkaInboxConsumer.eventIdOf(record), work);
    }

    private static String message(String why) {
        return "transactionalInbox.once needs a Spring-managed transaction on the outbox's DataSource, and " + why
                + ": annotate the listener method with @Transactional, so the dedupe row commits with the event's "
                + "effects and the offset is committed after them. Nothing was done.";
    }
}
