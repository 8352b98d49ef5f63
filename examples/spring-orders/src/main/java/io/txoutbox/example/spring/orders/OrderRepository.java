package io.txoutbox.example.spring.orders;

import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Repository;

/** Orders on plain JDBC, on the same DataSource (and so in the same transaction) as the outbox. */
@Repository
public class OrderRepository {

    private final JdbcTemplate jdbc;

    public OrderRepository(JdbcTemplate jdbc) {
        this.jdbc = jdbc;
    }

    public Order save(Order order) {
        jdbc.update("INSERT INTO orders (id, customer_id, total) VALUES (?, ?, ?)", order.id(), order.customerId(),
                order.total());
        return order;
    }
}
