package io.txoutbox.example.spring.orders;

import java.math.BigDecimal;
import java.util.UUID;

/** The aggregate. */
public record Order(UUID id, String customerId, BigDecimal total) {

    public static Order place(PlaceOrder command) {
        if (command.total().signum() <= 0) {
            throw new IllegalArgumentException("an order's total must be positive, was " + command.total());
        }
        return new Order(UUID.randomUUID(), command.customerId(), command.total());
    }
}
