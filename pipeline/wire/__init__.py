"""The wire format of every topic, one module per topic: how a message is encoded, decoded, and what
happens to an item that cannot be read."""
