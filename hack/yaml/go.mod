// The YAML oracle (tests/unit/manifests/test_yaml_oracle.py): reads YAML streams exactly as
// kubectl reads a file, through k8s.io/apimachinery's YAMLOrJSONDecoder and sigs.k8s.io/yaml
// over go.yaml.in/yaml/v2 (v2.4.3, the version Kubernetes 1.36 builds with). Built from the Go
// module proxy by hack/build-yaml-oracle.sh.
module kubectl-disagg/hack/yaml

go 1.26.0

require k8s.io/apimachinery v0.36.3

require (
	go.yaml.in/yaml/v2 v2.4.3 // indirect
	sigs.k8s.io/json v0.0.0-20250730193827-2d320260d730 // indirect
	sigs.k8s.io/yaml v1.6.0 // indirect
)
