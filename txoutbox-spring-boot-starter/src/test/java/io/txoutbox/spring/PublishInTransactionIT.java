package io.txoutbox.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariDataSource;
import io.txoutbox.OutboxSchema;
import io.txoutbox.spi.OutboxRecord;
import io.txoutbox.spring.app.OrdersApplication;
import io.txoutbox.spring.app.PlaceOrder;
import io.txoutbox.test.InMemoryTransport;
import io.txoutbox.testing.postgres.TestDatabase;
import java.math.BigDecimal;
import java.time.Duration;
import java.util.UUID;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * The order service's handlers as written (JDBC, JPA, jOOQ on one DataSource, {@code @Transactional}) publish through
 * the starter: the event commits and rolls back with the business row, publish outside a transaction is refused, the
 * payload is the application's JSON, and the relay, woken after the commit, delivers through the in-memory transport.
 */
@SpringBootTest(classes = OrdersApplication.class, properties = {
        "txoutbox.transport=in-memory",
        "txoutbox.relay.lanes=2",
        // far longer than any wait below: a delivery within it proves the wake-up after commit
        "txoutbox.relay.poll-interval=60s",
        "spring.jpa.hibernate.ddl-auto=create",
        "spring.jpa.open-in-view=false",
        "spring.flyway.enabled=false",
        "spring.liquibase.enabled=false",
        "spring.jackson.property-naming-strategy=SNAKE_CASE"})
class PublishInTransactionIT {

    private static final TestDatabase db = StarterDatabase.create("publish");
    private static final Duration DELIVERY = Duration.ofSeconds(10);

    @DynamicPropertySource
    static void database(DynamicPropertyRegistry registry) {
        StarterDatabase.register(registry, db);
    }

    @Autowired
    PlaceOrder placeOrder;
    @Autowired
    InMemoryTransport transport;
    @Autowired
    JdbcTemplate jdbc;
    @Autowired
    OutboxSchema schema;
    @Autowired
    DataSource dataSource;

    @Test
    void a_jdbc_handler_commits_the_event_with_the_order_and_the_relay_delivers_it_after_the_commit() {
        UUID id = placeOrder.withJdbc("jdbc-1", new BigDecimal("12.50"), false);

        OutboxRecord delivered = transport.awaitDelivered(id, DELIVERY);
        assertThat(delivered.topic()).isEqualTo(PlaceOrder.TOPIC);
        assertThat(delivered.key()).isEqualTo("jdbc-1");
        assertThat(delivered.eventType()).isEqualTo("OrderCreatedEvent");
        assertThat(delivered.aggregateType()).isEqualTo(PlaceOrder.TOPIC);
        assertThat(delivered.aggregateId()).isEqualTo("jdbc-1");
        assertThat(id.version()).as("the outbox's own UUIDv7, not the event's UUID").isEqualTo(7);
        String json = new String(delivered.value(), java.nio.charset.StandardCharsets.UTF_8);
        assertThat(json).as("serialized by the application's mapper (SNAKE_CASE)")
                .contains("\"order_total\"").contains("\"order_id\"").doesNotContain("orderTotal");
        assertThat(orders("jdbc-1")).isEqualTo(1);
    }

    @Test
    void an_exception_in_the_handler_rolls_back_the_order_and_the_event() {
        assertThatThrownBy(() -> placeOrder.withJdbc("jdbc-2", BigDecimal.ONE, true))
                .hasMessage("payment declined");
        assertThat(orders("jdbc-2")).isZero();
        assertThat(events("jdbc-2")).isZero();
    }

    @Test
    void jpa_and_jooq_handlers_join_the_same_transaction_for_commit_and_rollback() {
        UUID jpa = placeOrder.withJpa("jpa-1", BigDecimal.TEN, false);
        UUID jooq = placeOrder.withJooq("jooq-1", BigDecimal.TEN, false);
        assertThatThrownBy(() -> placeOrder.withJpa("jpa-2", BigDecimal.TEN, true)).hasMessage("payment declined");
        assertThatThrownBy(() -> placeOrder.withJooq("jooq-2", BigDecimal.TEN, true))
                .hasMessage("payment declined");

        transport.awaitDelivered(jpa, DELIVERY);
        transport.awaitDelivered(jooq, DELIVERY);
        assertThat(orders("jpa-1") + orders("jooq-1")).isEqualTo(2);
        assertThat(orders("jpa-2") + orders("jooq-2") + events("jpa-2") + events("jooq-2")).isZero();
    }

    @Test
    void publish_without_a_transaction_is_refused_with_the_documented_message_and_writes_nothing() {
        assertThatThrownBy(() -> placeOrder.withoutTransaction("none-1", BigDecimal.ONE))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("needs a Spring-managed transaction")
                .hasMessageContaining("@Transactional")
                .hasMessageContaining("Nothing was written");
        assertThat(events("none-1")).isZero();
    }

    @Test
    void the_relay_holds_no_connection_of_the_applications_pool() {
        placeOrder.withJdbc("pool-1", BigDecimal.ONE, false);
        HikariDataSource app = (HikariDataSource) dataSource;
        assertThat(app.getHikariPoolMXBean().getActiveConnections())
                .as("connections of %s in use while the relay's lanes hold their sessions", app.getPoolName())
                .isZero();
        assertThat(jdbc.queryForObject("SELECT count(*) FROM pg_stat_activity WHERE application_name LIKE "
                + "'txoutbox-relay%' AND datname = current_database()", Long.class))
                .as("the relay's lanes own sessions of their own").isGreaterThanOrEqualTo(1);
    }

    private long orders(String id) {
        return jdbc.queryForObject("SELECT count(*) FROM orders WHERE id = ?", Long.class, id);
    }

    private long events(String key) {
        return jdbc.queryForObject("SELECT count(*) FROM " + schema.qualifiedOutboxTable() + " WHERE partition_key = ?",
                Long.class, key);
    }
}
