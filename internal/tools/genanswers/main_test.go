package main

import (
	"bytes"
	"testing"

	"github.com/reserve/reserve/web"
)

// TestAnswersJSIsFresh fails when web/answers.js is not what "go generate
// ./web" writes from the table of answers today: run it and commit.
func TestAnswersJSIsFresh(t *testing.T) {
	got, err := web.Assets.ReadFile("answers.js")
	if err != nil {
		t.Fatal(err)
	}
	if want := render(); !bytes.Equal(got, want) {
		t.Errorf("web/answers.js is stale: run \"go generate ./web\" and commit it.\nit has:\n%s\nthe table gives:\n%s", got, want)
	}
}
