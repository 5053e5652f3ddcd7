"""What the upstream controller computes, on the client: rendering, the planner, the snapshot of
live objects, the reconcile decision, provenance, the stable revision. Pure; above `core.api`.
"""
