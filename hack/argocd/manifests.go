package main

// What the repo-server does with a plugin's output and with an Application's source, in
// Argo CD v3.5.1: gitops-engine/pkg/utils/kube/kube.go (SplitYAMLToString, SplitYAML),
// reposerver/repository/repository.go (GenerateManifests: List flattening, isNullList,
// resource tracking; GetAppSourceType; runConfigManagementPluginSidecars),
// util/app/discovery/discovery.go (Discover, AppType), util/argo/resource_tracking.go
// (SetAppInstance with annotation tracking, Argo CD 3's default).

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	kubeyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// splitYAMLToString follows SplitYAMLToString: apimachinery's YAML-or-JSON decoder (4096
// byte buffer) over the stream; each document trimmed; empty and "null" documents dropped.
func splitYAMLToString(data []byte) ([]string, error) {
	decoder := kubeyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var documents []string
	for {
		raw := runtime.RawExtension{}
		if err := decoder.Decode(&raw); err != nil {
			if errors.Is(err, io.EOF) {
				return documents, nil
			}
			return documents, fmt.Errorf("failed to unmarshal manifest: %w", err)
		}
		raw.Raw = bytes.TrimSpace(raw.Raw)
		if len(raw.Raw) == 0 || bytes.Equal(raw.Raw, []byte("null")) {
			continue
		}
		documents = append(documents, string(raw.Raw))
	}
}

// splitYAML follows SplitYAML: every document into an unstructured object.
func splitYAML(data []byte) ([]*unstructured.Unstructured, error) {
	documents, err := splitYAMLToString(data)
	if err != nil {
		return nil, err
	}
	var objects []*unstructured.Unstructured
	for _, document := range documents {
		object := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(document), object); err != nil {
			return objects, fmt.Errorf("failed to unmarshal manifest: %w", err)
		}
		objects = append(objects, object)
	}
	return objects, nil
}

// isNullList follows isNullList: `items: null` with neither spec nor status.
func isNullList(object *unstructured.Unstructured) bool {
	if _, ok := object.Object["spec"]; ok {
		return false
	}
	if _, ok := object.Object["status"]; ok {
		return false
	}
	items, ok := object.Object["items"]
	return ok && items == nil
}

// flatten follows the loop of GenerateManifests: a List becomes its items, a null list
// nothing; each target gets the tracking annotation (CRDs excepted).
func flatten(objects []*unstructured.Unstructured, appName, namespace string) ([]map[string]any, error) {
	var out []map[string]any
	for _, object := range objects {
		if object == nil {
			continue
		}
		var targets []*unstructured.Unstructured
		switch {
		case object.IsList():
			err := object.EachListItem(func(item runtime.Object) error {
				if u, ok := item.(*unstructured.Unstructured); ok {
					targets = append(targets, u)
					return nil
				}
				return errors.New("resource list item has unexpected type")
			})
			if err != nil {
				return nil, err
			}
		case isNullList(object):
		default:
			targets = []*unstructured.Unstructured{object}
		}
		for _, target := range targets {
			if appName != "" && !isCRD(target) {
				track(target, appName, namespace)
			}
			out = append(out, target.Object)
		}
	}
	return out, nil
}

func isCRD(object *unstructured.Unstructured) bool {
	gvk := object.GroupVersionKind()
	return gvk.Group == "apiextensions.k8s.io" && gvk.Kind == "CustomResourceDefinition"
}

// track follows SetAppInstance with annotation tracking: the installation-id annotation
// removed (no installation ID), argocd.argoproj.io/tracking-id set to
// "<app>:<group>/<kind>:<namespace, else the destination>/<name>".
func track(object *unstructured.Unstructured, appName, namespace string) {
	objectNamespace := object.GetNamespace()
	if objectNamespace == "" {
		objectNamespace = namespace
	}
	gvk := object.GroupVersionKind()
	annotations := object.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	delete(annotations, "argocd.argoproj.io/installation-id")
	annotations["argocd.argoproj.io/tracking-id"] = fmt.Sprintf("%s:%s/%s:%s/%s", appName, gvk.Group, gvk.Kind, objectNamespace, object.GetName())
	object.SetAnnotations(annotations)
}

// ManifestsRequest is one repo-server GenerateManifest call for an Application whose source
// is in repoRoot, with one sidecar running the plugin.yaml of pluginDir.
type ManifestsRequest struct {
	Request        Request  `json:"request"`
	RepoRoot       string   `json:"repoRoot"`
	PluginDir      string   `json:"pluginDir"`
	SidecarEnv     []string `json:"sidecarEnv"`
	WorkDir        string   `json:"workDir"`
	TimeoutSeconds float64  `json:"timeoutSeconds"`
}

type ManifestsResult struct {
	SourceType string           `json:"sourceType,omitempty"`
	Env        []string         `json:"env,omitempty"`
	Manifests  []map[string]any `json:"manifests"`
	Error      string           `json:"error,omitempty"`
}

// appType follows Discover and AppType: a plugin that discovery matches, else Helm or
// Kustomize by the files at the application root, else Directory.
func appType(ctx context.Context, server *CmpServer, repoRoot, appPath string, env []string) (string, error) {
	if server.detectPlugin(ctx, repoRoot, appPath, "", env) == nil {
		return "Plugin", nil
	}
	found := "Directory"
	entries, err := os.ReadDir(appPath)
	if err != nil {
		return "", err
	}
	for _, entry := range entries {
		name := entry.Name()
		if entry.IsDir() {
			continue
		}
		if strings.HasSuffix(name, "Chart.yaml") {
			found = "Helm"
		}
		if name == "kustomization.yaml" || name == "kustomization.yml" || name == "Kustomization" {
			found = "Kustomize"
		}
	}
	return found, nil
}

// generateManifests follows GenerateManifests for the plugin path: the source type (the
// overrides merged, the explicit type, else discovery without parameters); for a plugin,
// runConfigManagementPluginSidecars (the plugin's variables, detection with them, generate,
// SplitYAML of every document), then List flattening and tracking. Other source types are
// named, not rendered.
func generateManifests(m *ManifestsRequest) *ManifestsResult {
	timeout := time.Duration(m.TimeoutSeconds * float64(time.Second))
	if timeout <= 0 {
		timeout = 60 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	// The cmp-server stops its work cmpTimeoutBuffer (100 ms) before the request's deadline.
	serverCtx, serverCancel := context.WithTimeout(ctx, timeout-100*time.Millisecond)
	defer serverCancel()

	config, err := readPluginConfig(m.PluginDir)
	if err != nil {
		return &ManifestsResult{Error: "cmp-server: " + err.Error()}
	}
	// The cmp-server's process environment is the sidecar container's: commands are looked
	// up on its PATH, and runCommand passes os.Environ() on.
	os.Clearenv()
	for _, entry := range m.SidecarEnv {
		if name, value, ok := strings.Cut(entry, "="); ok {
			os.Setenv(name, value)
		}
	}
	workDir, err := filepath.Abs(m.WorkDir)
	if err != nil {
		return &ManifestsResult{Error: "cmp-server: " + err.Error()}
	}
	server := &CmpServer{Config: config, Environ: os.Environ(), WorkDir: workDir}
	q := &m.Request
	if file, err := outOfBoundsSymlink(m.RepoRoot, ".git"); err != nil {
		return &ManifestsResult{Error: err.Error()}
	} else if file != "" {
		return &ManifestsResult{Error: "repository contains out-of-bounds symlinks. file: " + file}
	}
	appPath := filepath.Join(m.RepoRoot, q.Source.Path)
	env := newEnv(q)

	if err := mergeSourceParameters(&q.Source, appPath, q.AppName); err != nil {
		return &ManifestsResult{Error: fmt.Sprintf("error getting app source type: error while parsing source parameters: %v", err)}
	}
	sourceType, err := explicitType(&q.Source)
	if err != nil {
		return &ManifestsResult{Error: "error getting app source type: " + err.Error()}
	}
	if sourceType == "" {
		if sourceType, err = appType(serverCtx, server, m.RepoRoot, appPath, env.Environ()); err != nil {
			return &ManifestsResult{Error: "error getting app source type: error getting app source type: " + err.Error()}
		}
	}
	result := &ManifestsResult{SourceType: sourceType}
	if sourceType != "Plugin" {
		return result
	}
	pluginName := ""
	if q.Source.Plugin != nil {
		pluginName = q.Source.Plugin.Name
	}
	fail := func(err error) *ManifestsResult {
		result.Error = fmt.Sprintf("CMP processing failed for application %q: %v", q.AppName, err)
		return result
	}
	vars, err := pluginEnvs(env, q)
	if err != nil {
		return fail(err)
	}
	result.Env = vars
	if err := server.detectPlugin(serverCtx, m.RepoRoot, appPath, pluginName, vars); err != nil {
		return fail(err)
	}
	documents, err := server.generateManifest(serverCtx, m.RepoRoot, appPath, vars)
	if err != nil {
		return fail(fmt.Errorf("error generating manifests in cmp: %w", err))
	}
	var objects []*unstructured.Unstructured
	for _, document := range documents {
		parsed, err := splitYAML([]byte(document))
		if err != nil {
			return fail(fmt.Errorf("failed to convert CMP manifests to unstructured objects: %s", err.Error()))
		}
		objects = append(objects, parsed...)
	}
	manifests, err := flatten(objects, q.AppName, q.Namespace)
	if err != nil {
		result.Error = err.Error()
		return result
	}
	result.Manifests = manifests
	return result
}

func readJSON(path string, into any) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, into)
}

// outOfBoundsSymlink follows CheckOutOfBoundsSymlinks (util/app/path/path.go), which the
// repo-server runs on every checkout unless out-of-bounds symlinks are allowed: the first
// symbolic link (relative to the root) that is absolute or whose target, walked part by
// part, leaves the root; skipped directories not entered.
func outOfBoundsSymlink(root string, skip ...string) (string, error) {
	base, err := filepath.Abs(root)
	if err != nil {
		return "", fmt.Errorf("failed to get absolute path: %w", err)
	}
	skipped := map[string]bool{}
	for _, path := range skip {
		skipped[filepath.Join(base, path)] = true
	}
	found := ""
	err = filepath.Walk(base, func(path string, info os.FileInfo, err error) error {
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return nil
			}
			return fmt.Errorf("failed to walk for symlinks in %s: %w", base, err)
		}
		if skipped[path] {
			return filepath.SkipDir
		}
		if info.Mode()&os.ModeSymlink == 0 {
			return nil
		}
		target, err := os.Readlink(path)
		if err != nil {
			return fmt.Errorf("failed to read link %s: %w", path, err)
		}
		rel, _ := filepath.Rel(base, path)
		if filepath.IsAbs(target) {
			found = rel
			return filepath.SkipAll
		}
		current := filepath.Dir(path)
		for _, part := range strings.Split(target, string(os.PathSeparator)) {
			current = filepath.Join(current, part)
			up, err := filepath.Rel(base, current)
			if err != nil {
				return fmt.Errorf("failed to get relative path for symlink target: %w", err)
			}
			if up == ".." || strings.HasPrefix(up, ".."+string(os.PathSeparator)) {
				found = rel
				return filepath.SkipAll
			}
		}
		return nil
	})
	return found, err
}
