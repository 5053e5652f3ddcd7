package main

// Health checks as Argo CD finds and tests them: util/lua/lua.go (GetHealthScript,
// GetConfigMapKey, getWildcardBuiltInHealthOverrideLua) and util/lua/health_test.go
// (TestLuaHealthScript, the runner of resource_customizations/**/health_test.yaml).

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
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
