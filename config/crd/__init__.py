"""The project's CRDs, shipped as the package kubectl_disagg.crd_yaml (`kubectl disagg crds`)."""
