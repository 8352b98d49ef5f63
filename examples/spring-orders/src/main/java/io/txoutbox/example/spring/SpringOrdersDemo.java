package io.txoutbox.example.spring;

import io.txoutbox.testing.kafka.KafkaBroker;
import io.txoutbox.testing.postgres.TestDatabase;
import io.txoutbox.testing.postgres.TestPostgres;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import org.springframework.boot.ApplicationArguments;
import org.springframework.boot.DefaultApplicationArguments;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * The runnable example: starts an embedded PostgreSQL (a fresh schema of it) and an in-process Kafka broker unless
 * {@code --jdbc-url} and {@code --bootstrap-servers} name real ones, then the Spring Boot application with both, and
 * runs {@link OrderJob}: it places the orders through {@code PlaceOrderHandler}, waits until the payment service paid
 * each once, and ends with one line, {@code orders=N published=N paid=N duplicates_skipped=D lost=0 p50_ms=… p99_ms=…}
 * (order written → payment written). Exits 0 when every order was published and paid exactly once, 1 when not, 2
 * when the run failed.
 *
 * <p>Options are Spring's {@code --name=value} arguments, so any Spring or txoutbox property may be given the same way
 * ({@code --txoutbox.relay.lanes=8}); {@code --help} lists the demo's own.
 */
public final class SpringOrdersDemo {

    static final String HELP = """
            options (--name=value):
              --orders=N             orders to place (2000)
              --writers=N            threads placing them (4)
              --rate=N               orders per second over all writers (250; 0 = as fast as possible)
              --customers=N          customers the orders are spread over (200)
              --jdbc-url=URL         a PostgreSQL of your own instead of the embedded one
              --jdbc-user=U          its user (postgres)
              --jdbc-password=P      its password (empty)
              --bootstrap-servers=B  a Kafka of your own instead of the in-process broker
              --any.spring.or.txoutbox.property=value""";

    private SpringOrdersDemo() {
    }

    public static void main(String[] args) throws Exception {
        if (List.of(args).contains("--help") || List.of(args).contains("-h")) {
            System.out.println(HELP);
            System.exit(0);
        }
        try {
            Options.parse(args);
        } catch (IllegalArgumentException e) {
            System.err.println(e.getMessage());
            System.exit(2);
        }
        int status;
        try {
            status = run(args).clean() ? 0 : 1;
        } catch (Exception e) {
            e.printStackTrace();
            status = 2;
        }
        // no thread of the embedded servers or the clients may keep the JVM alive
        System.exit(status);
    }

    /**
     * Runs the whole example and returns its summary, after printing it as the last line; the embedded servers are
     * stopped before it returns.
     */
    public static OrderJob.Summary run(String... args) throws Exception {
        Options options = Options.parse(args);
        long t0 = System.nanoTime();
        TestDatabase embeddedDb = null;
        CompletableFuture<KafkaBroker> embeddedKafka = null;
        OrderJob.Summary summary = null;
        try {
            if (options.bootstrapServers == null) {
                // the broker starts while PostgreSQL does
                embeddedKafka = CompletableFuture.supplyAsync(() -> KafkaBroker.builder().start());
            }
            Map<String, Object> properties = new LinkedHashMap<>();
            if (options.jdbcUrl == null) {
                embeddedDb = TestPostgres.shared().newDatabase("spring_orders");
                properties.put("spring.datasource.url", embeddedDb.jdbcUrl());
                properties.put("spring.datasource.username", embeddedDb.server().user());
                properties.put("spring.datasource.password", embeddedDb.server().password());
                properties.put("txoutbox.schema.schema", embeddedDb.schema());
            } else {
                properties.put("spring.datasource.url", options.jdbcUrl);
                properties.put("spring.datasource.username", options.jdbcUser);
                properties.put("spring.datasource.password", options.jdbcPassword);
            }
            String bootstrap = embeddedKafka != null ? embeddedKafka.join().bootstrapServers()
                    : options.bootstrapServers;
            properties.put("spring.kafka.bootstrap-servers", bootstrap);
            // the writers and the listener's consumers each hold a connection while they work
            properties.put("spring.datasource.hikari.maximum-pool-size", options.writers + 6);
            OrderJob.say("PostgreSQL %s, Kafka %s%s (%.1f s)",
                    properties.get("spring.datasource.url").toString().replaceAll("(?i)(password=)[^&]*", "$1***"),
                    bootstrap,
                    embeddedDb != null || embeddedKafka != null ? " (embedded)" : "", (System.nanoTime() - t0) / 1e9);

            try (ConfigurableApplicationContext context = new SpringApplicationBuilder(SpringOrdersApplication.class)
                    .properties(properties).run(args)) {
                summary = new OrderJob(context, options).run();
            }
        } finally {
            if (embeddedKafka != null) {
                try {
                    embeddedKafka.join().close();
                } catch (RuntimeException e) {
                    if (summary != null) {
                        throw e;
                    } // else the broker did not start, or the run failed first: that error is the one to report
                }
            }
            if (embeddedDb != null) {
                embeddedDb.close();
            }
        }
        OrderJob.say("done in %.1f s", (System.nanoTime() - t0) / 1e9);
        System.out.println(summary.line());
        return summary;
    }

    /** The demo's own options; every other {@code --name=value} is left to Spring. */
    static final class Options {
        private static final Set<String> OWN = Set.of("orders", "writers", "rate", "customers", "jdbc-url", "jdbc-user",
                "jdbc-password", "bootstrap-servers");

        String jdbcUrl;
        String jdbcUser = "postgres";
        String jdbcPassword = "";
        String bootstrapServers;
        int orders = 2_000;
        int writers = 4;
        int rate = 250;
        int customers = 200;

        static Options parse(String... args) {
            ApplicationArguments cli = new DefaultApplicationArguments(args);
            if (!cli.getNonOptionArgs().isEmpty()) {
                throw new IllegalArgumentException("options are --name=value, found " + cli.getNonOptionArgs()
                        + " (try --help)");
            }
            Options o = new Options();
            for (String name : cli.getOptionNames()) {
                if (!OWN.contains(name)) {
                    continue; // a Spring or txoutbox property
                }
                List<String> values = cli.getOptionValues(name);
                if (values == null || values.size() != 1
                        || values.get(0).isBlank() && !name.equals("jdbc-password")) {
                    throw new IllegalArgumentException("--" + name + " needs one value: --" + name + "=… (try --help)");
                }
                String v = values.get(0);
                switch (name) {
                    case "orders" -> o.orders = atLeast(name, v, 1);
                    case "writers" -> o.writers = atLeast(name, v, 1);
                    case "rate" -> o.rate = atLeast(name, v, 0);
                    case "customers" -> o.customers = atLeast(name, v, 1);
                    case "jdbc-url" -> o.jdbcUrl = v;
                    case "jdbc-user" -> o.jdbcUser = v;
                    case "jdbc-password" -> o.jdbcPassword = v;
                    case "bootstrap-servers" -> o.bootstrapServers = v;
                    default -> throw new AssertionError(name);
                }
            }
            return o;
        }

        private static int atLeast(String name, String value, int min) {
            int n;
            try {
                n = Integer.parseInt(value.trim());
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("--" + name + " must be a number, was " + value);
            }
            if (n < min) {
                throw new IllegalArgumentException("--" + name + " must be >= " + min + ", was " + n);
            }
            return n;
        }
    }
}
