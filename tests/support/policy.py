"""A RolloutPolicy and the set it governs, shared by the policy, view and command tests."""

from __future__ import annotations



SET = """\
apiVersion: disaggregatedset.x-k8s.io/v1
kind: DisaggregatedSet
metadata: {name: llama, namespace: serving}
spec:
  slices: 4
  roles:
  - name: prefill
    spec:
      replicas: 1
      leaderWorkerTemplate: {workerTemplate: {spec: {containers: [{name: c, image: "img:1"}]}}}
  - name: decode
    spec:
      replicas: 1
      leaderWorkerTemplate: {workerTemplate: {spec: {containers: [{name: c, image: "img:1"}]}}}
"""


POLICY = """\
---
apiVersion: kubectl-disagg.x-k8s.io/v1alpha1
kind: RolloutPolicy
metadata: {name: llama, namespace: serving}
spec:
  targetRef: {name: llama}
  maxSlicesInFlight: 2
  waves:
  - slices: 1
    pause: {}
  - slices: "50%"
    analysis: [ttft]
    pause: {duration: 15m}
  analysis:
    checks: [{name: ttft, role: prefill, query: 'vllm:ttft{revision="{{revision}}"}', successCondition: "< 0.5"}]
    prometheus: {address: "http://prometheus.monitoring:9090"}
  onFailure: pause
"""
