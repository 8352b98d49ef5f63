package io.txoutbox.example.spring.payments;

import java.math.BigDecimal;
import java.util.UUID;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Repository;

@Repository
public class PaymentRepository {

    private final JdbcTemplate jdbc;

    public PaymentRepository(JdbcTemplate jdbc) {
        this.jdbc = jdbc;
    }

    public void charge(UUID orderId, BigDecimal amount) {
        jdbc.update("INSERT INTO payments (order_id, amount) VALUES (?, ?)", orderId, amount);
    }
}
