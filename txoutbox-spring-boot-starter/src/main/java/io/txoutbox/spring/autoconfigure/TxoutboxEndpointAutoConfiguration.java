package io.txoutbox.spring.autoconfigure;

import io.txoutbox.spring.actuate.TxoutboxEndpoint;
import io.txoutbox.spring.autoconfigure.TxoutboxAutoConfiguration.TxoutboxSchema;
import io.txoutbox.spring.internal.RelayLifecycle;
import java.util.Set;
import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.actuate.autoconfigure.endpoint.condition.ConditionalOnAvailableEndpoint;
import org.springframework.boot.actuate.endpoint.Show;
import org.springframework.boot.actuate.endpoint.annotation.Endpoint;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.context.properties.bind.Bindable;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.context.annotation.Bean;
import org.springframework.core.env.Environment;

/**
 * The Actuator endpoint {@code txoutbox} ({@link TxoutboxEndpoint}), when Actuator is on the classpath and the
 * endpoint is available — exposed ({@code management.endpoints.web.exposure.include=health,txoutbox}) and its access
 * not {@code none}. Its default access is read-only: the status, the lists and one event's details; the write
 * operation (requeue, discard, skip) needs {@code management.endpoint.txoutbox.access=unrestricted}. An event's
 * payload is shown only as {@code management.endpoint.txoutbox.show-payload} allows ({@code never} by default,
 * {@code when-authorized} with {@code management.endpoint.txoutbox.roles}, or {@code always}).
 */
@AutoConfiguration(after = TxoutboxAutoConfiguration.class)
@ConditionalOnClass({Endpoint.class, ConditionalOnAvailableEndpoint.class})
@ConditionalOnBean(TxoutboxSchema.class)
public class TxoutboxEndpointAutoConfiguration {

    static final String PREFIX = "management.endpoint.txoutbox";

    @Bean
    @ConditionalOnMissingBean
    @ConditionalOnAvailableEndpoint
    public TxoutboxEndpoint txoutboxEndpoint(TxoutboxSchema schema, ListableBeanFactory beans,
            ObjectProvider<RelayLifecycle> relay, Environment environment) {
        Binder binder = Binder.get(environment);
        Show showPayload = binder.bind(PREFIX + ".show-payload", Show.class).orElse(Show.NEVER);
        Set<String> roles = binder.bind(PREFIX + ".roles", Bindable.setOf(String.class)).orElse(Set.of());
        RelayLifecycle lifecycle = relay.getIfAvailable();
        return new TxoutboxEndpoint(TxoutboxAutoConfiguration.outboxDataSource(beans), schema.schema(),
                lifecycle == null ? null : lifecycle.relay(), showPayload, roles);
    }
}
