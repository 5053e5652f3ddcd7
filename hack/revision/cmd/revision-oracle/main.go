// Command revision-oracle computes DisaggregatedSet revisions the way the upstream controller's
// ComputeRevision does: Go's encoding/json over the typed roles, SHA-256, first 8 hex digits.
// It is the reference of the differential test (tests/unit/test_revision_oracle.py).
//
// Input: a stream of JSON DisaggregatedSet documents on stdin, already defaulted as the API
// server would store them (the oracle applies no defaults). Output: one line per document, the
// revision, or with -json the revision, a tab and the marshalled role list. Go's decoder reads
// the input, so unknown fields are dropped as the API server prunes them; the embedded ObjectMeta
// is the full type, so send template metadata the CRD keeps (name, namespace, labels,
// annotations, finalizers) only.
package main

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"

	lwsv1 "kubectl-disagg/hack/crd/api/leaderworkerset/v1"
	"kubectl-disagg/hack/revision/lws"
)

type document struct {
	Spec struct {
		Roles []struct {
			Name string `json:"name"`
			Spec struct {
				GroupIdentity        lwsv1.GroupIdentityType  `json:"groupIdentity"`
				LeaderWorkerTemplate lws.LeaderWorkerTemplate `json:"leaderWorkerTemplate"`
			} `json:"spec"`
		} `json:"roles"`
	} `json:"spec"`
}

func main() {
	showJSON := flag.Bool("json", false, "also print the marshalled role list")
	flag.Parse()
	decoder := json.NewDecoder(bufio.NewReader(os.Stdin))
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	for {
		var doc document
		err := decoder.Decode(&doc)
		if err == io.EOF {
			return
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "revision-oracle:", err)
			out.Flush()
			os.Exit(1)
		}
		roles := make([]lws.RoleTemplate, 0, len(doc.Spec.Roles))
		for _, role := range doc.Spec.Roles {
			roles = append(roles, lws.RoleTemplate{Name: role.Name, GroupIdentity: lws.NormalGroupIdentity(role.Spec.GroupIdentity),
				Template: role.Spec.LeaderWorkerTemplate})
		}
		data, err := json.Marshal(roles)
		if err != nil {
			fmt.Fprintln(os.Stderr, "revision-oracle:", err)
			out.Flush()
			os.Exit(1)
		}
		sum := sha256.Sum256(data)
		revision := hex.EncodeToString(sum[:])[:8]
		if *showJSON {
			fmt.Fprintf(out, "%s\t%s\n", revision, data)
		} else {
			fmt.Fprintln(out, revision)
		}
		out.Flush() // one answer per document, so a test can keep one oracle running
	}
}
