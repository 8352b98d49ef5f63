package io.txoutbox.spring.internal;

import io.micrometer.tracing.Span;
import io.micrometer.tracing.Tracer;
import io.micrometer.tracing.propagation.Propagator;
import java.util.Map;
import java.util.Objects;

/**
 * The current trace context as event headers (with Spring Boot's default W3C propagation: {@code traceparent}), so a
 * trace spans the outbox: the relay copies the headers onto the Kafka record, and a listener whose container observes
 * ({@code spring.kafka.listener.observation-enabled=true}) continues the trace the publishing request started.
 */
public final class TraceHeaders {

    private final Tracer tracer;
    private final Propagator propagator;

    public TraceHeaders(Tracer tracer, Propagator propagator) {
        this.tracer = Objects.requireNonNull(tracer, "tracer");
        this.propagator = Objects.requireNonNull(propagator, "propagator");
    }

    /** Puts the current span's propagation fields into {@code headers}; nothing when no span is current. */
    public void addTo(Map<String, String> headers) {
        Span span = tracer.currentSpan();
        if (span != null) {
            propagator.inject(span.context(), headers, Map::put);
        }
    }
}
