"""The pure domain: the DisaggregatedSet model and its defaults, validation, names, the revision,
the planner and its inputs, rendering, the reconcile decision (each phase with its words) and
derived status. No I/O, no cluster, no clock."""
