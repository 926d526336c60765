"""The SNMP collector: pysnmp for the session, our own BER reader for the hot path, polls on event
time."""
