"""The alerting side of remediation: Alertmanager's lifecycle on event time (dispatch, grouping,
routing, inhibition, silences) and what receivers are handed."""
