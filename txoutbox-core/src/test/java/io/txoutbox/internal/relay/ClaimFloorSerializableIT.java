package io.txoutbox.internal.relay;

import io.txoutbox.testing.postgres.TestDatabase;
import java.util.Map;
import javax.sql.DataSource;
import org.junit.jupiter.api.Tag;

/** The claim floor scenarios with {@code default_transaction_isolation = 'serializable'} on the relay's sessions. */
@Tag("pg-version")
class ClaimFloorSerializableIT extends ClaimFloorIT {

    @Override
    DataSource sessions(TestDatabase db) {
        return db.dataSource(Map.of("default_transaction_isolation", "serializable"));
    }
}
