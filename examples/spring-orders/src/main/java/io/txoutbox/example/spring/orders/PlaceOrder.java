package io.txoutbox.example.spring.orders;

import java.math.BigDecimal;

/** The command: a customer orders for a total. */
public record PlaceOrder(String customerId, BigDecimal total) {
}
