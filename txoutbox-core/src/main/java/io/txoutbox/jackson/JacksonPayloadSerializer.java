package io.txoutbox.jackson;

import io.txoutbox.Payload;
import io.txoutbox.spi.PayloadSerializer;
import java.util.Objects;
import tools.jackson.databind.ObjectMapper;
import tools.jackson.databind.json.JsonMapper;

/**
 * Serializes object payloads to JSON text with Jackson 3 ({@code tools.jackson.core:jackson-databind}, an optional
 * dependency of txoutbox-core: add it to your build to use this class).
 *
 * <pre>{@code
 * Outbox.builder().payloadSerializer(new JacksonPayloadSerializer(mapper)).build();
 * }</pre>
 */
public final class JacksonPayloadSerializer implements PayloadSerializer {

    private final ObjectMapper mapper;

    /** With a default {@link JsonMapper}. */
    public JacksonPayloadSerializer() {
        this(JsonMapper.builder().build());
    }

    public JacksonPayloadSerializer(ObjectMapper mapper) {
        this.mapper = Objects.requireNonNull(mapper, "mapper");
    }

    @Override
    public Payload serialize(Object value) {
        return Payload.json(mapper.writeValueAsString(value));
    }
}
