"""Runners of the real systems (Argo CD's code, kubectl's YAML reading, promtool, the CRD schemas, the upstream
controllers) that tests hold the project to."""
