package server

import (
	"bytes"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/reserve/reserve/docs"
	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/faults"
)

// openAPIDoc is the part of docs/openapi.yaml the consistency test reads.
type openAPIDoc struct {
	OpenAPI    string                    `yaml:"openapi"`
	Codes      map[string]int            `yaml:"x-reserve-codes"`
	Paths      map[string]map[string]any `yaml:"paths"`
	Components struct {
		Schemas struct {
			Problem struct {
				Properties struct {
					Code struct {
						Enum []string `yaml:"enum"`
					} `yaml:"code"`
				} `yaml:"properties"`
			} `yaml:"Problem"`
		} `yaml:"schemas"`
	} `yaml:"components"`
}

func loadOpenAPI(t *testing.T) openAPIDoc {
	t.Helper()
	var doc openAPIDoc
	if err := yaml.Unmarshal(docs.OpenAPI, &doc); err != nil {
		t.Fatalf("docs/openapi.yaml: %v", err)
	}
	if doc.OpenAPI != "3.1.0" {
		t.Errorf("openapi: %q, want 3.1.0", doc.OpenAPI)
	}
	return doc
}

// TestOpenAPIDescribesEveryRoute checks that every route the server
// registers (with fault injection, so all of them) is in docs/openapi.yaml
// and every described operation is a registered route.
func TestOpenAPIDescribesEveryRoute(t *testing.T) {
	doc := loadOpenAPI(t)
	described := map[string]bool{}
	for path, item := range doc.Paths {
		for method := range item {
			switch method {
			case "get", "put", "post", "delete", "patch", "head", "options":
				described[strings.ToUpper(method)+" "+path] = true
			case "parameters", "summary", "description":
			default:
				t.Errorf("paths.%s has the unknown member %q", path, method)
			}
		}
	}
	s := New(Config{Faults: faults.New(nil)})
	registered := map[string]bool{}
	for _, rt := range s.routes() {
		registered[strings.Replace(rt.pattern, "{$}", "", 1)] = true
	}
	for _, r := range slices.Sorted(maps.Keys(registered)) {
		if !described[r] {
			t.Errorf("route %s is registered but not described in docs/openapi.yaml", r)
		}
	}
	for _, d := range slices.Sorted(maps.Keys(described)) {
		if !registered[d] {
			t.Errorf("docs/openapi.yaml describes %s, which the server does not register", d)
		}
	}
}

// TestOpenAPIErrorCodesAreTheEngines checks that the documented codes are
// exactly engine.Codes, each with the status of the one table.
func TestOpenAPIErrorCodesAreTheEngines(t *testing.T) {
	doc := loadOpenAPI(t)
	want := slices.Sorted(slices.Values(engine.Codes))
	if got := slices.Sorted(slices.Values(doc.Components.Schemas.Problem.Properties.Code.Enum)); !slices.Equal(got, want) {
		t.Errorf("Problem.code enum = %v, want engine.Codes %v", got, want)
	}
	if got := slices.Sorted(maps.Keys(doc.Codes)); !slices.Equal(got, want) {
		t.Errorf("x-reserve-codes = %v, want engine.Codes %v", got, want)
	}
	for code, status := range doc.Codes {
		if StatusOf(code) != status {
			t.Errorf("x-reserve-codes: %s is %d, but the server answers %d", code, status, StatusOf(code))
		}
	}
}

func TestOpenAPIIsServed(t *testing.T) {
	s := New(Config{})
	rec := httptest.NewRecorder()
	s.mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/v1/openapi.yaml", nil))
	if rec.Code != http.StatusOK || !bytes.Equal(rec.Body.Bytes(), docs.OpenAPI) || rec.Header().Get("Content-Type") != "application/yaml" {
		t.Errorf("GET /api/v1/openapi.yaml = %d %q, %d bytes", rec.Code, rec.Header().Get("Content-Type"), rec.Body.Len())
	}
}
