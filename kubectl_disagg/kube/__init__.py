"""The API server: kubeconfig and credentials, the HTTP transport, REST requests, API errors,
the per-set Lease, server-side dry runs, and the session a cluster command opens."""
