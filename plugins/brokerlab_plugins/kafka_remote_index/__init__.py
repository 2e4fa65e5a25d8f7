"""Kafka's tiered-storage remote index cache (KAFKA-19970): the data-structure core."""
