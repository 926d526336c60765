"""The simulation as a process: the fabric advanced step by step, its snapshots in shared memory,
and
the agents' view of them."""
