package docs

import (
	"testing"

	"go.yaml.in/yaml/v3"
)

// TestOpenAPIHasNoNullsOrDuplicateKeys parses openapi.yaml node by node and
// fails on any member whose value is null and on any key that a mapping
// has twice. The document has no member that means null: a null is
// always a slip of YAML, most often an unquoted comma in a flow mapping
// ({type: string, description: A, B}), which ends the description at the
// comma and turns the rest ("B") into a key of its own with no value,
// silently. Texts with commas in flow mappings are quoted, or written as
// block members. A duplicate key is a slip too: YAML parsers keep one of
// the two values without a word.
func TestOpenAPIHasNoNullsOrDuplicateKeys(t *testing.T) {
	var root yaml.Node
	if err := yaml.Unmarshal(OpenAPI, &root); err != nil {
		t.Fatalf("openapi.yaml: %v", err)
	}
	if n := checkYAMLNode(t, &root, ""); n < 1000 {
		t.Fatalf("openapi.yaml: only %d mapping members checked; the walk missed the document", n)
	}
}

// checkYAMLNode reports the nulls and duplicate keys of the mappings in n
// and below it (at is n's path, for the messages), and returns how many
// mapping members it checked.
func checkYAMLNode(t *testing.T, n *yaml.Node, at string) int {
	t.Helper()
	checked := 0
	switch n.Kind {
	case yaml.DocumentNode, yaml.SequenceNode:
		for _, c := range n.Content {
			checked += checkYAMLNode(t, c, at)
		}
	case yaml.MappingNode:
		seen := map[string]int{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			key, value := n.Content[i], n.Content[i+1]
			path := at + "/" + key.Value
			checked++
			if line, dup := seen[key.Value]; dup {
				t.Errorf("openapi.yaml:%d: %s is a key for the second time (first at line %d)", key.Line, path, line)
			}
			seen[key.Value] = key.Line
			if key.Tag == "!!null" || (value.Kind == yaml.ScalarNode && value.Tag == "!!null") {
				t.Errorf("openapi.yaml:%d:%d: %s has a null value: in a flow mapping {…} an unquoted comma ends the text before it and makes the rest a key of its own; quote the text", key.Line, key.Column, path)
			}
			checked += checkYAMLNode(t, value, path)
		}
	case yaml.AliasNode:
		t.Errorf("openapi.yaml:%d: %s is a YAML alias; the document writes every member out", n.Line, at)
	}
	return checked
}
