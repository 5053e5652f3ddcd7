"""Test and demo support, never imported by the plugin itself.

- :mod:`kubectl_disagg.testing.controlplane`: a local kube-apiserver + etcd
  with the upstream CRDs (``python -m kubectl_disagg.testing.controlplane``).
- :mod:`kubectl_disagg.testing.lws_simulator`: plays the LWS controller's
  status updates.

Submodules are not imported here, so ``python -m`` can run them cleanly.
"""
