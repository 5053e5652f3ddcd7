"""Test and demo support, never imported by the plugin itself.

- :mod:`testenv.controlplane`: a local kube-apiserver + etcd
  with the project's CRDs (``python -m testenv.controlplane``).
- :mod:`testenv.lws_simulator`: plays the LWS controller's
  status updates.

Submodules are not imported here, so ``python -m`` can run them cleanly.
"""
