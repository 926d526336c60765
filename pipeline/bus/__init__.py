"""The bus: the interface and topic names every stage uses, the in-process default and Kafka."""
