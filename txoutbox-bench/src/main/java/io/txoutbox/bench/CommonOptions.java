package io.txoutbox.bench;

import java.util.LinkedHashMap;
import java.util.Map;
import picocli.CommandLine.Option;

/** Where the services are: embedded PostgreSQL and an in-process broker unless given. */
final class CommonOptions {

    @Option(names = "--jdbc-url", description = "PostgreSQL to use instead of an embedded one (fsync=off)")
    String jdbcUrl;

    @Option(names = "--jdbc-user", defaultValue = "postgres")
    String jdbcUser;

    @Option(names = "--jdbc-password", defaultValue = "")
    String jdbcPassword;

    @Option(names = "--bootstrap-servers", description = "Kafka to use instead of an in-process broker")
    String bootstrapServers;

    @Option(names = "--broker-property", description = "in-process broker property k=v (repeatable)")
    Map<String, String> brokerProperties = new LinkedHashMap<>();

    @Option(names = "--pg-setting", description = "embedded PostgreSQL setting name=value (repeatable), e.g."
            + " full_page_writes=on, fsync=on (steady and drain preload pg_stat_statements unless replaced)")
    Map<String, String> pgSettings = new LinkedHashMap<>();

    @Option(names = "--broker", description = "where the broker runs: in-process or process (its own JVM, its CPU"
            + " seen apart); default: process for steady, in-process for the others")
    String broker;

    @Option(names = "--partitions", defaultValue = "6", description = "partitions per topic (default ${DEFAULT-VALUE})")
    int partitions;

    @Option(names = "--keys", defaultValue = "1000", description = "distinct partition keys (default ${DEFAULT-VALUE})")
    int keys;

    @Option(names = "--payload-bytes", defaultValue = "300", description = "JSON payload size (default ${DEFAULT-VALUE})")
    int payloadBytes;

    @Option(names = "--mode", defaultValue = "TRANSACTIONAL",
            description = "KafkaTransport mode: TRANSACTIONAL or IDEMPOTENT (default ${DEFAULT-VALUE})")
    io.txoutbox.kafka.KafkaTransport.Mode mode;

    @Option(names = "--producer-property", description = "producer property k=v for all contenders (repeatable)")
    Map<String, String> producerProperties = new LinkedHashMap<>();

    /** Whether {@code --broker} asks for a broker in its own JVM. */
    boolean brokerProcess(boolean byDefault) {
        if (broker == null) {
            return byDefault;
        }
        return switch (broker) {
            case "process" -> true;
            case "in-process" -> false;
            default -> throw new IllegalArgumentException("--broker must be in-process or process, was '" + broker
                    + "'");
        };
    }
}
