package io.txoutbox.bench;

import io.txoutbox.OutboxSchema;
import io.txoutbox.internal.progress.ProgressModels;
import java.util.List;
import java.util.Locale;
import picocli.CommandLine.ITypeConverter;
import picocli.CommandLine.Option;
import picocli.CommandLine.TypeConversionException;

/**
 * The progress model a relay contender runs (docs/progress-models.md): {@code rows}, today's one UPDATE per
 * delivered event, or {@code cursor}, one HOT update of a lane's progress row per settlement.
 */
enum Progress {
    ROWS, CURSOR;

    /** The option's spelling: {@code rows}, {@code cursor}. */
    String label() {
        return name().toLowerCase(Locale.ROOT);
    }

    /**
     * Puts this model behind {@code schema}'s table until closed: the relays and readers built for the table meanwhile
     * take it (build the relay after this).
     */
    AutoCloseable use(OutboxSchema schema) {
        return ProgressModels.use(this == CURSOR ? ProgressModels.cursor(schema) : ProgressModels.rowState(schema));
    }

    /** {@code --progress}, a mixin of the commands that compare the models in one run. */
    static final class Choice {
        @Option(names = "--progress", split = ",", defaultValue = "rows", converter = Parser.class,
                description = "progress models, every relay run once per model, alternating: rows (one UPDATE per"
                        + " event) and/or cursor (a lane's progress row per settlement) (default ${DEFAULT-VALUE})")
        List<Progress> models;
    }

    /** Reads {@code rows} or {@code cursor}. */
    static final class Parser implements ITypeConverter<Progress> {
        @Override
        public Progress convert(String value) {
            for (Progress p : values()) {
                if (p.label().equals(value.trim())) {
                    return p;
                }
            }
            throw new TypeConversionException("--progress must be rows or cursor, was '" + value + "'");
        }
    }
}
