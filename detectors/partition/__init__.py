"""Detection partitioned across processes: detect workers judge their share of the samples
partitions and publish symptoms (:mod:`.worker`); one correlator, the holder of the
``correlator`` lease, correlates the whole fabric's symptoms (:mod:`.correlate`, :mod:`.service`);
the rules that compare devices with each other run on its side (:mod:`.rules`)."""
