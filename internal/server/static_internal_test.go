package server

import (
	"strings"
	"testing"
)

func TestAcceptsGzip(t *testing.T) {
	for _, tt := range []struct {
		field string // Field values separated by "|"; "" for no field.
		want  bool
	}{
		{"", false},
		{"identity", false},
		{"gzip", true},
		{"GZip", true},
		{"x-gzip", true},
		{"gzip, deflate, br, zstd", true},
		{"br;q=1.0, gzip;q=0.8, *;q=0.1", true},
		{"gzip;q=0", false},
		{"gzip; q=0.000", false},
		{"gzip;Q=0", false},
		{"gzip;q=0, *", false},
		{"*", true},
		{"*;q=0", false},
		{"br, *;q=0", false},
		{"gzip;q=nonsense", false},
		{"gzip;q=2", false},
		{"gzip;level=9", true},
		{"br|gzip", true},
		{"gzip;q=0|gzip", true},
		{" , ,gzip", true},
	} {
		var values []string
		if tt.field != "" {
			values = strings.Split(tt.field, "|")
		}
		if got := acceptsGzip(values); got != tt.want {
			t.Errorf("acceptsGzip(%q) = %v, want %v", values, got, tt.want)
		}
	}
}

func TestIfNoneMatchNames(t *testing.T) {
	const etag = `"abc"`
	for _, tt := range []struct {
		field string // Field values separated by "|"; "" for no field.
		want  bool
	}{
		{"", false},
		{`"abc"`, true},
		{`W/"abc"`, true},
		{`"x", "abc"`, true},
		{`"x",W/"abc"`, true},
		{`"x"|"abc"`, true},
		{"*", true},
		{`"abcd"`, false},
		{`"ab"`, false},
		{`abc`, false},
		{`"x", abc, "abc"`, false}, // Not a list of entity tags from abc on.
		{`"abc`, false},
		{`"a,b", "abc"`, true},
		{`W/`, false},
		{`"`, false},
	} {
		var values []string
		if tt.field != "" {
			values = strings.Split(tt.field, "|")
		}
		if got := ifNoneMatchNames(values, etag); got != tt.want {
			t.Errorf("ifNoneMatchNames(%q, %s) = %v, want %v", values, etag, got, tt.want)
		}
	}
}
