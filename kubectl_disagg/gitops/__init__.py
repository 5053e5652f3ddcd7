"""Git-driven rollouts: the RolloutState document, rendering a set as far as its state has rolled it,
the next state as one reviewed commit, the state file beside the set, and a run of `rollout step
--gitops` over sets (its exit codes)."""
