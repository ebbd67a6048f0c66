package server

import (
	"bytes"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/reserve/reserve/docs"
	"github.com/reserve/reserve/internal/api"
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
					Reason struct {
						Description string `yaml:"description"`
					} `yaml:"reason"`
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
	// With every optional route: fault injection and the sign-in through an
	// OpenID Connect provider.
	s := New(Config{Faults: faults.New(nil), OIDC: &OIDCConfig{Issuer: "https://id.example", ClientID: "c", ClientSecret: "s", PublicURL: "https://reserve.example"}})
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
// exactly api.Codes, each with the status of the one table.
func TestOpenAPIErrorCodesAreTheEngines(t *testing.T) {
	doc := loadOpenAPI(t)
	want := slices.Sorted(slices.Values(api.Codes))
	if got := slices.Sorted(slices.Values(doc.Components.Schemas.Problem.Properties.Code.Enum)); !slices.Equal(got, want) {
		t.Errorf("Problem.code enum = %v, want api.Codes %v", got, want)
	}
	if got := slices.Sorted(maps.Keys(doc.Codes)); !slices.Equal(got, want) {
		t.Errorf("x-reserve-codes = %v, want api.Codes %v", got, want)
	}
	for code, status := range doc.Codes {
		if StatusOf(code) != status {
			t.Errorf("x-reserve-codes: %s is %d, but the server answers %d", code, status, StatusOf(code))
		}
	}
}

// TestOpenAPIRefusalReasonsAreTheEngines checks that the reason member of a
// refused atomic batch's items documents every reason word of the engine.
func TestOpenAPIRefusalReasonsAreTheEngines(t *testing.T) {
	desc := loadOpenAPI(t).Components.Schemas.Problem.Properties.Reason.Description
	for _, reason := range engine.RefusalReasons {
		if !strings.Contains(desc, reason) {
			t.Errorf("Problem.reason does not document the reason %q: %q", reason, desc)
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

// answerKinds are the routes of idempotent operations with the kind of
// operation whose answers they send.
var answerKinds = map[string]engine.OperationKind{
	"POST /api/v1/reservations":                engine.OperationReserve,
	"POST /api/v1/reservations/{id}/cancel":    engine.OperationCancel,
	"POST /api/v1/holds":                       engine.OperationHold,
	"POST /api/v1/holds/{id}/confirm":          engine.OperationConfirm,
	"POST /api/v1/holds/{id}/release":          engine.OperationRelease,
	"POST /api/v1/admin/deliveries/{id}/retry": engine.OperationRetryDelivery,
	"POST /api/v1/admin/deliveries/{id}/skip":  engine.OperationSkipDelivery,
	"POST /api/v1/waitlist/{id}/leave":         engine.OperationLeaveWaitlist,
}

// TestOpenAPIDescribesEveryAnswer checks that, for every route of an
// idempotent operation, docs/openapi.yaml describes every answer the
// server sends there: a JSON response under the answer's HTTP status whose
// schema lists the answer's status word.
func TestOpenAPIDescribesEveryAnswer(t *testing.T) {
	var doc map[string]any
	if err := yaml.Unmarshal(docs.OpenAPI, &doc); err != nil {
		t.Fatalf("docs/openapi.yaml: %v", err)
	}
	for route := range idempotentRoutes {
		if _, ok := answerKinds[route]; !ok {
			t.Errorf("idempotent route %s has no kind in answerKinds", route)
		}
	}
	for route, kind := range answerKinds {
		method, path, _ := strings.Cut(route, " ")
		responses, _ := dig(doc, "paths", path, strings.ToLower(method), "responses").(map[string]any)
		n := 0
		for _, status := range engine.AnswerStatuses() {
			code := api.StatusOfAnswer(kind, status)
			if code == 0 {
				continue
			}
			n++
			schema, _ := dig(responses, strconv.Itoa(code), "content", api.MediaJSON, "schema").(map[string]any)
			if ref, ok := schema["$ref"].(string); ok {
				schema, _ = dig(doc, strings.Split(strings.TrimPrefix(ref, "#/"), "/")...).(map[string]any)
			}
			enum, _ := dig(schema, "properties", "status", "enum").([]any)
			if !slices.Contains(enum, any(status)) {
				t.Errorf("%s: docs/openapi.yaml has no %d JSON answer with status %q (its status enum: %v)", route, code, status, enum)
			}
		}
		if n == 0 {
			t.Errorf("%s: kind %s has no answers", route, kind)
		}
	}
}

// dig follows the member names path into nested YAML maps, nil where one
// is missing.
func dig(v any, path ...string) any {
	for _, p := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[p]
	}
	return v
}
