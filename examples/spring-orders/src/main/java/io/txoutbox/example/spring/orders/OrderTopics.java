package io.txoutbox.example.spring.orders;

import org.apache.kafka.clients.admin.NewTopic;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.kafka.config.TopicBuilder;

/** The order service's topic, created at start by Spring's KafkaAdmin if it does not exist (replicas: the broker's default). */
@Configuration(proxyBeanMethods = false)
public class OrderTopics {

    @Bean
    NewTopic orderEvents() {
        return TopicBuilder.name(PlaceOrderHandler.TOPIC).partitions(3).build();
    }
}
