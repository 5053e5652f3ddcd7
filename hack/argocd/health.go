package main

// Health checks as Argo CD finds, runs and tests them: util/lua/lua.go (GetHealthScript,
// GetConfigMapKey, getWildcardBuiltInHealthOverrideLua, ResourceHealthOverrides),
// util/lua/health_test.go (TestLuaHealthScript, the runner of
// resource_customizations/**/health_test.yaml), util/settings/settings.go (argocd-cm keys) and
// gitops-engine/pkg/health (GetResourceHealth, the built-in Service check).

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
	"sigs.k8s.io/yaml"
)

// readObject follows getObj (util/lua/health_test.go): sigs.k8s.io/yaml into a map.
func readObject(path string) (map[string]any, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	obj := map[string]any{}
	if err := yaml.Unmarshal(data, &obj); err != nil {
		return nil, err
	}
	return obj, nil
}

// configMapKey follows GetConfigMapKey: "<group>/<Kind>", or "<Kind>" for the core group.
func configMapKey(obj map[string]any) string {
	apiVersion, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	group := ""
	if slash := strings.LastIndex(apiVersion, "/"); slash >= 0 {
		group = apiVersion[:slash]
	}
	if group == "" {
		return kind
	}
	return group + "/" + kind
}

// builtInHealthScript follows GetHealthScript for built-in scripts (no argocd-cm override):
// `<root>/<key>/health.lua`, else the first wildcard directory (sorted; "_" read as "*",
// matched with doublestar) holding a health.lua; "" when none.
func builtInHealthScript(root string, obj map[string]any) (string, error) {
	key := configMapKey(obj)
	data, err := os.ReadFile(filepath.Join(root, key, "health.lua"))
	if err == nil {
		return string(data), nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	var wildcards []string
	err = filepath.WalkDir(root, func(path string, entry fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if entry.Name() == "health.lua" && strings.Contains(filepath.Dir(rel), "_") {
			wildcards = append(wildcards, filepath.Dir(rel))
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	sort.Strings(wildcards)
	for _, dir := range wildcards {
		if doublestar.PathMatchUnvalidated(strings.ReplaceAll(dir, "_", "*"), key) {
			data, err := os.ReadFile(filepath.Join(root, dir, "health.lua"))
			return string(data), err
		}
	}
	return "", nil
}

type healthTestFile struct {
	Tests []struct {
		InputPath    string       `json:"inputPath"`
		HealthStatus HealthStatus `json:"healthStatus"`
	} `json:"tests"`
}

type healthCase struct {
	Name     string        `json:"name"`
	Expected HealthStatus  `json:"expected"`
	Got      *HealthStatus `json:"got,omitempty"`
	Error    string        `json:"error,omitempty"`
}

// runHealthTests follows TestLuaHealthScript: for every directory under root holding a
// health.lua, every case of its health_test.yaml, the script found for the object as Argo
// CD finds it, run with the standard libraries open (as the test and built-in scripts do).
func runHealthTests(root string) ([]healthCase, error) {
	var cases []healthCase
	err := filepath.WalkDir(root, func(path string, entry fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if entry.Name() != "health.lua" {
			return nil
		}
		dir := filepath.Dir(path)
		data, err := os.ReadFile(filepath.Join(dir, "health_test.yaml"))
		if err != nil {
			return err
		}
		var file healthTestFile
		if err := yaml.Unmarshal(data, &file); err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, dir)
		for _, test := range file.Tests {
			result := healthCase{Name: filepath.Join(rel, test.InputPath), Expected: test.HealthStatus}
			got, err := healthOfFile(root, filepath.Join(dir, test.InputPath))
			if err != nil {
				result.Error = err.Error()
			} else {
				result.Got = got
			}
			cases = append(cases, result)
		}
		return nil
	})
	return cases, err
}

func healthOfFile(root, path string) (*HealthStatus, error) {
	obj, err := readObject(path)
	if err != nil {
		return nil, err
	}
	script, err := builtInHealthScript(root, obj)
	if err != nil {
		return nil, err
	}
	return executeHealthLua(obj, script, true)
}

// --- the health of any resource (gitops-engine/pkg/health/health.go, GetResourceHealth) -------

// healthOverride is v1alpha1.ResourceOverride's health part.
type healthOverride struct {
	HealthLua   string
	UseOpenLibs bool
}

// readHealthOverrides follows SettingsManager.appendResourceOverridesFromSplitKeys and
// convertToOverrideKey (util/settings/settings.go): argocd-cm keys
// resource.customizations.<health|useOpenLibs>.<group_Kind or Kind>; other types ignored.
func readHealthOverrides(configMapPath string) (map[string]healthOverride, error) {
	configMap, err := readObject(configMapPath)
	if err != nil {
		return nil, err
	}
	overrides := map[string]healthOverride{}
	data, _ := configMap["data"].(map[string]any)
	for key, value := range data {
		text, _ := value.(string)
		if !strings.HasPrefix(key, "resource.customizations") {
			continue
		}
		parts := strings.SplitN(key, ".", 4)
		if len(parts) < 4 {
			continue
		}
		groupKind := strings.Split(parts[3], "_")
		var overrideKey string
		switch {
		case len(groupKind) == 2:
			overrideKey = groupKind[0] + "/" + groupKind[1]
		case len(groupKind) == 1 && parts[3] != "":
			overrideKey = parts[3]
		default:
			return nil, fmt.Errorf("group kind should be in format `resource.customizations.<type>.<group_kind>` or resource.customizations.<type>.<kind>`, got group kind: '%s'", parts[3])
		}
		if overrideKey == "all" {
			overrideKey = "*/*"
		}
		if strings.ContainsAny(overrideKey, "*?[") {
			return nil, fmt.Errorf("harness: wildcard argocd-cm keys are not mirrored (%s)", key)
		}
		override := overrides[overrideKey]
		switch parts[2] {
		case "health":
			override.HealthLua = text
		case "useOpenLibs":
			open, err := strconv.ParseBool(text)
			if err != nil {
				return nil, err
			}
			override.UseOpenLibs = open
		}
		overrides[overrideKey] = override
	}
	return overrides, nil
}

// resourceHealth follows GetResourceHealth: an object being deleted (not held by a hook
// finalizer) is Progressing; then the override (ResourceHealthOverrides.GetResourceHealth:
// argocd-cm's script for the group/Kind, else Argo CD's built-in script under builtIn, run
// with every library open); then the built-in Go check of the kind. nil: no health.
func resourceHealth(obj map[string]any, overrides map[string]healthOverride, builtIn string) (*HealthStatus, error) {
	metadata, _ := obj["metadata"].(map[string]any)
	if metadata["deletionTimestamp"] != nil && !hasHookFinalizer(metadata) {
		return &HealthStatus{Status: "Progressing", Message: "Pending deletion"}, nil
	}
	key := configMapKey(obj)
	script, openLibs := "", false
	if override, ok := overrides[key]; ok && override.HealthLua != "" {
		script, openLibs = override.HealthLua, override.UseOpenLibs
	} else if builtIn != "" {
		found, err := builtInHealthScript(builtIn, obj)
		if err != nil {
			return nil, err
		}
		script, openLibs = found, true
	}
	if script != "" {
		status, err := executeHealthLua(obj, script, openLibs)
		if err != nil {
			return &HealthStatus{Status: "Unknown", Message: err.Error()}, nil
		}
		return status, nil
	}
	return builtInGoHealth(obj, key)
}

func hasHookFinalizer(metadata map[string]any) bool {
	finalizers, _ := metadata["finalizers"].([]any)
	for _, finalizer := range finalizers {
		if finalizer == "argocd.argoproj.io/hook-finalizer" {
			return true
		}
	}
	return false
}

// builtInGoHealth follows GetHealthCheckFunc for the kinds the plugin writes: a core/v1
// Service (health_service.go: Healthy, but a LoadBalancer is Progressing until it has an
// ingress). The other kinds Argo CD checks in Go are not mirrored: an error says so.
func builtInGoHealth(obj map[string]any, key string) (*HealthStatus, error) {
	switch key {
	case "Service":
		spec, _ := obj["spec"].(map[string]any)
		if spec["type"] == "LoadBalancer" {
			status, _ := obj["status"].(map[string]any)
			balancer, _ := status["loadBalancer"].(map[string]any)
			if ingress, _ := balancer["ingress"].([]any); len(ingress) == 0 {
				return &HealthStatus{Status: "Progressing"}, nil
			}
		}
		return &HealthStatus{Status: "Healthy"}, nil
	case "apps/Deployment", "apps/StatefulSet", "apps/ReplicaSet", "apps/DaemonSet", "extensions/Ingress",
		"networking.k8s.io/Ingress", "argoproj.io/Workflow", "apiregistration.k8s.io/APIService",
		"PersistentVolumeClaim", "Pod", "batch/Job", "autoscaling/HorizontalPodAutoscaler":
		return nil, fmt.Errorf("harness: Argo CD's built-in health check for %s is not mirrored", key)
	}
	return nil, nil
}
