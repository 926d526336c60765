"""Device agents speaking SNMP v2c/v3: the MIB view of the simulation and the agent."""
