package main

// What Argo CD v3.5.1's application controller applies in a sync with the sync option
// RespectIgnoreDifferences=true: controller/sync.go (SyncAppState calling
// normalizeTargetResources; getMergePatch, applyMergePatch, restoreNonIgnoredFields),
// util/argo/diff/normalize.go (Normalize, newDiffNormalizer), util/argo/diff/diff.go
// (preDiffNormalize), util/argo/diff/ignore.go (HasIgnoreDifference, mergeIgnoreDifferences),
// util/argo/normalizers/diff_normalizer.go (the ignore normalizer: jsonPointers and
// jqPathExpressions), util/argo/normalizers/knowntypes_normalizer.go,
// util/argo/normalizers/util.go (getGroupKindForOverrideKey), util/argo/managedfields
// (managedFieldsManagers), util/argo/resource_tracking.go (Normalize) and util/kube/kube.go
// (the tracking label and annotation helpers), util/glob/glob.go (Match).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	jsonpatch "github.com/evanphx/json-patch"
	"github.com/gobwas/glob"
	"github.com/itchyny/gojq"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
)

// ResourceIgnoreDifferences is an entry of an Application's spec.ignoreDifferences
// (pkg/apis/application/v1alpha1 ResourceIgnoreDifferences).
type ResourceIgnoreDifferences struct {
	Group                 string   `json:"group,omitempty"`
	Kind                  string   `json:"kind"`
	Name                  string   `json:"name,omitempty"`
	Namespace             string   `json:"namespace,omitempty"`
	JSONPointers          []string `json:"jsonPointers,omitempty"`
	JQPathExpressions     []string `json:"jqPathExpressions,omitempty"`
	ManagedFieldsManagers []string `json:"managedFieldsManagers,omitempty"`
}

// ResourceOverride is the part of argocd-cm's resource customizations (v1alpha1
// ResourceOverride, after SettingsManager.GetResourceOverrides) a sync's diff uses.
type ResourceOverride struct {
	IgnoreDifferences struct {
		JSONPointers          []string `json:"jsonPointers,omitempty"`
		JQPathExpressions     []string `json:"jqPathExpressions,omitempty"`
		ManagedFieldsManagers []string `json:"managedFieldsManagers,omitempty"`
	} `json:"ignoreDifferences"`
	KnownTypeFields []struct {
		Field string `json:"field"`
		Type  string `json:"type"`
	} `json:"knownTypeFields,omitempty"`
}

// SyncTargetsRequest is one sync's reconciliation: the Application's ignoreDifferences, the
// resource overrides in force, the tracking method, and the (live, target) pairs Argo CD
// lined up (a nil live: the object does not exist yet).
type SyncTargetsRequest struct {
	IgnoreDifferences []ResourceIgnoreDifferences              `json:"ignoreDifferences"`
	ResourceOverrides map[string]ResourceOverride              `json:"resourceOverrides"`
	TrackingMethod    string                                   `json:"trackingMethod"`
	AppLabelKey       string                                   `json:"appLabelKey"`
	Pairs             []struct{ Live, Target json.RawMessage } `json:"pairs"`
}

// defaultJQExecutionTimeout is DefaultJQExecutionTimeout (IgnoreNormalizerOpts left zero).
const defaultJQExecutionTimeout = time.Second

// syncTargets decodes the pairs as the controller holds them (unstructured objects, whose
// JSON numbers are int64 or float64) and runs normalizeTargetResources over them.
func syncTargets(request *SyncTargetsRequest) ([]map[string]any, error) {
	var lives, targets []*unstructured.Unstructured
	for i, pair := range request.Pairs {
		live, err := decodeUnstructured(pair.Live)
		if err != nil {
			return nil, fmt.Errorf("pairs[%d].live: %w", i, err)
		}
		target, err := decodeUnstructured(pair.Target)
		if err != nil {
			return nil, fmt.Errorf("pairs[%d].target: %w", i, err)
		}
		lives, targets = append(lives, live), append(targets, target)
	}
	if request.IgnoreDifferences == nil {
		request.IgnoreDifferences = []ResourceIgnoreDifferences{}
	}
	if request.ResourceOverrides == nil {
		request.ResourceOverrides = map[string]ResourceOverride{}
	}
	patched, err := normalizeTargetResources(lives, targets, request)
	if err != nil {
		return nil, err
	}
	out := make([]map[string]any, len(patched))
	for i, obj := range patched {
		if obj != nil {
			out[i] = obj.Object
		}
	}
	return out, nil
}

func decodeUnstructured(data json.RawMessage) (*unstructured.Unstructured, error) {
	if len(data) == 0 || string(data) == "null" {
		return nil, nil
	}
	obj := &unstructured.Unstructured{}
	if _, _, err := unstructured.UnstructuredJSONScheme.Decode(data, nil, obj); err != nil {
		return nil, err
	}
	return obj, nil
}

// normalizeTargetResources follows controller/sync.go normalizeTargetResources: live and
// targets normalized independently; the patch from the normalized live to the live (live
// status excluded) applied to the normalized target; target values the target's own
// normalization left alone restored.
func normalizeTargetResources(lives, targets []*unstructured.Unstructured, config *SyncTargetsRequest) ([]*unstructured.Unstructured, error) {
	normalizedLives, normalizedTargets, err := normalize(lives, targets, config)
	if err != nil {
		return nil, err
	}
	patchedTargets := []*unstructured.Unstructured{}
	for idx, live := range lives {
		normalizedTarget := normalizedTargets[idx]
		if normalizedTarget == nil {
			patchedTargets = append(patchedTargets, nil)
			continue
		}
		originalTarget := targets[idx]
		if live == nil {
			patchedTargets = append(patchedTargets, originalTarget)
			continue
		}
		var lookupPatchMeta *strategicpatch.PatchMetaFromStruct
		versionedObject, err := scheme.Scheme.New(normalizedTarget.GroupVersionKind())
		if err == nil {
			meta, err := strategicpatch.NewPatchMetaFromStruct(versionedObject)
			if err != nil {
				return nil, err
			}
			lookupPatchMeta = &meta
		}
		liveForPatch := live.DeepCopy()
		unstructured.RemoveNestedField(liveForPatch.Object, "status")
		normalizedLiveForPatch := normalizedLives[idx]
		if normalizedLiveForPatch != nil {
			normalizedLiveForPatch = normalizedLiveForPatch.DeepCopy()
			unstructured.RemoveNestedField(normalizedLiveForPatch.Object, "status")
		}
		livePatch, err := getMergePatch(normalizedLiveForPatch, liveForPatch, lookupPatchMeta)
		if err != nil {
			return nil, err
		}
		var versioned any
		if lookupPatchMeta != nil {
			versioned = versionedObject
		}
		patchedTarget, err := applyMergePatch(normalizedTarget, livePatch, versioned)
		if err != nil {
			return nil, err
		}
		var normalizedLiveObj map[string]any
		if normalizedLives[idx] != nil {
			normalizedLiveObj = normalizedLives[idx].Object
		}
		restoreNonIgnoredFields(patchedTarget.Object, originalTarget.Object, normalizedTarget.Object, normalizedLiveObj)
		patchedTargets = append(patchedTargets, patchedTarget)
	}
	return patchedTargets, nil
}

// getMergePatch follows getMergePatch: a strategic three-way patch (modified as both
// original and modified, so deletions come from the two-way part) for kinds in client-go's
// scheme, a JSON merge patch otherwise.
func getMergePatch(original, modified *unstructured.Unstructured, lookupPatchMeta *strategicpatch.PatchMetaFromStruct) ([]byte, error) {
	originalJSON, err := original.MarshalJSON()
	if err != nil {
		return nil, err
	}
	modifiedJSON, err := modified.MarshalJSON()
	if err != nil {
		return nil, err
	}
	if lookupPatchMeta != nil {
		return strategicpatch.CreateThreeWayMergePatch(modifiedJSON, modifiedJSON, originalJSON, lookupPatchMeta, true)
	}
	return jsonpatch.CreateMergePatch(originalJSON, modifiedJSON)
}

// applyMergePatch follows applyMergePatch; the result decoded as an unstructured object.
func applyMergePatch(obj *unstructured.Unstructured, patch []byte, versionedObject any) (*unstructured.Unstructured, error) {
	originalJSON, err := obj.MarshalJSON()
	if err != nil {
		return nil, err
	}
	var patchedJSON []byte
	if versionedObject == nil {
		patchedJSON, err = jsonpatch.MergePatch(originalJSON, patch)
	} else {
		patchedJSON, err = strategicpatch.StrategicMergePatch(originalJSON, patch, versionedObject)
	}
	if err != nil {
		return nil, err
	}
	patchedObj := &unstructured.Unstructured{}
	if _, _, err := unstructured.UnstructuredJSONScheme.Decode(patchedJSON, nil, patchedObj); err != nil {
		return nil, err
	}
	return patchedObj, nil
}

// restoreNonIgnoredFields follows restoreNonIgnoredFields: walking the original target, a
// leaf the target's normalization kept (normalized == original) takes the original value
// back; then a key the original lacks but the normalized live keeps (not ignored) leaves.
func restoreNonIgnoredFields(patched, original, normalizedTarget, normalizedLive map[string]any) {
	for key, originalVal := range original {
		patchedVal, inPatched := patched[key]
		normalizedVal, inNormalized := normalizedTarget[key]
		patchedMap, patchedIsMap := patchedVal.(map[string]any)
		originalMap, originalIsMap := originalVal.(map[string]any)
		normalizedMap, normalizedIsMap := normalizedVal.(map[string]any)
		if inPatched && patchedIsMap && originalIsMap && normalizedIsMap {
			liveMap, _ := normalizedLive[key].(map[string]any)
			restoreNonIgnoredFields(patchedMap, originalMap, normalizedMap, liveMap)
			continue
		}
		if inNormalized && reflect.DeepEqual(normalizedVal, originalVal) && (!inPatched || !reflect.DeepEqual(patchedVal, originalVal)) {
			patched[key] = originalVal
		}
	}
	for key := range patched {
		if _, inOriginal := original[key]; inOriginal {
			continue
		}
		if _, inLive := normalizedLive[key]; inLive {
			delete(patched, key)
		}
	}
}

// normalize follows diff.Normalize: preDiffNormalize, then the ignore normalizer and the
// known-types normalizer (newDiffNormalizer) over every live and every target.
func normalize(lives, targets []*unstructured.Unstructured, config *SyncTargetsRequest) ([]*unstructured.Unstructured, []*unstructured.Unstructured, error) {
	normalizedLives, normalizedTargets, err := preDiffNormalize(lives, targets, config)
	if err != nil {
		return nil, nil, err
	}
	ignore, err := newIgnoreNormalizer(config.IgnoreDifferences, config.ResourceOverrides)
	if err != nil {
		return nil, nil, err
	}
	knownTypes := newKnownTypesNormalizer(config.ResourceOverrides)
	for _, objects := range [][]*unstructured.Unstructured{normalizedLives, normalizedTargets} {
		for _, obj := range objects {
			if obj == nil {
				continue
			}
			if err := ignore.normalize(obj); err != nil {
				return nil, nil, err
			}
			if err := knownTypes.normalize(obj); err != nil {
				return nil, nil, err
			}
		}
	}
	return normalizedLives, normalizedTargets, nil
}

// preDiffNormalize follows preDiffNormalize: deep copies; the resource tracking
// normalization; managedFieldsManagers of the ignore entries matching the target. Argo CD
// resolves the type through gitops-engine's scheme.ResolveParseableType, which without a
// cluster schema parser (the harness has none) is structured-merge-diff's deduced type.
func preDiffNormalize(lives, targets []*unstructured.Unstructured, config *SyncTargetsRequest) ([]*unstructured.Unstructured, []*unstructured.Unstructured, error) {
	var normalizedLives, normalizedTargets []*unstructured.Unstructured
	for i := range targets {
		target, live := safeDeepCopy(targets[i]), safeDeepCopy(lives[i])
		_ = normalizeTracking(target, live, config.AppLabelKey, config.TrackingMethod)
		if live != nil && target != nil {
			gvk := target.GroupVersionKind()
			ok, managers := managedFieldsManagers(config, gvk.Group, gvk.Kind, target.GetName(), target.GetNamespace())
			if ok && len(managers) > 0 {
				var err error
				live, target, err = normalizeManagedFields(live, target, managers)
				if err != nil {
					return nil, nil, err
				}
			}
		}
		normalizedLives, normalizedTargets = append(normalizedLives, live), append(normalizedTargets, target)
	}
	return normalizedLives, normalizedTargets, nil
}

func safeDeepCopy(obj *unstructured.Unstructured) *unstructured.Unstructured {
	if obj == nil {
		return nil
	}
	return obj.DeepCopy()
}

// managedFieldsManagers follows IgnoreDiffConfig.HasIgnoreDifference with
// mergeIgnoreDifferences, for the managers only: the override of "<group>/<kind>", of
// "*/*", then every matching ignoreDifferences entry.
func managedFieldsManagers(config *SyncTargetsRequest, group, kind, name, namespace string) (bool, []string) {
	found, managers := false, []string{}
	add := func(from []string) {
		found = true
		for _, manager := range from {
			if !slices.Contains(managers, manager) {
				managers = append(managers, manager)
			}
		}
	}
	if override, ok := config.ResourceOverrides[group+"/"+kind]; ok {
		add(override.IgnoreDifferences.ManagedFieldsManagers)
	}
	if override, ok := config.ResourceOverrides["*/*"]; ok {
		add(override.IgnoreDifferences.ManagedFieldsManagers)
	}
	for _, entry := range config.IgnoreDifferences {
		if globMatch(entry.Group, group) && globMatch(entry.Kind, kind) &&
			(entry.Name == "" || entry.Name == name) && (entry.Namespace == "" || entry.Namespace == namespace) {
			add(entry.ManagedFieldsManagers)
		}
	}
	return found, managers
}

// normalizeManagedFields follows managedfields.Normalize with the deduced parseable type:
// for each managed fields entry of a trusted manager on the live object, the fields it
// owns that the target changes are removed from both.
func normalizeManagedFields(live, config *unstructured.Unstructured, trusted []string) (*unstructured.Unstructured, *unstructured.Unstructured, error) {
	liveCopy, configCopy := live.DeepCopy(), config.DeepCopy()
	parseable := &typed.DeducedParseableType
	typedLive, err := parseable.FromUnstructured(liveCopy.Object)
	if err != nil {
		return liveCopy, configCopy, nil
	}
	typedConfig, err := parseable.FromUnstructured(configCopy.Object)
	if err != nil {
		return liveCopy, configCopy, nil
	}
	comparison, err := typedLive.Compare(typedConfig)
	if err != nil {
		return liveCopy, configCopy, nil
	}
	normalized := false
	for _, entry := range live.GetManagedFields() {
		if !slices.Contains(trusted, entry.Manager) {
			continue
		}
		if err := normalizeManagedFieldsEntry(entry, comparison, &typedLive, &typedConfig); err != nil {
			return nil, nil, fmt.Errorf("error normalizing manager %s: %w", entry.Manager, err)
		}
		normalized = true
	}
	if !normalized {
		return liveCopy, configCopy, nil
	}
	liveObj, ok := typedLive.AsValue().Unstructured().(map[string]any)
	if !ok {
		return nil, nil, errors.New("error converting live typedValue: expected map")
	}
	configObj, ok := typedConfig.AsValue().Unstructured().(map[string]any)
	if !ok {
		return nil, nil, errors.New("error converting config typedValue: expected map")
	}
	return &unstructured.Unstructured{Object: liveObj}, &unstructured.Unstructured{Object: configObj}, nil
}

// normalizeManagedFieldsEntry follows managedfields' normalize: the entry's field set
// intersected with what the comparison found modified, removed from live and config.
func normalizeManagedFieldsEntry(entry metav1.ManagedFieldsEntry, comparison *typed.Comparison, live, config **typed.TypedValue) error {
	owned := &fieldpath.Set{}
	var raw []byte
	if entry.FieldsV1 != nil {
		raw = entry.FieldsV1.Raw
	}
	if err := owned.FromJSON(strings.NewReader(string(raw))); err != nil {
		return err
	}
	intersect := owned.Intersection(comparison.Modified)
	if intersect.Empty() {
		return nil
	}
	*live = (*live).RemoveItems(intersect)
	*config = (*config).RemoveItems(intersect)
	return nil
}

// normalizeTracking follows resourceTracking.Normalize (annotation-based tracking only):
// a live object with the instance label but no tracking annotation gets the target's
// annotation; the label leaves the live object when the target lacks it. CRDs excepted.
func normalizeTracking(config, live *unstructured.Unstructured, labelKey, trackingMethod string) error {
	if trackingMethod == "" || trackingMethod == "label" || live == nil || config == nil {
		return nil
	}
	if labelKey == "" {
		labelKey = "app.kubernetes.io/instance"
	}
	const annotationKey = "argocd.argoproj.io/tracking-id"
	if live.GetLabels()[labelKey] == "" {
		return nil
	}
	if live.GetKind() == "CustomResourceDefinition" && live.GroupVersionKind().Group == "apiextensions.k8s.io" {
		return nil
	}
	if live.GetAnnotations()[annotationKey] == "" {
		annotations := live.GetAnnotations()
		if annotations == nil {
			annotations = map[string]string{}
		}
		annotations[annotationKey] = config.GetAnnotations()[annotationKey]
		live.SetAnnotations(annotations)
	}
	if config.GetLabels()[labelKey] == "" {
		labels := live.GetLabels()
		delete(labels, labelKey)
		if len(labels) == 0 {
			labels = nil
		}
		live.SetLabels(labels)
	}
	return nil
}

// globMatch follows util/glob Match (gobwas/glob, no separators); a pattern that does not
// compile matches nothing.
func globMatch(pattern, text string) bool {
	compiled, err := glob.Compile(pattern)
	if err != nil {
		return false
	}
	return compiled.Match(text)
}

// ignorePatch is one compiled ignore entry (diff_normalizer.go normalizerPatch): a JSON
// patch removing a pointer, or a jq program `del(<expression>)`.
type ignorePatch struct {
	groupKind       schema.GroupKind
	name, namespace string
	pointer         *jsonpatch.Patch
	jq              *gojq.Code
}

type ignoreNormalizer struct{ patches []ignorePatch }

// newIgnoreNormalizer follows NewIgnoreNormalizer: the overrides' ignoreDifferences become
// entries for their group/kind after the Application's; each JSON pointer a `remove` patch,
// each jq path expression compiled as `del(<expression>)`. A bad one fails the sync.
func newIgnoreNormalizer(ignore []ResourceIgnoreDifferences, overrides map[string]ResourceOverride) (*ignoreNormalizer, error) {
	ignore = slices.Clone(ignore)
	for key, override := range overrides {
		group, kind := groupKindForOverrideKey(key)
		if len(override.IgnoreDifferences.JSONPointers) > 0 || len(override.IgnoreDifferences.JQPathExpressions) > 0 {
			ignore = append(ignore, ResourceIgnoreDifferences{Group: group, Kind: kind,
				JSONPointers: override.IgnoreDifferences.JSONPointers, JQPathExpressions: override.IgnoreDifferences.JQPathExpressions})
		}
	}
	normalizer := &ignoreNormalizer{}
	for _, entry := range ignore {
		base := ignorePatch{groupKind: schema.GroupKind{Group: entry.Group, Kind: entry.Kind}, name: entry.Name, namespace: entry.Namespace}
		for _, path := range entry.JSONPointers {
			data, err := json.Marshal([]map[string]string{{"op": "remove", "path": path}})
			if err != nil {
				return nil, err
			}
			patch, err := jsonpatch.DecodePatch(data)
			if err != nil {
				return nil, err
			}
			p := base
			p.pointer = &patch
			normalizer.patches = append(normalizer.patches, p)
		}
		for _, expression := range entry.JQPathExpressions {
			query, err := gojq.Parse(fmt.Sprintf("del(%s)", expression))
			if err != nil {
				return nil, err
			}
			code, err := gojq.Compile(query)
			if err != nil {
				return nil, err
			}
			p := base
			p.jq = code
			normalizer.patches = append(normalizer.patches, p)
		}
	}
	return normalizer, nil
}

// groupKindForOverrideKey follows getGroupKindForOverrideKey: "<group>/<kind>" or "<kind>"
// (a malformed key is only logged there, and matches with empty group and kind).
func groupKindForOverrideKey(key string) (string, string) {
	parts := strings.Split(key, "/")
	switch len(parts) {
	case 2:
		return parts[0], parts[1]
	case 1:
		return "", parts[0]
	}
	return "", ""
}

// normalize follows ignoreNormalizer.Normalize: the entries matching the object's group,
// kind (globs), name and namespace applied in order to its JSON; an entry that fails
// (a missing pointer, a jq error or timeout, several outputs) is skipped.
func (n *ignoreNormalizer) normalize(obj *unstructured.Unstructured) error {
	gk := obj.GroupVersionKind().GroupKind()
	var matched []ignorePatch
	for _, patch := range n.patches {
		if globMatch(patch.groupKind.Group, gk.Group) && globMatch(patch.groupKind.Kind, gk.Kind) &&
			(patch.name == "" || patch.name == obj.GetName()) && (patch.namespace == "" || patch.namespace == obj.GetNamespace()) {
			matched = append(matched, patch)
		}
	}
	if len(matched) == 0 {
		return nil
	}
	doc, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	for _, patch := range matched {
		var patched []byte
		if patch.pointer != nil {
			patched, err = patch.pointer.Apply(doc)
		} else {
			patched, err = applyJQ(patch.jq, doc)
		}
		if err != nil {
			continue
		}
		doc = patched
	}
	return json.Unmarshal(doc, obj)
}

// applyJQ follows jqNormalizerPatch.Apply: the document as a JSON object, the program run
// under DefaultJQExecutionTimeout, exactly one output.
func applyJQ(code *gojq.Code, doc []byte) ([]byte, error) {
	data := make(map[string]any)
	if err := json.Unmarshal(doc, &data); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), defaultJQExecutionTimeout)
	defer cancel()
	iter := code.RunWithContext(ctx, data)
	first, ok := iter.Next()
	if !ok {
		return nil, errors.New("JQ patch did not return any data")
	}
	if err, isErr := first.(error); isErr {
		return nil, fmt.Errorf("JQ patch returned error: %w", err)
	}
	if _, more := iter.Next(); more {
		return nil, errors.New("JQ patch returned multiple objects")
	}
	return json.Marshal(first)
}

// knownTypeField is a field of a kind re-encoded through a Kubernetes Go type
// (knowntypes_normalizer.go knownTypeField).
type knownTypeField struct {
	fieldPath  []string
	newFieldFn func() any
}

type knownTypesNormalizer struct {
	typeFields map[schema.GroupKind][]knownTypeField
}

// newKnownTypesNormalizer follows NewKnownTypesNormalizer: the overrides' knownTypeFields
// (core/Quantity, meta/v1/Duration; others only logged there) and the default for
// argoproj.io Rollout's pod spec.
func newKnownTypesNormalizer(overrides map[string]ResourceOverride) *knownTypesNormalizer {
	known := map[string]func() any{
		"core/Quantity":    func() any { return &resource.Quantity{} },
		"meta/v1/Duration": func() any { return &metav1.Duration{} },
	}
	n := &knownTypesNormalizer{typeFields: map[schema.GroupKind][]knownTypeField{}}
	for key, override := range overrides {
		group, kind := groupKindForOverrideKey(key)
		gk := schema.GroupKind{Group: group, Kind: kind}
		for _, field := range override.KnownTypeFields {
			if fn, ok := known[field.Type]; ok {
				n.typeFields[gk] = append(n.typeFields[gk], knownTypeField{strings.Split(field.Field, "."), fn})
			}
		}
	}
	rollout := schema.GroupKind{Group: "argoproj.io", Kind: "Rollout"}
	if _, ok := n.typeFields[rollout]; !ok {
		n.typeFields[rollout] = []knownTypeField{{[]string{"spec", "template", "spec"}, func() any { return &corev1.PodSpec{} }}}
	}
	return n
}

func (n *knownTypesNormalizer) normalize(obj *unstructured.Unstructured) error {
	for _, field := range n.typeFields[obj.GroupVersionKind().GroupKind()] {
		if err := normalizeKnownField(obj.Object, field, field.fieldPath); err != nil {
			return err
		}
	}
	return nil
}

// normalizeKnownField follows knowntypes_normalizer.go normalize: a list on the way is
// walked item by item; the value at the path is re-encoded through the Go type.
func normalizeKnownField(obj map[string]any, field knownTypeField, fieldPath []string) error {
	for i := range fieldPath {
		nested, ok, err := unstructured.NestedFieldNoCopy(obj, fieldPath[:i+1]...)
		if err != nil || !ok {
			continue
		}
		items, isList := nested.([]any)
		if !isList {
			continue
		}
		for j := range items {
			item, isMap := items[j].(map[string]any)
			if !isMap {
				continue
			}
			if sub := fieldPath[i+1:]; len(sub) == 0 {
				value, err := remarshal(item, field)
				if err != nil {
					return err
				}
				items[j] = value
			} else if err := normalizeKnownField(item, field, sub); err != nil {
				return err
			}
		}
		return unstructured.SetNestedSlice(obj, items, fieldPath[:i+1]...)
	}
	if value, ok, err := unstructured.NestedFieldNoCopy(obj, fieldPath...); ok && err == nil {
		remarshaled, err := remarshal(value, field)
		if err != nil {
			return err
		}
		return unstructured.SetNestedField(obj, remarshaled, fieldPath...)
	}
	return nil
}

func remarshal(value any, field knownTypeField) (any, error) {
	data, err := json.Marshal(value)
	if err != nil {
		return nil, err
	}
	typedValue := field.newFieldFn()
	if err := json.Unmarshal(data, typedValue); err != nil {
		return nil, err
	}
	if data, err = json.Marshal(typedValue); err != nil {
		return nil, err
	}
	var out any
	err = json.Unmarshal(data, &out)
	return out, err
}
