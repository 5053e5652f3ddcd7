"""The DisaggregatedSet API as written and checked: the model and its defaults, the schema and
the API server's rules, validation, names, the revision, rollout configuration per role. Pure;
the lowest of core's packages.
"""
