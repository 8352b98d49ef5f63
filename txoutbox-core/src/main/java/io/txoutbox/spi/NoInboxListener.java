package io.txoutbox.spi;

/** The default {@link InboxListener}: ignores everything. */
enum NoInboxListener implements InboxListener {
    INSTANCE
}
