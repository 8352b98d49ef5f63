package io.txoutbox.spring.autoconfigure;

import io.micrometer.tracing.Tracer;
import io.micrometer.tracing.propagation.Propagator;
import io.txoutbox.spring.internal.TraceHeaders;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.context.annotation.Bean;

/**
 * With Micrometer Tracing, every published event carries the current trace context in its headers (W3C
 * {@code traceparent} under Boot's default propagation), and the trace continues in the listener that consumes it.
 */
@AutoConfiguration(before = TxoutboxAutoConfiguration.class, afterName = {
        "org.springframework.boot.micrometer.tracing.autoconfigure.MicrometerTracingAutoConfiguration",
        "org.springframework.boot.micrometer.tracing.brave.autoconfigure.BraveAutoConfiguration",
        "org.springframework.boot.micrometer.tracing.opentelemetry.autoconfigure.OpenTelemetryTracingAutoConfiguration"})
@ConditionalOnClass({Tracer.class, Propagator.class})
public class TxoutboxTracingAutoConfiguration {

    @Bean
    @ConditionalOnMissingBean
    @ConditionalOnBean({Tracer.class, Propagator.class})
    TraceHeaders txoutboxTraceHeaders(Tracer tracer, Propagator propagator) {
        return new TraceHeaders(tracer, propagator);
    }
}
