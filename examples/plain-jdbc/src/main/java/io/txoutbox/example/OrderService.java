package io.txoutbox.example;

import io.txoutbox.Outbox;
import io.txoutbox.OutboxMessage;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.UUID;
import javax.sql.DataSource;

/**
 * The business code: an order and its {@code OrderCreated} event are written in one local transaction, so the
 * event exists if and only if the order does.
 */
public final class OrderService {

    /** What a committed order produced; the example's checker compares it with what consumers received. */
    public record PlacedOrder(String orderId, String customerId, long customerSeq, UUID eventId,
            long committedAtMillis) {
    }

    private final Outbox outbox;

    public OrderService(Outbox outbox) {
        this.outbox = outbox;
    }

    public static void createTables(DataSource dataSource) throws SQLException {
        try (Connection c = dataSource.getConnection(); var st = c.createStatement()) {
            st.execute("CREATE TABLE IF NOT EXISTS customers (id text PRIMARY KEY, orders bigint NOT NULL DEFAULT 0)");
            st.execute("CREATE TABLE IF NOT EXISTS orders (id text PRIMARY KEY, customer_id text NOT NULL,"
                    + " amount_cents bigint NOT NULL, created_at timestamptz NOT NULL DEFAULT now())");
        }
    }

    public static void createCustomers(DataSource dataSource, int count) throws SQLException {
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = c.prepareStatement(
                "INSERT INTO customers (id) VALUES (?) ON CONFLICT DO NOTHING")) {
            for (int i = 0; i < count; i++) {
                ps.setString(1, customerId(i));
                ps.addBatch();
            }
            ps.executeBatch();
        }
    }

    public static String customerId(int i) {
        return String.format("customer-%04d", i);
    }

    /**
     * Places an order: business rows and event in one transaction on the given connection (from your pool; this
     * example gives each writer thread its own).
     */
    public PlacedOrder placeOrder(Connection c, String customerId, long amountCents) throws SQLException {
        String orderId = UUID.randomUUID().toString();
        c.setAutoCommit(false);
        try {
            // The writer rule for ordering: lock the aggregate (here the customer, who is the partition key)
            // before inserting its event, so the events of one customer commit in outbox-id order.
            long seq;
            try (PreparedStatement ps = c.prepareStatement(
                    "UPDATE customers SET orders = orders + 1 WHERE id = ? RETURNING orders")) {
                ps.setString(1, customerId);
                try (ResultSet rs = ps.executeQuery()) {
                    if (!rs.next()) {
                        throw new SQLException("unknown customer " + customerId);
                    }
                    seq = rs.getLong(1);
                }
            }
            try (PreparedStatement ps = c.prepareStatement(
                    "INSERT INTO orders (id, customer_id, amount_cents) VALUES (?, ?, ?)")) {
                ps.setString(1, orderId);
                ps.setString(2, customerId);
                ps.setLong(3, amountCents);
                ps.executeUpdate();
            }
            UUID eventId = outbox.publish(c, OutboxMessage.builder()
                    .topic("orders")
                    .key(customerId)
                    .aggregate("Order", orderId)
                    .aggregateVersion(1)
                    .eventType("OrderCreated")
                    .jsonPayload("{\"orderId\":\"" + orderId + "\",\"customerId\":\"" + customerId
                            + "\",\"amountCents\":" + amountCents + ",\"customerOrderNo\":" + seq + "}")
                    .build()).get(0);
            c.commit();
            return new PlacedOrder(orderId, customerId, seq, eventId, System.currentTimeMillis());
        } catch (SQLException | RuntimeException e) {
            c.rollback();
            throw e;
        }
    }
}
