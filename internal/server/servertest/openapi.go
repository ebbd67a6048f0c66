package servertest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi-validator/config"
	valerrors "github.com/pb33f/libopenapi-validator/errors"

	"github.com/reserve/reserve/docs"
	"github.com/reserve/reserve/internal/api"
)

// OpenAPI checks real exchanges against docs/openapi.yaml with an outside
// OpenAPI 3.1 validator. It is safe for concurrent use.
type OpenAPI struct {
	mu sync.Mutex
	v  validator.Validator
}

// loadOpenAPI builds the validator once per test binary: building it
// compiles every schema of the document.
var loadOpenAPI = sync.OnceValues(func() (*OpenAPI, error) {
	doc, err := libopenapi.NewDocument(docs.OpenAPI)
	if err != nil {
		return nil, fmt.Errorf("parse docs/openapi.yaml: %w", err)
	}
	// The standard body decoders let the validator check the answers that
	// are not JSON too: YAML, plain text, binary.
	// The Unix socket authenticates its peer by its uid, which no OpenAPI
	// security scheme expresses; whether a route needs credentials is
	// checked by the 401 answers the document must describe instead.
	v, errs := validator.NewValidator(doc, config.WithoutSecurityValidation(), config.WithFormatAssertions(), config.WithStandardBodyDecoders())
	if len(errs) > 0 {
		return nil, fmt.Errorf("build a validator of docs/openapi.yaml: %w", errors.Join(errs...))
	}
	if ok, verrs := v.ValidateDocument(); !ok {
		return nil, fmt.Errorf("docs/openapi.yaml is not a valid OpenAPI document: %w", joinValidation(verrs))
	}
	return &OpenAPI{v: v}, nil
})

// LoadOpenAPI returns the checker of docs/openapi.yaml, or fails the test.
func LoadOpenAPI(tb testing.TB) *OpenAPI {
	tb.Helper()
	o, err := loadOpenAPI()
	if err != nil {
		tb.Fatal(err)
	}
	return o
}

// Check returns an error saying how an exchange departs from the document,
// or nil. reqBody and respBody are the bodies as sent; req.Body and
// resp.Body are not read.
//
// The answer is checked always: its status must be described for the
// operation, with its media type, body schema and described headers. The
// request is checked too when the answer is a success, since a request the
// daemon accepts must be one the document allows; a refused request may
// break the document on purpose, and so may a request sent with a context
// from PartlyRefused. A request outside every described
// operation must get a 404 or a 405 (with Allow), which no operation can
// describe: under /api/ the API's not_found or method_not_allowed problem,
// elsewhere net/http's plain-text answer.
func (o *OpenAPI) Check(req *http.Request, reqBody []byte, resp *http.Response, respBody []byte) error {
	req = req.Clone(req.Context())
	req.Body = io.NopCloser(bytes.NewReader(reqBody))
	req.ContentLength = int64(len(reqBody))
	resp2 := *resp
	resp2.Body = io.NopCloser(bytes.NewReader(respBody))
	resp2.Request = req

	o.mu.Lock()
	_, respErrs := o.v.ValidateHttpResponse(req, &resp2)
	var reqErrs []*valerrors.ValidationError
	if resp.StatusCode/100 == 2 && !undescribed(respErrs) && req.Context().Value(partlyRefusedKey{}) == nil {
		_, reqErrs = o.v.ValidateHttpRequestSync(req)
	}
	o.mu.Unlock()

	if undescribed(respErrs) {
		return checkUnrouted(req, resp, respBody)
	}
	var msgs []string
	for _, e := range reqErrs {
		msgs = append(msgs, "request: "+describe(e))
	}
	for _, e := range respErrs {
		msgs = append(msgs, "response: "+describe(e))
	}
	if len(msgs) == 0 {
		return nil
	}
	return errors.New(strings.Join(msgs, "\n"))
}

type partlyRefusedKey struct{}

// PartlyRefused returns ctx marked for a request that breaks the document
// on purpose in parts that the daemon refuses one by one inside a success:
// a batch with items that are no BatchItem, which it answers 200 with each
// such item's own problem among the results. Check does not check the
// request of an exchange sent with it; the answer it checks as always.
func PartlyRefused(ctx context.Context) context.Context {
	return context.WithValue(ctx, partlyRefusedKey{}, true)
}

// undescribed reports whether errs say that the document has no path or
// no operation for the request.
func undescribed(errs []*valerrors.ValidationError) bool {
	for _, e := range errs {
		if e.IsPathMissingError() || e.IsOperationMissingError() {
			return true
		}
	}
	return false
}

// checkUnrouted checks the answer to a request outside every described
// operation.
func checkUnrouted(req *http.Request, resp *http.Response, body []byte) error {
	want := map[int]string{http.StatusNotFound: api.CodeNotFound, http.StatusMethodNotAllowed: api.CodeMethodNotAllowed}
	code, ok := want[resp.StatusCode]
	if !ok {
		return fmt.Errorf("the document describes no such operation, and the answer %d is neither 404 nor 405", resp.StatusCode)
	}
	if resp.StatusCode == http.StatusMethodNotAllowed && resp.Header.Get("Allow") == "" {
		return errors.New("the 405 answer has no Allow header")
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if !strings.HasPrefix(req.URL.Path, "/api/") {
		if mt != "text/plain" {
			return fmt.Errorf("the document describes no such operation, and the %d answer outside /api/ is %q, not net/http's plain text", resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		return nil
	}
	var p api.Problem
	if mt != api.MediaProblem || json.Unmarshal(body, &p) != nil || p.Code != code || p.Status != resp.StatusCode {
		return fmt.Errorf("the document describes no such operation, and the %d answer is not a %s problem detail: %q %s", resp.StatusCode, code, resp.Header.Get("Content-Type"), body)
	}
	return nil
}

// describe renders one validation error with its schema failures.
func describe(e *valerrors.ValidationError) string {
	s := e.Message
	if e.Reason != "" && e.Reason != e.Message {
		s += ": " + e.Reason
	}
	for _, f := range e.SchemaValidationErrors {
		s += "; " + f.Error()
	}
	if e.SpecLine > 0 {
		s += fmt.Sprintf(" (docs/openapi.yaml line %d)", e.SpecLine)
	}
	return s
}

func joinValidation(errs []*valerrors.ValidationError) error {
	var msgs []string
	for _, e := range errs {
		msgs = append(msgs, describe(e))
	}
	return errors.New(strings.Join(msgs, "\n"))
}

// checkingTransport checks every exchange of its harness's clients against
// the document and fails the test at the first departure of each.
type checkingTransport struct {
	next    http.RoundTripper
	openAPI *OpenAPI
	tb      testing.TB
	via     string // "socket" or "tcp", for the failure message.
}

func (t *checkingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	var reqBody []byte
	if req.GetBody != nil {
		rc, err := req.GetBody()
		if err != nil {
			return nil, fmt.Errorf("copy the request body: %w", err)
		}
		reqBody, err = io.ReadAll(rc)
		rc.Close()
		if err != nil {
			return nil, fmt.Errorf("copy the request body: %w", err)
		}
	}
	resp, err := t.next.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		// An answer cut short is not an exchange to check; the caller
		// sees the same error reading the body.
		resp.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body), errReader{err}))
		return resp, nil
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	if err := t.openAPI.Check(req, reqBody, resp, body); err != nil {
		t.tb.Errorf("%s %s on the %s: %d %s departs from docs/openapi.yaml:\n%v", req.Method, req.URL.RequestURI(), t.via, resp.StatusCode, resp.Header.Get("Content-Type"), err)
	}
	return resp, nil
}

type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

// CloseIdleConnections closes the idle connections of the transport it
// wraps.
func (t *checkingTransport) CloseIdleConnections() {
	if c, ok := t.next.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}
