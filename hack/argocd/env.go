package main

// The repo-server's side of a config management plugin: the Application's source with the
// `.argocd-source*.yaml` overrides merged in, the variables it sends, and the plugin
// parameters as variables. Follows reposerver/repository/repository.go (newEnv,
// mergeSourceParameters, getPluginEnvs, getPluginParamEnvs, parseKubeVersion) and
// pkg/apis/application/v1alpha1/types.go (Env.Environ, Env.Envsubst, EnvEntry,
// ApplicationSourcePluginParameter.MarshalJSON, ApplicationSourcePluginParameters.Environ,
// ApplicationSource.ExplicitType) of Argo CD v3.5.1.

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	jsonpatch "github.com/evanphx/json-patch"
	"k8s.io/apimachinery/pkg/util/version"
	"sigs.k8s.io/yaml"
)

// EnvEntry and Env are v1alpha1.EnvEntry and v1alpha1.Env.
type EnvEntry struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

type Env []*EnvEntry

// Environ follows Env.Environ: "NAME=value" for every entry that is not entirely empty.
func (e Env) Environ() []string {
	var out []string
	for _, entry := range e {
		if entry != nil && (entry.Name != "" || entry.Value != "") {
			out = append(out, entry.Name+"="+entry.Value)
		}
	}
	return out
}

// Envsubst follows Env.Envsubst: os.Expand over the entries, "$$" standing for "$",
// unknown names empty.
func (e Env) Envsubst(s string) string {
	values := map[string]string{}
	for _, entry := range e {
		values[entry.Name] = entry.Value
	}
	return os.Expand(s, func(name string) string {
		if name == "$" {
			return "$"
		}
		return values[name]
	})
}

// PluginParameter is v1alpha1.ApplicationSourcePluginParameter, with "set but empty" kept for
// map and array (Argo CD's OptionalMap and OptionalArray pointers).
type PluginParameter struct {
	Name   string             `json:"name,omitempty"`
	String *string            `json:"string,omitempty"`
	Map    *map[string]string `json:"map,omitempty"`
	Array  *[]string          `json:"array,omitempty"`
}

// MarshalJSON follows ApplicationSourcePluginParameter.MarshalJSON: name always, string when
// set, a set map or array as {} or [] even when empty.
func (p PluginParameter) MarshalJSON() ([]byte, error) {
	out := map[string]any{"name": p.Name}
	if p.String != nil {
		out["string"] = p.String
	}
	if p.Map != nil {
		if *p.Map == nil {
			out["map"] = map[string]string{}
		} else {
			out["map"] = *p.Map
		}
	}
	if p.Array != nil {
		if *p.Array == nil {
			out["array"] = []string{}
		} else {
			out["array"] = *p.Array
		}
	}
	return json.Marshal(out)
}

type PluginParameters []PluginParameter

// Plugin is v1alpha1.ApplicationSourcePlugin.
type Plugin struct {
	Name       string           `json:"name,omitempty"`
	Env        Env              `json:"env,omitempty"`
	Parameters PluginParameters `json:"parameters,omitempty"`
}

// Source is the part of v1alpha1.ApplicationSource the plugin path reads; the other tool
// blocks only matter to ExplicitType, so they stay raw.
type Source struct {
	RepoURL        string          `json:"repoURL"`
	Path           string          `json:"path,omitempty"`
	TargetRevision string          `json:"targetRevision,omitempty"`
	Chart          string          `json:"chart,omitempty"`
	Helm           json.RawMessage `json:"helm,omitempty"`
	Kustomize      json.RawMessage `json:"kustomize,omitempty"`
	Directory      json.RawMessage `json:"directory,omitempty"`
	Plugin         *Plugin         `json:"plugin,omitempty"`
}

// escapedParameterName follows escaped (types.go): upper case, anything else than A-Z, 0-9
// and "_" replaced by "_".
func escapedParameterName(name string) string {
	return regexp.MustCompile("[^A-Z0-9_]").ReplaceAllString(strings.ToUpper(name), "_")
}

// Environ follows ApplicationSourcePluginParameters.Environ: ARGOCD_APP_PARAMETERS is the
// JSON of the list, "null" when the Application sets no parameters; then PARAM_<NAME>,
// PARAM_<NAME>_<KEY> and PARAM_<NAME>_<index>.
func (p PluginParameters) Environ() ([]string, error) {
	encoded, err := json.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("failed to marshal plugin parameters: %w", err)
	}
	env := []string{"ARGOCD_APP_PARAMETERS=" + string(encoded)}
	for _, parameter := range p {
		base := "PARAM_" + escapedParameterName(parameter.Name)
		if parameter.String != nil {
			env = append(env, base+"="+*parameter.String)
		}
		if parameter.Map != nil {
			for key, value := range *parameter.Map {
				env = append(env, fmt.Sprintf("%s_%s=%s", base, escapedParameterName(key), value))
			}
		}
		if parameter.Array != nil {
			for index, value := range *parameter.Array {
				env = append(env, fmt.Sprintf("%s_%d=%s", base, index, value))
			}
		}
	}
	return env, nil
}

// Request is the part of reposerver's apiclient.ManifestRequest the plugin path reads.
type Request struct {
	AppName     string   `json:"appName"`
	Namespace   string   `json:"namespace"`
	ProjectName string   `json:"projectName"`
	RepoURL     string   `json:"repoURL"`
	Revision    string   `json:"revision"`
	KubeVersion string   `json:"kubeVersion"`
	APIVersions []string `json:"apiVersions"`
	Source      Source   `json:"source"`
}

// newEnv follows newEnv: the ARGOCD_APP_* variables, revisions shortened to 7 and 8.
func newEnv(q *Request) Env {
	short := func(n int) string {
		if len(q.Revision) > n {
			return q.Revision[:n]
		}
		return q.Revision
	}
	return Env{
		{"ARGOCD_APP_NAME", q.AppName},
		{"ARGOCD_APP_NAMESPACE", q.Namespace},
		{"ARGOCD_APP_PROJECT_NAME", q.ProjectName},
		{"ARGOCD_APP_REVISION", q.Revision},
		{"ARGOCD_APP_REVISION_SHORT", short(7)},
		{"ARGOCD_APP_REVISION_SHORT_8", short(8)},
		{"ARGOCD_APP_SOURCE_REPO_URL", q.RepoURL},
		{"ARGOCD_APP_SOURCE_PATH", q.Source.Path},
		{"ARGOCD_APP_SOURCE_TARGET_REVISION", q.Source.TargetRevision},
	}
}

// parseKubeVersion follows parseKubeVersion: "" stays "" (the source hydrator's path sends
// none), anything else through k8s.io/apimachinery's ParseGeneric.
func parseKubeVersion(text string) (string, error) {
	if text == "" {
		return "", nil
	}
	parsed, err := version.ParseGeneric(text)
	if err != nil {
		return "", err
	}
	return parsed.String(), nil
}

// pluginEnvs follows getPluginEnvs and getPluginParamEnvs: the app variables, KUBE_VERSION,
// KUBE_API_VERSIONS (comma-joined), and when the Application has a plugin block, its env as
// ARGOCD_ENV_<name> (values expanded against the variables so far) and its parameters.
func pluginEnvs(env Env, q *Request) ([]string, error) {
	kubeVersion, err := parseKubeVersion(q.KubeVersion)
	if err != nil {
		return nil, fmt.Errorf("could not parse kubernetes version %s: %w", q.KubeVersion, err)
	}
	vars := append(env.Environ(), "KUBE_VERSION="+kubeVersion, "KUBE_API_VERSIONS="+strings.Join(q.APIVersions, ","))
	parsed := make(Env, len(vars))
	for i, entry := range vars {
		name, value, ok := strings.Cut(entry, "=")
		if !ok {
			return nil, errors.New("failed to parse env vars")
		}
		parsed[i] = &EnvEntry{name, value}
	}
	plugin := q.Source.Plugin
	if plugin == nil {
		return vars, nil
	}
	for _, entry := range plugin.Env {
		vars = append(vars, fmt.Sprintf("ARGOCD_ENV_%s=%s", entry.Name, parsed.Envsubst(entry.Value)))
	}
	params, err := plugin.Parameters.Environ()
	if err != nil {
		return nil, fmt.Errorf("failed to generate env vars from parameters: %w", err)
	}
	return append(vars, params...), nil
}

// mergeSourceParameters follows mergeSourceParameters: `.argocd-source.yaml`, then
// `.argocd-source-<app>.yaml`, in the application directory, each a JSON merge patch over
// the source; directories skipped; repoURL, path, targetRevision and chart kept.
func mergeSourceParameters(source *Source, appPath, appName string) error {
	files := []string{filepath.Join(appPath, ".argocd-source.yaml")}
	if appName != "" {
		files = append(files, filepath.Join(appPath, fmt.Sprintf(".argocd-source-%s.yaml", appName)))
	}
	merged := *source
	for _, file := range files {
		info, err := os.Stat(file)
		switch {
		case os.IsNotExist(err):
			continue
		case info != nil && info.IsDir():
			continue
		case err != nil:
			return err
		}
		current, err := json.Marshal(merged)
		if err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		patch, err := os.ReadFile(file)
		if err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		if patch, err = yaml.YAMLToJSON(patch); err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		if current, err = jsonpatch.MergePatch(current, patch); err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		// Argo CD decodes into the source merged so far (a key the patch removes keeps its value).
		if err := json.Unmarshal(current, &merged); err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
	}
	merged.Chart, merged.Path, merged.RepoURL, merged.TargetRevision = source.Chart, source.Path, source.RepoURL, source.TargetRevision
	*source = merged
	return nil
}

// explicitType follows ApplicationSource.ExplicitType: the one tool block set, "" for none.
func explicitType(source *Source) (string, error) {
	var types []string
	if source.Kustomize != nil {
		types = append(types, "Kustomize")
	}
	if source.Helm != nil {
		types = append(types, "Helm")
	}
	if source.Directory != nil {
		types = append(types, "Directory")
	}
	if source.Plugin != nil {
		types = append(types, "Plugin")
	}
	switch len(types) {
	case 0:
		return "", nil
	case 1:
		return types[0], nil
	}
	return "", fmt.Errorf("multiple application sources defined: %s", strings.Join(types, ","))
}
