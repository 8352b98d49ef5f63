package io.txoutbox.spring.internal;

import io.txoutbox.Inbox;
import io.txoutbox.InboxMessage;
import io.txoutbox.kafka.KafkaInboxConsumer;
import io.txoutbox.spring.TransactionalInbox;
import java.sql.Connection;
import java.util.List;
import java.util.Objects;
import java.util.UUID;
import java.util.function.Function;
import javax.sql.DataSource;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.springframework.jdbc.datasource.DataSourceUtils;
import org.springframework.transaction.support.TransactionSynchronizationManager;

/** The starter's {@link TransactionalInbox}: core's {@link Inbox#once} on the connection of the current transaction. */
public final class SpringTransactionalInbox implements TransactionalInbox {

    private final DataSource dataSource;
    private final Inbox inbox;
    private final Runnable afterReceive;

    /** {@code afterReceive}: run once after each transaction that stored records commits (the worker's nudge), or null. */
    public SpringTransactionalInbox(DataSource dataSource, Inbox inbox, Runnable afterReceive) {
        this.dataSource = Objects.requireNonNull(dataSource, "dataSource");
        this.inbox = Objects.requireNonNull(inbox, "inbox");
        this.afterReceive = afterReceive;
    }

    @Override
    public Inbox.Outcome once(String consumer, UUID eventId, Runnable work) {
        Objects.requireNonNull(work, "work");
        return inTransaction("once", c -> inbox.once(c, consumer, eventId, ignored -> work.run()));
    }

    @Override
    public boolean receive(String consumer, ConsumerRecord<?, ?> record) {
        InboxMessage message = KafkaInboxConsumer.inboxMessageOf(record);
        boolean stored = inTransaction("receive", c -> inbox.receive(c, consumer, List.of(message))) == 1;
        if (stored) {
            AfterCommit.once(this, afterReceive);
        }
        return stored;
    }

    private <T> T inTransaction(String call, Function<Connection, T> work) {
        if (!TransactionSynchronizationManager.isActualTransactionActive()) {
            throw new IllegalStateException(message(call, "there is no transaction in progress"));
        }
        Connection connection = DataSourceUtils.getConnection(dataSource);
        try {
            if (!DataSourceUtils.isConnectionTransactional(connection, dataSource)) {
                throw new IllegalStateException(message(call, "the transaction in progress is not on the outbox's "
                        + "DataSource"));
            }
            return work.apply(connection);
        } finally {
            DataSourceUtils.releaseConnection(connection, dataSource);
        }
    }

    @Override
    public Inbox.Outcome once(String consumer, ConsumerRecord<?, ?> record, Runnable work) {
        return once(consumer, KafkaInboxConsumer.eventIdOf(record), work);
    }

    private static String message(String call, String why) {
        return "transactionalInbox." + call + " needs a Spring-managed transaction on the outbox's DataSource, and " + why
                + ": annotate the listener method with @Transactional, so the dedupe row commits with the event's "
                + "effects and the offset is committed after them. Nothing was done.";
    }
}
