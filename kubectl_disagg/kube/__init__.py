"""The API server: the client (`client/`: kubeconfig and credentials, the HTTP transport, REST
requests, API errors, behind one small face), the session a cluster command opens and its reads,
the executor that carries out a pass's writes, and the per-set Lease."""
