package io.txoutbox.spring.internal;

import io.txoutbox.InvalidConfigurationException;
import org.springframework.boot.diagnostics.AbstractFailureAnalyzer;
import org.springframework.boot.diagnostics.FailureAnalysis;

/** Turns a bad {@code txoutbox.*} setting into Spring Boot's start-up report: what is wrong, and where to fix it. */
public final class TxoutboxFailureAnalyzer extends AbstractFailureAnalyzer<InvalidConfigurationException> {

    @Override
    protected FailureAnalysis analyze(Throwable rootFailure, InvalidConfigurationException cause) {
        return new FailureAnalysis("txoutbox: " + cause.getMessage(),
                "Fix that setting in application.properties or application.yaml (or its environment variable, e.g. "
                        + "TXOUTBOX_RELAY_BATCH_SIZE for txoutbox.relay.batch-size). Every setting, its default and "
                        + "its accepted forms: docs/configuration.md.", cause);
    }
}
