"""The pure domain: the DisaggregatedSet model and its defaults, validation, names, the revision,
the planner, rendering, the reconcile decision and derived status. No I/O, no cluster, no clock."""
