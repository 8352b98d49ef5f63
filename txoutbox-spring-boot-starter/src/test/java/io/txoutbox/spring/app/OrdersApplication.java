package io.txoutbox.spring.app;

import org.springframework.boot.autoconfigure.SpringBootApplication;

/** The order service of the tests: JDBC, JPA and jOOQ handlers on one DataSource, each publishing its event. */
@SpringBootApplication
public class OrdersApplication {
}
