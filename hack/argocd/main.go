// Command argocd-harness does what Argo CD v3.5 does with a config management plugin and a
// health check, for the project's tests (tests/oracles/argocd_harness.py). Every function names the
// Argo CD file it follows. Usage:
//
//	argocd-harness health [--open-libs] SCRIPT.lua OBJECT.yaml
//	    Run a health.lua on one object in Argo CD's Lua VM, as argocd-cm's
//	    resource.customizations.health.<group>_<Kind> runs it (useOpenLibs false unless
//	    --open-libs). Prints {"status": ..., "message": ...}; a Lua error exits 1 with the
//	    error on stderr, as Argo CD would report it.
//	argocd-harness resource-health --argocd-cm CM.yaml [--built-in DIR] OBJECT.yaml
//	    The health Argo CD gives one live object: argocd-cm's health customizations, else
//	    Argo CD's built-in scripts (DIR: a resource_customizations tree), else its built-in
//	    Go check (Service); prints {"status", "message"}, or null for no health.
//	argocd-harness health-tests DIR
//	    Argo CD's own health test runner over DIR (a resource_customizations tree): one JSON
//	    line per case of every health_test.yaml with what was expected and what ran.
//	argocd-harness plugin-config DIR
//	    Read DIR/plugin.yaml as the cmp-server reads it; print it as JSON, or exit 1.
//	argocd-harness manifests REQUEST.json
//	    One repo-server manifest generation for an Application (see ManifestsRequest):
//	    source type, the plugin's variables, the objects Argo CD would apply, or the error
//	    Argo CD would show. Exit 0 either way; 2 only when the harness is misused.
//	argocd-harness sync-targets < REQUEST.json
//	    The objects a sync with RespectIgnoreDifferences=true applies (see
//	    SyncTargetsRequest): {"targets": [obj|null, ...]}, one per pair; an error Argo CD's
//	    normalization would fail the sync with exits 1 with it on stderr.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

func usage() {
	fmt.Fprintln(os.Stderr, "usage: argocd-harness health [--open-libs] SCRIPT OBJECT | resource-health --argocd-cm CM [--built-in DIR] OBJECT | health-tests DIR | plugin-config DIR | manifests REQUEST.json | sync-targets < REQUEST.json")
	os.Exit(2)
}

func main() {
	if len(os.Args) == 2 && os.Args[1] == "sync-targets" {
		var request SyncTargetsRequest
		decoder := json.NewDecoder(os.Stdin)
		decoder.DisallowUnknownFields()
		if err := decoder.Decode(&request); err != nil {
			fmt.Fprintln(os.Stderr, "sync-targets request:", err)
			os.Exit(2)
		}
		targets, err := syncTargets(&request)
		if err != nil {
			fatal(err)
		}
		_ = json.NewEncoder(os.Stdout).Encode(map[string]any{"targets": targets})
		return
	}
	if len(os.Args) < 3 {
		usage()
	}
	out := json.NewEncoder(os.Stdout)
	switch args := os.Args[2:]; os.Args[1] {
	case "health":
		openLibs := false
		if args[0] == "--open-libs" {
			openLibs, args = true, args[1:]
		}
		if len(args) != 2 {
			usage()
		}
		script, err := os.ReadFile(args[0])
		if err != nil {
			fatal(err)
		}
		obj, err := readObject(args[1])
		if err != nil {
			fatal(err)
		}
		status, err := executeHealthLua(obj, string(script), openLibs)
		if err != nil {
			fatal(err)
		}
		_ = out.Encode(map[string]string{"status": status.Status, "message": status.Message})
	case "resource-health":
		configMap, builtIn := "", ""
		for len(args) > 2 && strings.HasPrefix(args[0], "--") {
			switch args[0] {
			case "--argocd-cm":
				configMap = args[1]
			case "--built-in":
				builtIn = args[1]
			default:
				usage()
			}
			args = args[2:]
		}
		if len(args) != 1 || configMap == "" {
			usage()
		}
		overrides, err := readHealthOverrides(configMap)
		if err != nil {
			fatal(err)
		}
		obj, err := readObject(args[0])
		if err != nil {
			fatal(err)
		}
		status, err := resourceHealth(obj, overrides, builtIn)
		if err != nil {
			fatal(err)
		}
		_ = out.Encode(status)
	case "health-tests":
		cases, err := runHealthTests(args[0])
		if err != nil {
			fatal(err)
		}
		for _, c := range cases {
			_ = out.Encode(c)
		}
	case "plugin-config":
		config, err := readPluginConfig(args[0])
		if err != nil {
			fatal(err)
		}
		_ = out.Encode(config)
	case "manifests":
		var request ManifestsRequest
		if err := readJSON(args[0], &request); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		_ = out.Encode(generateManifests(&request))
	default:
		usage()
	}
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, err)
	os.Exit(1)
}
