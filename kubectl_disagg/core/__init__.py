"""The pure domain, in three packages by concern, each importing only those below it: `api`
(the DisaggregatedSet document, its defaults and validation, names, the revision), `controller`
(what the upstream controller computes: rendering, the planner, the reconcile decision) and
`delivery` (the project's progressive delivery: policies, waves, the position, analysis, status,
history and undo). No I/O, no cluster, no clock.
"""
