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

// TestOpenAPIOperationsAreTaggedAndDescribed checks, without the linter of
// .ci/run, that every operation has a summary, a description and exactly
// one tag, that the tag is one of the document's described tags, and that
// every tag groups some operation.
func TestOpenAPIOperationsAreTaggedAndDescribed(t *testing.T) {
	var doc struct {
		Tags []struct {
			Name        string `yaml:"name"`
			Description string `yaml:"description"`
		} `yaml:"tags"`
		Paths map[string]map[string]yaml.Node `yaml:"paths"` // Operations and a path's parameters.
	}
	type operation struct {
		OperationID string   `yaml:"operationId"`
		Tags        []string `yaml:"tags"`
		Summary     string   `yaml:"summary"`
		Description string   `yaml:"description"`
	}
	if err := yaml.Unmarshal(OpenAPI, &doc); err != nil {
		t.Fatalf("openapi.yaml: %v", err)
	}
	used := map[string]int{}
	for _, tag := range doc.Tags {
		if _, dup := used[tag.Name]; dup || tag.Name == "" || tag.Description == "" {
			t.Errorf("tag %q: every tag has a name of its own and a description", tag.Name)
		}
		used[tag.Name] = 0
	}
	operations := 0
	for path, item := range doc.Paths {
		for method, node := range item {
			switch method {
			case "get", "put", "post", "delete", "patch":
			default:
				continue
			}
			var op operation
			if err := node.Decode(&op); err != nil {
				t.Errorf("%s %s: %v", method, path, err)
				continue
			}
			operations++
			if op.OperationID == "" || op.Summary == "" || op.Description == "" {
				t.Errorf("%s %s: operationId %q, summary %q, description %q; each must be there", method, path, op.OperationID, op.Summary, op.Description)
			}
			if len(op.Tags) != 1 {
				t.Errorf("%s %s has the tags %q, want exactly one", method, path, op.Tags)
				continue
			}
			if n, ok := used[op.Tags[0]]; !ok {
				t.Errorf("%s %s has the tag %q, which the document's tags do not list", method, path, op.Tags[0])
			} else {
				used[op.Tags[0]] = n + 1
			}
		}
	}
	if operations < 50 {
		t.Errorf("only %d operations found; the test reads the document wrong", operations)
	}
	for tag, n := range used {
		if n == 0 {
			t.Errorf("tag %q groups no operation", tag)
		}
	}
}
