"""Rollouts against a cluster: passes over an executor (plan, check, run, drive), write scheduling,
Events for a pass, and handing a set to the upstream controller and back."""
