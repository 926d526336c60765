"""Coordination of the processes that run one role: groups of members in ZooKeeper, the leader
among them (:mod:`pipeline.cluster.group`, :mod:`pipeline.cluster.lease`)."""
