"""The git store, below the rollout: the RolloutState document, the rules a committed state keeps,
rendering a set as far as its state has rolled it, "synced?", the state file beside the set and
its one write → commit transaction, and git's history: the parts the rollout's git store
(rollout/git_run.py `GitStore`) is made of."""
