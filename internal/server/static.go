package server

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"mime"
	"net/http"
	"path"
	"strconv"
	"strings"
	"sync"

	"github.com/reserve/reserve/web"
)

// staticFile is one file of the embedded pages, prepared once per process:
// its bytes, their gzip compression, and a strong ETag for each of the two.
// The files change only with the binary, so this is done before the first
// request and never again.
type staticFile struct {
	contentType string
	body        []byte
	etag        string
	gz          []byte // nil when gzip makes the file no smaller.
	gzETag      string
}

// staticFiles are web.Assets by name, prepared at the first call (New
// makes it, through the route table).
var staticFiles = sync.OnceValue(func() map[string]*staticFile {
	entries, err := web.Assets.ReadDir(".")
	if err != nil {
		panic(fmt.Sprintf("read the embedded pages: %v", err))
	}
	files := make(map[string]*staticFile, len(entries))
	for _, e := range entries {
		body, err := web.Assets.ReadFile(e.Name())
		if err != nil {
			panic(fmt.Sprintf("read the embedded page %s: %v", e.Name(), err))
		}
		files[e.Name()] = prepareStatic(e.Name(), body)
	}
	return files
})

// prepareStatic prepares the file name with its content body.
func prepareStatic(name string, body []byte) *staticFile {
	f := &staticFile{contentType: mime.TypeByExtension(path.Ext(name)), body: body, etag: strongETag(body)}
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		panic(err) // Only for a level out of range.
	}
	zw.Write(body) // A bytes.Buffer takes every write.
	zw.Close()
	if buf.Len() < len(body) {
		f.gz = buf.Bytes()
		f.gzETag = strongETag(f.gz)
	}
	return f
}

// staticFileNamed returns the prepared file name of web.Assets; a name
// that is not embedded is a mistake of the route table.
func staticFileNamed(name string) *staticFile {
	f, ok := staticFiles()[name]
	if !ok {
		panic("no embedded page " + name)
	}
	return f
}

// strongETag is a strong entity tag of exactly the bytes b: the first 128
// bits of their SHA-256, so two representations (a file and its gzip
// compression, or a file before and after an upgrade) never share one.
func strongETag(b []byte) string {
	sum := sha256.Sum256(b)
	return `"` + base64.RawURLEncoding.EncodeToString(sum[:16]) + `"`
}

// serve answers r with the file: compressed with gzip when the file has a
// smaller compression and the request accepts it, else as it is, with Vary
// saying that the choice follows Accept-Encoding. With validators the
// answer carries the ETag of the representation chosen, and a request
// whose If-None-Match names it gets 304 Not Modified without a body;
// without, it is always the whole file. HEAD gets the header fields of GET
// and no body. Range requests get the whole file, which HTTP allows: the
// pages load their files whole.
func (f *staticFile) serve(w http.ResponseWriter, r *http.Request, validators bool) {
	h := w.Header()
	body, etag := f.body, f.etag
	if f.gz != nil {
		h.Add("Vary", "Accept-Encoding")
		if acceptsGzip(r.Header.Values("Accept-Encoding")) {
			body, etag = f.gz, f.gzETag
			h.Set("Content-Encoding", "gzip")
		}
	}
	if validators {
		h.Set("ETag", etag)
		if ifNoneMatchNames(r.Header.Values("If-None-Match"), etag) {
			// A 304 carries the validator and the caching fields of the
			// 200 it stands for, but no metadata of a body.
			h.Del("Content-Encoding")
			w.WriteHeader(http.StatusNotModified)
			return
		}
	}
	h.Set("Content-Type", f.contentType)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		w.Write(body)
	}
}

// ifNoneMatchNames reports whether the If-None-Match field values are "*"
// or name etag, compared weakly (RFC 9110, sections 13.1.2 and 8.8.3.2: a
// W/ prefix does not count). A list that stops being a list of entity
// tags names nothing from there on.
func ifNoneMatchNames(values []string, etag string) bool {
	for _, v := range values {
		rest := strings.TrimSpace(v)
		for rest != "" {
			switch {
			case rest[0] == ',':
				rest = strings.TrimLeft(rest[1:], " \t")
				continue
			case rest[0] == '*':
				return true
			}
			rest = strings.TrimPrefix(rest, "W/")
			end := strings.IndexByte(rest[min(1, len(rest)):], '"')
			if rest == "" || rest[0] != '"' || end < 0 {
				break
			}
			if rest[:end+2] == etag {
				return true
			}
			rest = strings.TrimLeft(rest[end+2:], " \t")
		}
	}
	return false
}

// acceptsGzip reports whether the Accept-Encoding field values accept
// gzip (RFC 9110, section 12.5.3): gzip (or its alias x-gzip) is named
// with a quality above 0, or it is not named and * is, with a quality
// above 0; a quality that is not a number from 0 to 1 counts as 0.
// Without the field the file goes as it is: RFC 9110 lets a server choose
// any coding then, but a client that names none may decode none.
func acceptsGzip(values []string) bool {
	gz, star := -1.0, -1.0 // The qualities given; -1 when not named.
	for _, v := range values {
		for element := range strings.SplitSeq(v, ",") {
			coding, params, _ := strings.Cut(element, ";")
			q := 1.0
			for param := range strings.SplitSeq(params, ";") {
				name, value, ok := strings.Cut(param, "=")
				if !ok || !strings.EqualFold(strings.TrimSpace(name), "q") {
					continue
				}
				if n, err := strconv.ParseFloat(strings.TrimSpace(value), 64); err == nil && n >= 0 && n <= 1 {
					q = n
				} else {
					q = 0
				}
			}
			switch strings.ToLower(strings.TrimSpace(coding)) {
			case "gzip", "x-gzip":
				gz = max(gz, q)
			case "*":
				star = max(star, q)
			}
		}
	}
	if gz >= 0 {
		return gz > 0
	}
	return star > 0
}
