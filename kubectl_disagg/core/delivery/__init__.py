"""Progressive delivery, the project's own (design §9 and design §10): the RolloutPolicy, waves, the
position, analysis and PromQL, the fleet, status (with the rollout's part), history and undo,
and loading sets with their policies. Pure; above `core.controller`.
"""
