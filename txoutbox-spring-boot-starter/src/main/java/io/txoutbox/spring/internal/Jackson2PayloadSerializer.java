package io.txoutbox.spring.internal;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.txoutbox.Payload;
import io.txoutbox.spi.PayloadSerializer;
import java.util.Objects;

/** JSON through the application's Jackson 2 {@link ObjectMapper}, for applications that still use Jackson 2. */
public final class Jackson2PayloadSerializer implements PayloadSerializer {

    private final ObjectMapper mapper;

    public Jackson2PayloadSerializer(ObjectMapper mapper) {
        this.mapper = Objects.requireNonNull(mapper, "mapper");
    }

    @Override
    public Payload serialize(Object value) throws Exception {
        return Payload.json(mapper.writeValueAsString(value));
    }
}
