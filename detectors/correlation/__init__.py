"""Fabric-wide correlation: the pause graph, root classification, link findings, and one incident
per
root cause."""
