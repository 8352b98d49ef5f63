package io.txoutbox.internal.progress;

import io.txoutbox.OutboxSchema;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Where every component gets the progress model of its outbox table: the relay, and the status, retention and admin
 * readers. Today one model serves every table ({@link #rowState}); {@link #use} puts another behind one table, for a
 * test that proves the seam (an internal hook: nothing public names a model).
 */
public final class ProgressModels {

    /** Models put behind a table by {@link #use}, by qualified table name. */
    private static final Map<String, ProgressModel> IN_USE = new ConcurrentHashMap<>();

    private ProgressModels() {
    }

    /** The model of {@code schema}'s table: the one {@link #use} put there, else its setting ({@code progress}). */
    public static ProgressModel of(OutboxSchema schema) {
        ProgressModel model = IN_USE.get(schema.qualifiedOutboxTable());
        if (model != null) {
            return model;
        }
        return schema.progress() == OutboxSchema.Progress.CURSOR ? cursor(schema) : rowState(schema);
    }

    /** Today's model, one UPDATE per row ({@link RowStateProgress}). */
    public static ProgressModel rowState(OutboxSchema schema) {
        return new RowStateProgress(schema);
    }

    /** The cursor model: one HOT update of a lane's progress row per settlement ({@link CursorProgress}). */
    public static ProgressModel cursor(OutboxSchema schema) {
        return new CursorProgress(schema);
    }

    /**
     * Puts {@code model} behind its table until the returned handle is closed: components built for that table
     * meanwhile take it (those built before keep theirs).
     */
    public static AutoCloseable use(ProgressModel model) {
        String table = model.schema().qualifiedOutboxTable();
        if (IN_USE.putIfAbsent(table, Objects.requireNonNull(model)) != null) {
            throw new IllegalStateException("a progress model is in use for " + table + " already");
        }
        return () -> IN_USE.remove(table, model);
    }
}
