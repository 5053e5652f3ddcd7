"""Rollouts over either store (the cluster's, git's): passes over an executor (plan, check, run,
drive), write scheduling, `rollout step` over sets (Events recorded, its exit code; through git,
the next state from the committed one), `rollout status` and its -w loop, the live plan, Events
for a pass, and handing a set to the upstream controller and back."""
