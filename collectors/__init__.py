"""Collectors: gNMI streaming and SNMP polling into catalog sample batches.

The plugins (``gnmi``, ``snmp``) register in the ``rocewatch.collectors`` entry-point group; the
``collect`` role runs them (:mod:`collectors.loop`). See ``docs/collectors.md``.
"""
