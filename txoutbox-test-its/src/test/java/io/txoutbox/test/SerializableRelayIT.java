package io.txoutbox.test;

import io.txoutbox.testing.postgres.TestDatabase;
import java.util.Map;
import javax.sql.DataSource;

/**
 * The relay acceptance scenarios of {@link PollingRelayInMemoryIT} with {@code default_transaction_isolation =
 * 'serializable'} (a pool or database default) on the relay's, the admin's and the migration's sessions; the test's
 * writers keep READ COMMITTED so their own serialization failures do not count. (A shorter class name than the
 * parent's: the schema name, and with it the NOTIFY channel, grows with it.)
 *
 * <p>On the default PostgreSQL only (no {@code pg-version} tag): the pin is the same code on every version, and the
 * version matrix runs {@code ClaimFloorSerializableIT} and the parent's scenarios (as {@link LeastPrivilegeRelayIT}).
 */
class SerializableRelayIT extends PollingRelayInMemoryIT {

    @Override
    protected DataSource sessions(TestDatabase db) {
        return db.dataSource(Map.of("default_transaction_isolation", "serializable"));
    }
}
