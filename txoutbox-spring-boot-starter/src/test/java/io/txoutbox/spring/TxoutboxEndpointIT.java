package io.txoutbox.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.txoutbox.spi.SendResult;
import io.txoutbox.spring.actuate.TxoutboxEndpoint.ChangeView;
import io.txoutbox.spring.actuate.TxoutboxEndpoint.EventPage;
import io.txoutbox.spring.actuate.TxoutboxEndpoint.EventView;
import io.txoutbox.spring.actuate.TxoutboxEndpoint.FailedEventView;
import io.txoutbox.spring.actuate.TxoutboxEndpoint.StatusView;
import io.txoutbox.spring.actuate.TxoutboxEndpoint.TopicView;
import io.txoutbox.spring.actuate.TxoutboxEndpoint;
import io.txoutbox.spring.autoconfigure.TxoutboxAutoConfiguration;
import io.txoutbox.spring.autoconfigure.TxoutboxEndpointAutoConfiguration;
import io.txoutbox.spring.autoconfigure.TxoutboxTransportAutoConfiguration;
import io.txoutbox.spring.internal.RelayLifecycle;
import io.txoutbox.test.InMemoryTransport;
import io.txoutbox.testing.postgres.TestDatabase;
import java.security.Principal;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.stream.Collectors;
import javax.management.MBeanOperationInfo;
import javax.management.MBeanParameterInfo;
import javax.management.MBeanServer;
import javax.management.ObjectName;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.boot.actuate.autoconfigure.endpoint.EndpointAutoConfiguration;
import org.springframework.boot.actuate.autoconfigure.endpoint.jackson.JacksonEndpointAutoConfiguration;
import org.springframework.boot.actuate.autoconfigure.endpoint.jmx.JmxEndpointAutoConfiguration;
import org.springframework.boot.actuate.endpoint.EndpointAccessResolver;
import org.springframework.boot.actuate.endpoint.InvalidEndpointRequestException;
import org.springframework.boot.actuate.endpoint.InvocationContext;
import org.springframework.boot.actuate.endpoint.OperationFilter;
import org.springframework.boot.actuate.endpoint.OperationType;
import org.springframework.boot.actuate.endpoint.SecurityContext;
import org.springframework.boot.actuate.endpoint.invoke.ParameterValueMapper;
import org.springframework.boot.actuate.endpoint.jmx.ExposableJmxEndpoint;
import org.springframework.boot.actuate.endpoint.jmx.JmxEndpointsSupplier;
import org.springframework.boot.actuate.endpoint.jmx.JmxOperation;
import org.springframework.boot.actuate.endpoint.web.EndpointMediaTypes;
import org.springframework.boot.actuate.endpoint.web.ExposableWebEndpoint;
import org.springframework.boot.actuate.endpoint.web.WebOperation;
import org.springframework.boot.actuate.endpoint.web.annotation.WebEndpointDiscoverer;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.jmx.JmxAutoConfiguration;
import org.springframework.boot.convert.ApplicationConversionService;
import org.springframework.boot.jackson.autoconfigure.JacksonAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.DataSourceTransactionManagerAutoConfiguration;
import org.springframework.boot.test.context.assertj.AssertableApplicationContext;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/**
 * The {@code txoutbox} Actuator endpoint on a real database: the status shows the backlog and the lane owners, a
 * parked event is listed (in pages) and shown without its payload, and the write operation (requeue, discard, skip)
 * is exposed by Actuator only with {@code management.endpoint.txoutbox.access=unrestricted}: under the default
 * read-only access JMX has no such operation and the row stays parked. Called through the bean and through
 * Actuator's JMX exposure (the same operation discovery, access filter and JSON mapping as the web one).
 */
class TxoutboxEndpointIT {

    private static final TestDatabase db = StarterDatabase.create("endpoint");
    private static final String TABLE = "\"" + db.schema() + "\".outbox_event";
    private static final String MBEANS = "org.springframework.boot:type=Endpoint,name=Txoutbox,*";

    /** As SpringApplication prepares it: Boot's conversion service binds "unrestricted" to Access.UNRESTRICTED. */
    private static final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withInitializer(context -> context.getEnvironment()
                    .setConversionService(new ApplicationConversionService()))
            .withConfiguration(AutoConfigurations.of(DataSourceAutoConfiguration.class,
                    DataSourceTransactionManagerAutoConfiguration.class, TxoutboxTransportAutoConfiguration.class,
                    TxoutboxAutoConfiguration.class, TxoutboxEndpointAutoConfiguration.class,
                    EndpointAutoConfiguration.class, JacksonAutoConfiguration.class,
                    JacksonEndpointAutoConfiguration.class, JmxAutoConfiguration.class,
                    JmxEndpointAutoConfiguration.class))
            .withPropertyValues(StarterDatabase.properties(db))
            .withPropertyValues("txoutbox.transport=in-memory", "txoutbox.relay.enabled=false",
                    "spring.jmx.enabled=true",
                    "management.endpoints.jmx.exposure.include=txoutbox");

    @BeforeAll
    static void migrate() {
        runner.run(context -> assertThat(context).hasNotFailed());
    }

    @Test
    void status_shows_a_pending_event_under_its_topic() {
        insert("PENDING", "endpoint.status", "order-1", "{}");
        runner.run(context -> {
            StatusView status = context.getBean(TxoutboxEndpoint.class).status();
            TopicView topic = status.topics().stream().filter(t -> t.topic().equals("endpoint.status")).findFirst()
                    .orElseThrow(() -> new AssertionError("no topic endpoint.status in " + status.topics()));
            assertThat(topic.pending()).isEqualTo(1);
            assertThat(Duration.parse(topic.oldestPendingAge())).isGreaterThanOrEqualTo(Duration.ZERO);
            assertThat(status.pending()).isGreaterThanOrEqualTo(1);
            assertThat(status.relay()).as("no relay in this application").isNull();

            // the same through Actuator's JMX exposure, mapped to JSON-like maps
            Map<String, Object> viaJmx = map(invoke(context, "status"));
            assertThat((List<?>) viaJmx.get("topics")).anySatisfy(t -> assertThat(map(t))
                    .containsEntry("topic", "endpoint.status").containsEntry("pending", 1L));
        });
    }

    @Test
    void status_shows_the_lanes_this_applications_relay_owns() {
        runner.withPropertyValues("txoutbox.relay.enabled=true", "txoutbox.relay.lanes=2").run(context -> {
            String instance = context.getBean(RelayLifecycle.class).relay().instanceId();
            TxoutboxEndpoint endpoint = context.getBean(TxoutboxEndpoint.class);
            Awaitility.await().atMost(Duration.ofSeconds(20)).untilAsserted(() -> {
                StatusView status = endpoint.status();
                assertThat(status.lanes()).extracting(TxoutboxEndpoint.LaneView::instanceId)
                        .containsExactly(instance, instance);
                assertThat(status.relay().lanesOwnedHere()).isEqualTo(2);
            });
        });
    }

    @Test
    void a_parked_event_is_listed_and_shown_without_its_payload() {
        UUID parked = insert("PARKED", "endpoint.parked", "card-1", "{\"card\": \"4242-secret\"}");
        runner.run(context -> {
            TxoutboxEndpoint endpoint = context.getBean(TxoutboxEndpoint.class);
            List<FailedEventView> events = endpoint.events("parked", null, null, "endpoint.parked", null, null)
                    .events();
            assertThat(events).singleElement().satisfies(e -> {
                assertThat(e.eventId()).isEqualTo(parked.toString());
                assertThat(e.state()).isEqualTo("PARKED");
                assertThat(e.key()).isEqualTo("card-1");
                assertThat(e.lastError()).isEqualTo("topic gone");
                assertThat(e.failedAt()).isNotNull();
            });
            assertThat(endpoint.events("dead", null, null, "endpoint.parked", null, null).events()).isEmpty();

            EventView shown = endpoint.event("events", parked.toString(), null, SecurityContext.NONE);
            assertThat(shown.state()).isEqualTo("PARKED");
            assertThat(shown.topic()).isEqualTo("endpoint.parked");
            assertThat(shown.lastError()).isEqualTo("topic gone");
            assertThat(shown.payload()).isNull();
            assertThat(endpoint.event("events", UUID.randomUUID().toString(), null, SecurityContext.NONE)).isNull();
            // payload=true is refused while show-payload is never (the default)
            assertThatThrownBy(() -> endpoint.event("events", parked.toString(), true, SecurityContext.NONE))
                    .isInstanceOf(InvalidEndpointRequestException.class)
                    .hasMessageContaining("management.endpoint.txoutbox.show-payload");

            Object viaJmx = invoke(context, "event", "events", parked.toString(), null);
            assertThat(map(viaJmx)).containsEntry("eventId", parked.toString())
                    .containsEntry("state", "PARKED").satisfies(m -> assertThat(m.get("payload")).isNull());
            assertThat(viaJmx.toString()).doesNotContain("4242-secret");
        });
        runner.withPropertyValues("management.endpoint.txoutbox.show-payload=always").run(context -> {
            EventView shown = context.getBean(TxoutboxEndpoint.class).event("events", parked.toString(), true,
                    SecurityContext.NONE);
            assertThat(shown.payload()).contains("4242-secret");
            assertThat(shown.payloadEncoding()).isEqualTo("utf-8");
        });
    }

    @Test
    void the_lists_page_by_id_and_cap_the_limit() {
        List<UUID> ids = List.of(insert("DEAD", "endpoint.pages", "k-1", "{}"),
                insert("DEAD", "endpoint.pages", "k-2", "{}"), insert("DEAD", "endpoint.pages", "k-3", "{}"));
        runner.run(context -> {
            TxoutboxEndpoint endpoint = context.getBean(TxoutboxEndpoint.class);
            EventPage first = endpoint.events("dead", null, 2, "endpoint.pages", null, null);
            assertThat(first.events()).extracting(FailedEventView::eventId)
                    .containsExactly(ids.get(0).toString(), ids.get(1).toString());
            assertThat(first.nextAfter()).isEqualTo(first.events().get(1).id());
            EventPage second = endpoint.events("dead", first.nextAfter(), 2, "endpoint.pages", null, null);
            assertThat(second.events()).extracting(FailedEventView::eventId)
                    .containsExactly(ids.get(2).toString());
            assertThat(second.nextAfter()).isNull();
            assertThat(endpoint.events("dead", null, 1_000_000, "endpoint.pages", null, null).limit())
                    .isEqualTo(TxoutboxEndpoint.MAX_LIMIT);
            assertThat(endpoint.events("dead", null, null, null, null, "k-2").events())
                    .extracting(FailedEventView::eventId).containsExactly(ids.get(1).toString());
            assertThatThrownBy(() -> endpoint.events("dead", null, 0, null, null, null))
                    .isInstanceOf(InvalidEndpointRequestException.class);
            assertThatThrownBy(() -> endpoint.events("pending", null, null, null, null, null))
                    .isInstanceOf(InvalidEndpointRequestException.class).hasMessageContaining("parked");
        });
    }

    @Test
    void requeue_is_not_exposed_under_the_default_read_only_access() {
        UUID parked = insert("PARKED", "endpoint.readonly", "order-2", "{}");
        runner.run(context -> {
            assertThat(operationTypes(context)).containsOnly(OperationType.READ).isNotEmpty();
            assertThat(operationNames(context)).contains("status", "events", "event").doesNotContain("change");
            assertThatThrownBy(() -> invoke(context, "change", "events", parked.toString(), "requeue",
                    "ticket-1"))
                    .hasMessageContaining("change");
        });
        assertThat(state(parked)).isEqualTo("PARKED");
        assertThat(audit(parked)).isEqualTo("null/null");
    }

    @Test
    void requeue_with_unrestricted_access_makes_the_event_pending_again_and_audits_it() {
        UUID parked = insert("PARKED", "endpoint.requeue", "order-3", "{}");
        runner.withPropertyValues("management.endpoint.txoutbox.access=unrestricted").run(context -> {
            assertThat(operationTypes(context)).contains(OperationType.READ, OperationType.WRITE);
            Map<String, Object> result = map(invoke(context, "change", "events", parked.toString(), "requeue",
                    "INC-7 topic restored"));
            assertThat(result).containsEntry("changed", true).containsEntry("state", "PENDING")
                    .containsEntry("operator", "actuator: INC-7 topic restored");
        });
        assertThat(state(parked)).isEqualTo("PENDING");
        assertThat(audit(parked)).isEqualTo("REQUEUED/actuator: INC-7 topic restored");
    }

    @Test
    void skip_and_discard_record_the_principal_and_the_reason_and_a_reason_is_required() {
        UUID parked = insert("PARKED", "endpoint.skip", "order-4", "{}");
        SecurityContext alice = new SecurityContext() {
            @Override
            public Principal getPrincipal() {
                return () -> "alice";
            }

            @Override
            public boolean isUserInRole(String role) {
                return false;
            }
        };
        runner.withPropertyValues("management.endpoint.txoutbox.access=unrestricted").run(context -> {
            TxoutboxEndpoint endpoint = context.getBean(TxoutboxEndpoint.class);
            assertThatThrownBy(() -> endpoint.change("events", parked.toString(), "skip", " ", alice))
                    .isInstanceOf(InvalidEndpointRequestException.class).hasMessageContaining("reason");
            assertThatThrownBy(() -> endpoint.change("events", parked.toString(), "skip", "x".repeat(300), alice))
                    .isInstanceOf(InvalidEndpointRequestException.class).hasMessageContaining("at most");
            assertThatThrownBy(() -> endpoint.change("events", parked.toString(), "delete", "why", alice))
                    .isInstanceOf(InvalidEndpointRequestException.class).hasMessageContaining("requeue");
            assertThat(state(parked)).isEqualTo("PARKED");

            ChangeView skipped = endpoint.change("events", parked.toString(), "skip", "bad data", alice);
            assertThat(skipped.changed()).isTrue();
            assertThat(skipped.state()).isEqualTo("DEAD");
            assertThat(audit(parked)).isEqualTo("SKIPPED/alice: bad data");

            ChangeView again = endpoint.change("events", parked.toString(), "skip", "bad data", alice);
            assertThat(again.changed()).isFalse();
            assertThat(again.message()).contains("DEAD").contains("parked");

            ChangeView discarded = endpoint.change("events", parked.toString(), "discard", "never needed", alice);
            assertThat(discarded.state()).isEqualTo("DISCARDED");
            assertThat(audit(parked)).isEqualTo("DISCARDED/alice: never needed");
            assertThat(endpoint.events("discarded", null, null, "endpoint.skip", null, null).events())
                    .extracting(FailedEventView::eventId).containsExactly(parked.toString());
        });
    }

    @Test
    void an_event_parked_by_the_relay_is_delivered_after_a_requeue_over_jmx() {
        runner.withPropertyValues("txoutbox.relay.enabled=true", "txoutbox.relay.lanes=1",
                "management.endpoint.txoutbox.access=unrestricted").run(context -> {
                    InMemoryTransport transport = context.getBean(InMemoryTransport.class);
                    InMemoryTransport.Rule gone = transport.failWhen(r -> r.topic().equals("endpoint.relay"),
                            SendResult.Kind.PERMANENT);
                    UUID id = insert("PENDING", "endpoint.relay", "order-5", "{}");
                    context.getBean(RelayLifecycle.class).nudge();
                    TxoutboxEndpoint endpoint = context.getBean(TxoutboxEndpoint.class);
                    Awaitility.await().atMost(Duration.ofSeconds(20)).untilAsserted(() -> assertThat(
                            endpoint.events("parked", null, null, "endpoint.relay", null, null).events())
                            .extracting(FailedEventView::eventId).containsExactly(id.toString()));
                    gone.remove();
                    invoke(context, "change", "events", id.toString(), "requeue", "topic is back");
                    transport.awaitDelivered(id, Duration.ofSeconds(20));
                    Awaitility.await().atMost(Duration.ofSeconds(10))
                            .untilAsserted(() -> assertThat(state(id)).isEqualTo("PUBLISHED"));
                    assertThat(audit(id)).isEqualTo("REQUEUED/actuator: topic is back");
                });
    }

    @Test
    void the_web_operations_have_the_documented_paths_and_the_write_one_only_under_unrestricted_access() {
        UUID parked = insert("PARKED", "endpoint.web", "order-6", "{}");
        runner.run(context -> assertThat(webOperations(context).keySet()).containsExactlyInAnyOrder(
                "GET txoutbox", "GET txoutbox/{state}", "GET txoutbox/{events}/{eventId}"));
        runner.withPropertyValues("management.endpoint.txoutbox.access=unrestricted").run(context -> {
            Map<String, WebOperation> operations = webOperations(context);
            assertThat(operations.keySet()).containsExactlyInAnyOrder("GET txoutbox", "GET txoutbox/{state}",
                    "GET txoutbox/{events}/{eventId}", "POST txoutbox/{events}/{eventId}/{action}");
            // as the web adapter calls them: path variables, query parameters and body fields as text
            Object page = operations.get("GET txoutbox/{state}").invoke(new InvocationContext(SecurityContext.NONE,
                    Map.of("state", "parked", "after", "0", "limit", "5", "topic", "endpoint.web")));
            assertThat(((EventPage) page).events()).extracting(FailedEventView::eventId)
                    .containsExactly(parked.toString());
            Object changed = operations.get("POST txoutbox/{events}/{eventId}/{action}").invoke(
                    new InvocationContext(SecurityContext.NONE, Map.of("events", "events", "eventId",
                            parked.toString(), "action", "requeue", "reason", "over http")));
            assertThat(((ChangeView) changed).changed()).isTrue();
        });
        assertThat(audit(parked)).isEqualTo("REQUEUED/actuator: over http");
    }

    @Test
    void the_endpoint_exists_only_when_exposed_and_not_turned_off() {
        new ApplicationContextRunner()
                .withConfiguration(AutoConfigurations.of(DataSourceAutoConfiguration.class,
                        TxoutboxTransportAutoConfiguration.class, TxoutboxAutoConfiguration.class,
                        TxoutboxEndpointAutoConfiguration.class, EndpointAutoConfiguration.class))
                .withPropertyValues(StarterDatabase.properties(db))
                .withPropertyValues("txoutbox.transport=in-memory", "txoutbox.relay.enabled=false")
                .run(context -> assertThat(context).hasNotFailed().doesNotHaveBean(TxoutboxEndpoint.class));
        runner.withPropertyValues("management.endpoint.txoutbox.access=none")
                .run(context -> assertThat(context).hasNotFailed().doesNotHaveBean(TxoutboxEndpoint.class));
        runner.withPropertyValues("management.endpoints.jmx.exposure.include=",
                "management.endpoints.web.exposure.include=health,txoutbox")
                .run(context -> assertThat(context).hasSingleBean(TxoutboxEndpoint.class));
    }

    /** The web operations as Actuator's web discovery (with its access filter) maps them: "METHOD path". */
    private static Map<String, WebOperation> webOperations(AssertableApplicationContext context) {
        WebEndpointDiscoverer discoverer = new WebEndpointDiscoverer(context,
                context.getBean(ParameterValueMapper.class), EndpointMediaTypes.DEFAULT, List.of(), List.of(),
                List.of(), List.of(), List.of(OperationFilter.byAccess(context.getBean(EndpointAccessResolver.class))));
        ExposableWebEndpoint endpoint = discoverer.getEndpoints().stream()
                .filter(e -> e.getEndpointId().toString().equals("txoutbox")).findFirst()
                .orElseThrow(() -> new AssertionError("no txoutbox web endpoint"));
        return endpoint.getOperations().stream().collect(Collectors.toMap(o -> o.getRequestPredicate()
                .getHttpMethod() + " " + o.getRequestPredicate().getPath(), o -> o));
    }

    private static Set<OperationType> operationTypes(AssertableApplicationContext context) {
        return jmxEndpoint(context).getOperations().stream().map(JmxOperation::getType).collect(Collectors.toSet());
    }

    private static Set<String> operationNames(AssertableApplicationContext context) throws Exception {
        MBeanServer server = context.getBean(MBeanServer.class);
        return Arrays.stream(server.getMBeanInfo(objectName(context)).getOperations())
                .map(MBeanOperationInfo::getName).collect(Collectors.toSet());
    }

    private static ExposableJmxEndpoint jmxEndpoint(AssertableApplicationContext context) {
        return context.getBean(JmxEndpointsSupplier.class).getEndpoints().stream()
                .filter(e -> e.getEndpointId().toString().equals("txoutbox")).findFirst()
                .orElseThrow(() -> new AssertionError("no txoutbox endpoint exposed over JMX"));
    }

    private static ObjectName objectName(AssertableApplicationContext context) throws Exception {
        Set<ObjectName> names = context.getBean(MBeanServer.class).queryNames(new ObjectName(MBEANS), null);
        assertThat(names).as("txoutbox endpoint MBeans (one context at a time)").hasSize(1);
        return names.iterator().next();
    }

    /** Invokes an operation as a JMX client does, with the signature the MBean publishes for it. */
    private static Object invoke(AssertableApplicationContext context, String operation, Object... args)
            throws Exception {
        MBeanServer server = context.getBean(MBeanServer.class);
        ObjectName name = objectName(context);
        MBeanOperationInfo info = Arrays.stream(server.getMBeanInfo(name).getOperations())
                .filter(o -> o.getName().equals(operation)).findFirst().orElse(null);
        String[] signature;
        if (info == null) {
            signature = new String[args.length];
            Arrays.fill(signature, String.class.getName());
        } else {
            MBeanParameterInfo[] parameters = info.getSignature();
            signature = Arrays.stream(parameters).map(MBeanParameterInfo::getType).toArray(String[]::new);
            args = Arrays.copyOf(args, parameters.length);
        }
        return server.invoke(name, operation, args, signature);
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> map(Object jmxResult) {
        assertThat(jmxResult).isInstanceOf(Map.class);
        return (Map<String, Object>) jmxResult;
    }

    private static UUID insert(String state, String topic, String key, String payload) {
        boolean failed = !state.equals("PENDING");
        try (Connection c = db.connect(); PreparedStatement ps = c.prepareStatement("INSERT INTO " + TABLE
                + " (topic, partition_key, aggregate_type, aggregate_id, event_type, payload, state, attempts,"
                + " last_error, failed_at) VALUES (?, ?, 'Order', ?, 'OrderPaid', ?::jsonb, ?, ?, ?, "
                + (failed ? "now()" : "NULL") + ") RETURNING event_id")) {
            ps.setString(1, topic);
            ps.setString(2, key);
            ps.setString(3, key);
            ps.setString(4, payload);
            ps.setString(5, state);
            ps.setInt(6, failed ? 1 : 0);
            ps.setString(7, failed ? "topic gone" : null);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getObject(1, UUID.class);
            }
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    private static String state(UUID eventId) {
        return row(eventId).get("state");
    }

    /** operator_action/operator_name. */
    private static String audit(UUID eventId) {
        Map<String, String> row = row(eventId);
        return row.get("operator_action") + "/" + row.get("operator_name");
    }

    private static Map<String, String> row(UUID eventId) {
        try (Connection c = db.connect(); PreparedStatement ps = c.prepareStatement(
                "SELECT state, operator_action, operator_name FROM " + TABLE + " WHERE event_id = ?")) {
            ps.setObject(1, eventId);
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next()) {
                    throw new AssertionError("no outbox row " + eventId);
                }
                Map<String, String> row = new HashMap<>();
                for (String column : List.of("state", "operator_action", "operator_name")) {
                    row.put(column, rs.getString(column));
                }
                return row;
            }
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }
}
