"""Rollouts against a cluster: passes over an executor (plan, check, run, drive), write scheduling,
`rollout step` over sets (Events recorded, its exit code), `rollout status` and its -w loop, the
live plan, Events for a pass, and handing a set to the upstream controller and back."""
