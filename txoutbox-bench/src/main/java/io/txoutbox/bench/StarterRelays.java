package io.txoutbox.bench;

import io.txoutbox.OutboxSchema;
import io.txoutbox.kafka.KafkaTransport;
import io.txoutbox.spi.Transport;
import io.txoutbox.spring.internal.RelayLifecycle;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.config.BeanPostProcessor;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * The relay a Spring Boot application with the starter runs: an application context with auto-configuration on the
 * bench's classpath (DataSource, Kafka, the starter's; no Micrometer, so no relay listener), configured only with
 * properties — {@code spring.datasource.*}, {@code spring.kafka.bootstrap-servers} and
 * {@code spring.kafka.producer.properties.*} (the settings every contender shares), {@code txoutbox.*} with the same
 * lanes and batch size as the core contender. The starter builds the relay's pool (Hikari, lanes + 2) and its
 * {@code KafkaTransport} from Spring's producer configuration; the only thing added is the same
 * {@link TimedTransport} around that transport that the core contender has around its own.
 */
final class StarterRelays implements DrainRelayContender.RelayFactory {

    private static final Logger log = LoggerFactory.getLogger(StarterRelays.class);

    static {
        // the bench logs through slf4j-simple; Boot would otherwise take over log4j-core (on the broker's classpath)
        System.setProperty("org.springframework.boot.logging.LoggingSystem", "none");
    }

    private final DrainRun d;
    private final int lanes;
    private final int batchSize;
    private final AtomicBoolean compared = new AtomicBoolean();

    StarterRelays(DrainRun d, int lanes, int batchSize) {
        this.d = d;
        this.lanes = lanes;
        this.batchSize = batchSize;
    }

    /** The application: nothing of its own, everything from auto-configuration. */
    @SpringBootConfiguration(proxyBeanMethods = false)
    @EnableAutoConfiguration
    static class Application {
    }

    @Override
    public DrainRelayContender.Relays start(String name, OutboxSchema schema) {
        Map<String, Object> p = new LinkedHashMap<>();
        p.put("spring.main.banner-mode", "off");
        p.put("spring.main.log-startup-info", "false");
        // as the core contender: the relay's own role on the embedded server (its statements and sessions apart)
        var relayDs = d.env().relayDataSource();
        p.put("spring.datasource.url", relayDs.getURL());
        p.put("spring.datasource.username", relayDs.getUser());
        p.put("spring.datasource.password", relayDs.getPassword());
        p.put("spring.datasource.hikari.maximum-pool-size", "2");
        p.put("spring.kafka.bootstrap-servers", d.env().bootstrapServers());
        KafkaTransports.properties(ProducerSettings.effective(d.common()), d.common())
                .forEach((k, v) -> p.put("spring.kafka.producer.properties[" + k + "]", v));
        p.put("txoutbox.kafka.mode", d.common().mode.name());
        p.put("txoutbox.schema.schema", schema.schema());
        p.put("txoutbox.schema.migrate", "never"); // Backlog.createSchema migrated it
        p.put("txoutbox.relay.name", name);
        p.put("txoutbox.relay.lanes", String.valueOf(lanes));
        p.put("txoutbox.relay.batch-size", String.valueOf(batchSize));
        AtomicReference<TimedTransport> timed = new AtomicReference<>();
        BeanPostProcessor timer = new BeanPostProcessor() {
            @Override
            public Object postProcessAfterInitialization(Object bean, String beanName) {
                if (bean instanceof KafkaTransport k && !compared.getAndSet(true)) {
                    compareWithCore(k);
                }
                if (bean instanceof Transport t && !(bean instanceof TimedTransport)) {
                    TimedTransport w = new TimedTransport(t);
                    if (!timed.compareAndSet(null, w)) {
                        throw new IllegalStateException("more than one Transport bean: " + beanName);
                    }
                    return w;
                }
                return bean;
            }
        };
        ConfigurableApplicationContext context = new SpringApplicationBuilder(Application.class)
                .web(WebApplicationType.NONE).registerShutdownHook(false).properties(p)
                .initializers(c -> c.getBeanFactory().addBeanPostProcessor(timer)).run();
        try {
            RelayLifecycle relay = context.getBean(RelayLifecycle.class);
            if (timed.get() == null) {
                throw new IllegalStateException("the starter built no Transport bean");
            }
            return new DrainRelayContender.Relays(List.of(relay.relay()), timed.get(), context::close);
        } catch (RuntimeException e) {
            context.close();
            throw e;
        }
    }

    /** Logs whether the starter's producer configuration is the one the core contender's transport gets. */
    private void compareWithCore(KafkaTransport starter) {
        Map<String, String> core = text(KafkaTransport.builder().bootstrapServers(d.env().bootstrapServers())
                .mode(d.common().mode).properties(KafkaTransports.properties(ProducerSettings.effective(d.common()),
                        d.common())).config().producerProperties());
        Map<String, String> spring = text(starter.config().producerProperties());
        if (core.equals(spring)) {
            log.info("the starter's transport has the core contender's producer configuration: {}", spring);
            return;
        }
        Map<String, String> diff = new TreeMap<>();
        core.forEach((k, v) -> {
            if (!v.equals(spring.get(k))) {
                diff.put(k, "core " + v + ", starter " + spring.get(k));
            }
        });
        spring.forEach((k, v) -> {
            if (!core.containsKey(k)) {
                diff.put(k, "core -, starter " + v);
            }
        });
        log.warn("the starter's transport differs from the core contender's in: {}", diff);
    }

    private static Map<String, String> text(Map<String, Object> properties) {
        Map<String, String> m = new TreeMap<>();
        // Spring binds bootstrap.servers as a list, the builder takes the comma-separated text
        properties.forEach((k, v) -> m.put(k, v instanceof java.util.Collection<?> c
                ? String.join(",", c.stream().map(String::valueOf).toList()) : String.valueOf(v)));
        return m;
    }
}
