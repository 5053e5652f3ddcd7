"""The Argo CD config management plugin: its contract (parameters, environment, refusals) as pure
functions, and the sidecar's I/O around it."""
