package io.txoutbox.spring.internal;

import org.springframework.boot.diagnostics.AbstractFailureAnalyzer;
import org.springframework.boot.diagnostics.FailureAnalysis;

/** Turns a missing or old outbox schema into Spring Boot's start-up report: what was found, and how to apply it. */
public final class SchemaFailureAnalyzer extends AbstractFailureAnalyzer<SchemaNotReadyException> {

    @Override
    protected FailureAnalysis analyze(Throwable rootFailure, SchemaNotReadyException cause) {
        return new FailureAnalysis("txoutbox: " + cause.found(), cause.action(), cause);
    }
}
