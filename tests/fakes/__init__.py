"""The in-memory stand-ins for a cluster, Argo CD and a session that unit tests drive."""
