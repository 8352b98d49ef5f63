package io.txoutbox;

/** A configuration value was rejected when a component was built; the message names the property and the fix. */
public class InvalidConfigurationException extends OutboxException {

    private static final long serialVersionUID = 1L;

    public InvalidConfigurationException(String message) {
        super(message);
    }
}
