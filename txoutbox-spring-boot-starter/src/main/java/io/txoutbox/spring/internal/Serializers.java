package io.txoutbox.spring.internal;

import io.txoutbox.jackson.JacksonPayloadSerializer;
import io.txoutbox.spi.PayloadSerializer;
import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.util.ClassUtils;

/**
 * The JSON serializer of published events: the application's Jackson 3 mapper (Spring Boot 4's {@code JsonMapper}
 * bean) by default; the application's Jackson 2 {@code ObjectMapper} where that is the one it has; else a default
 * Jackson 3 mapper, else a default Jackson 2 one. A {@link PayloadSerializer} bean replaces all of this.
 */
public final class Serializers {

    private static final String JACKSON3 = "tools.jackson.databind.ObjectMapper";
    private static final String JACKSON2 = "com.fasterxml.jackson.databind.ObjectMapper";

    private Serializers() {
    }

    public static PayloadSerializer json(ListableBeanFactory beans) {
        ClassLoader loader = Serializers.class.getClassLoader();
        boolean jackson3 = ClassUtils.isPresent(JACKSON3, loader);
        boolean jackson2 = ClassUtils.isPresent(JACKSON2, loader);
        if (jackson3) {
            var mapper = beans.getBeanProvider(tools.jackson.databind.ObjectMapper.class).getIfUnique();
            if (mapper != null) {
                return new JacksonPayloadSerializer(mapper);
            }
        }
        if (jackson2) {
            var mapper = beans.getBeanProvider(com.fasterxml.jackson.databind.ObjectMapper.class).getIfUnique();
            if (mapper != null) {
                return new Jackson2PayloadSerializer(mapper);
            }
        }
        if (jackson3) {
            return new JacksonPayloadSerializer();
        }
        if (jackson2) {
            return new Jackson2PayloadSerializer(new com.fasterxml.jackson.databind.ObjectMapper().findAndRegisterModules());
        }
        return PayloadSerializer.none();
    }
}
