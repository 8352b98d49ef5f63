package io.txoutbox.test;

import io.txoutbox.OutboxGrants;
import io.txoutbox.OutboxSchema;
import io.txoutbox.testing.postgres.TestDatabase;
import javax.sql.DataSource;
import org.junit.jupiter.api.Tag;

/**
 * The relay acceptance scenarios of {@link PollingRelayInMemoryIT} with the relay logged in as a role that holds
 * exactly {@link OutboxGrants.Component#RELAY}'s grants, and the admin as one with exactly
 * {@link OutboxGrants.Component#ADMIN}'s, EXECUTE on the shard function revoked from PUBLIC.
 */
@Tag("pg-version")
@Tag("pg-edge-majors")
class LeastPrivilegeRelayIT extends PollingRelayInMemoryIT {

    @Override
    protected DataSource relaySessions(TestDatabase db, OutboxSchema schema) {
        revokeFunctionsFromPublic(db, schema);
        return db.loginRole("relay", r -> OutboxGrants.sql(schema, OutboxGrants.Component.RELAY, r));
    }

    @Override
    protected DataSource adminSessions(TestDatabase db, OutboxSchema schema) {
        return db.loginRole("admin", r -> OutboxGrants.sql(schema, OutboxGrants.Component.ADMIN, r));
    }

    /** PUBLIC holds EXECUTE on new functions; without it a role must be granted it, as the grants do. */
    static void revokeFunctionsFromPublic(TestDatabase db, OutboxSchema schema) {
        db.execute("REVOKE EXECUTE ON FUNCTION " + schema.schema() + ".txoutbox_shard(text, integer) FROM PUBLIC",
                "REVOKE EXECUTE ON FUNCTION " + schema.schema() + ".txoutbox_uuidv7() FROM PUBLIC");
    }
}
