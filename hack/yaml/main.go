// Command yaml2json reads YAML streams as kubectl reads a manifest file and prints the JSON
// documents it would send, so tests can hold kubectl-disagg's reader to kubectl's reading.
//
// Batch mode, for speed: every line of stdin is the text of one YAML stream in base64 (any bytes,
// valid UTF-8 or not); for every line, one line of JSON comes out:
//
//	{"documents": [...]}  the stream's documents, as kubectl's builder keeps them
//	{"error": "..."}      the stream is refused, with kubectl's message
//
// The reading follows k8s.io/cli-runtime/pkg/resource/visitor.go (StreamVisitor.Visit): a
// YAMLOrJSONDecoder (k8s.io/apimachinery/pkg/util/yaml) with a 4096-byte look-ahead splits the
// stream and turns each YAML document into JSON with sigs.k8s.io/yaml (YAMLToJSON's conversion:
// the target is a json.RawMessage, a json.Unmarshaler, as the builder's RawExtension is); the
// builder then trims each document and skips the empty and the null ones.
package main

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"k8s.io/apimachinery/pkg/util/yaml"
)

type documents struct {
	Documents []json.RawMessage `json:"documents"`
}

type refusal struct {
	Error string `json:"error"`
}

// read is kubectl's reading of one stream: every document, or the first error.
func read(text []byte) (docs []json.RawMessage, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	decoder := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(text), 4096)
	docs = []json.RawMessage{}
	for {
		var raw json.RawMessage
		if err := decoder.Decode(&raw); err != nil {
			if errors.Is(err, io.EOF) {
				return docs, nil
			}
			return nil, err
		}
		raw = bytes.TrimSpace(raw)
		if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
			continue
		}
		docs = append(docs, raw)
	}
}

func main() {
	in := bufio.NewReader(os.Stdin)
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	encoder := json.NewEncoder(out)
	encoder.SetEscapeHTML(false)
	for {
		line, err := in.ReadBytes('\n')
		if len(line) > 0 { // every line, the empty one (an empty text) too
			text, derr := base64.StdEncoding.DecodeString(string(bytes.TrimSpace(line)))
			if derr != nil {
				fmt.Fprintf(os.Stderr, "yaml2json: input line is not base64: %v\n", derr)
				os.Exit(2)
			}
			var r any
			if docs, rerr := read(text); rerr != nil {
				r = refusal{rerr.Error()}
			} else {
				r = documents{docs}
			}
			if eerr := encoder.Encode(r); eerr != nil {
				fmt.Fprintf(os.Stderr, "yaml2json: %v\n", eerr)
				os.Exit(2)
			}
			if flushErr := out.Flush(); flushErr != nil {
				os.Exit(2)
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return
			}
			fmt.Fprintf(os.Stderr, "yaml2json: %v\n", err)
			os.Exit(2)
		}
	}
}
