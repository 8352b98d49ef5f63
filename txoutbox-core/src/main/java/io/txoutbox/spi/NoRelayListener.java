package io.txoutbox.spi;

/** The default {@link RelayListener}: ignores everything. */
enum NoRelayListener implements RelayListener {
    INSTANCE
}
