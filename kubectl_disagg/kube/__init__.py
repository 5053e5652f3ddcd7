"""The API server: kubeconfig and credentials, the HTTP transport, REST requests, API errors,
the per-set Lease, the one wait (a deadline and a watch reaction loop), server-side dry runs,
and the session a cluster command opens."""
