"""The exit codes a command's --help lists, kept apart from its flags (so commands stay short)."""

STEP_EXIT_CODES = """\b
Exit codes:
  0  done: every pass ran (with --until-complete: every set is complete;
     with --dry-run=server: the API server would accept every write)
  1  error: invalid input, an API or network error, a write the server refused
     (409: something changed since it was read; run the step again; with
     --dry-run=server: every write it would refuse is listed)
  2  usage: invalid flags
  3  refused (that pass changed nothing): the live objects cannot be explained,
     an object not managed by kubectl-disagg is in the way, another stepper
     holds (or took over) the set's lease, or the DisaggregatedSet controller
     runs the set (its objects are owned by it, or the stored set's status
     shows it reconciles it: see --ignore-controller)
  4  timeout: --until-complete ran out of time (the rollout stays where it is),
     or --wait-for-lease gave up before the lease was free
  7  held: the set's RolloutPolicy holds the rollout (at a gate after a wave,
     paused, or aborted and rolled back) and the pass changed nothing; the
     message says what passes it (rollout promote, resume, a soak's end)

\b
Exit codes with --gitops (docs/gitops.md):
  0  advanced: the next state was written beside the set; commit it
  1  error: invalid input or state file, an API or network error
  2  usage: invalid flags
  3  refused: the live objects cannot be explained (nothing written)
  4  timeout: --wait ran out of time (nothing written)
  5  waiting: the cluster does not show the committed state yet (not
     synced or pruned), or the new revision is not ready (nothing written)
  6  complete: the rollout is done (nothing written)
  7  held: the set's RolloutPolicy holds the rollout (a gate, paused, aborted
     and rolled back); nothing written; the message says what passes it"""
