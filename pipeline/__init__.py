"""The ground floor: the contracts every stage shares, and the pipeline that carries data.

Contracts: the data model, the metric catalog, the wire format of each topic (``wire``), the
topology, the config, the exception tree, the plugin registry, and the shared rules (counter to
rate, durations and instants, retries, supervision). The pipeline itself: the bus, the store and
ingest between them. Nothing here imports a stage.
"""
