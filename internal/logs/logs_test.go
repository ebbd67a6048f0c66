package logs_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/reserve/reserve/internal/logs"
)

// TestDurationsInMilliseconds: every duration attribute of a line, given
// as slog.Duration, as a time.Duration among the arguments or inside a
// group, is written as <name>_ms, a number of milliseconds to the
// microsecond, in both formats; other attributes are left alone.
func TestDurationsInMilliseconds(t *testing.T) {
	log := func(format string) string {
		var buf bytes.Buffer
		l, err := logs.New(&buf, format, slog.LevelInfo)
		if err != nil {
			t.Fatal(err)
		}
		l.Info("request", slog.Duration("duration", 1234567*time.Nanosecond), "timeout", 10*time.Second,
			"delay_ms", 3*time.Millisecond, slog.Group("delivery", "max_age", 72*time.Hour), "status", 200, "took", "5s")
		return buf.String()
	}
	var rec map[string]any
	dec := json.NewDecoder(strings.NewReader(log("json")))
	dec.UseNumber()
	if err := dec.Decode(&rec); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"duration_ms": "1.235", "timeout_ms": "10000", "delay_ms": "3", "status": "200"}
	for k, v := range want {
		if n, ok := rec[k].(json.Number); !ok || n.String() != v {
			t.Errorf("JSON %s = %#v, want the number %s", k, rec[k], v)
		}
	}
	if g, _ := rec["delivery"].(map[string]any); g == nil || g["max_age_ms"] != json.Number("259200000") {
		t.Errorf("JSON delivery group = %#v, want max_age_ms 259200000", rec["delivery"])
	}
	for _, gone := range []string{"duration", "timeout", "delay_ms_ms"} {
		if _, ok := rec[gone]; ok {
			t.Errorf("JSON line has %s: %v", gone, rec)
		}
	}
	if rec["took"] != "5s" {
		t.Errorf("a string attribute changed: took = %#v", rec["took"])
	}

	text := log("text")
	for _, want := range []string{" duration_ms=1.235 ", " timeout_ms=10000 ", " delay_ms=3 ", " delivery.max_age_ms=259200000 ", " status=200 ", " took=5s"} {
		if !strings.Contains(text, want) {
			t.Errorf("text line %q lacks %q", text, want)
		}
	}
}

// TestLevels: a logger writes the records of its level and above, and
// ParseLevel knows exactly the four level names.
func TestLevels(t *testing.T) {
	for _, name := range logs.Levels {
		level, err := logs.ParseLevel(name)
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		l, err := logs.New(&buf, "json", level)
		if err != nil {
			t.Fatal(err)
		}
		l.Debug("d")
		l.Info("i")
		l.Warn("w")
		l.Error("e")
		var got []string
		for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
			var rec map[string]any
			if err := json.Unmarshal([]byte(line), &rec); err != nil {
				t.Fatalf("%q: %v", line, err)
			}
			got = append(got, rec["msg"].(string))
		}
		want := map[string]string{"debug": "d i w e", "info": "i w e", "warn": "w e", "error": "e"}[name]
		if strings.Join(got, " ") != want {
			t.Errorf("--log-level %s wrote %v, want %s", name, got, want)
		}
	}
	for _, bad := range []string{"", "INFO", "warning", "trace"} {
		if _, err := logs.ParseLevel(bad); err == nil || !strings.Contains(err.Error(), "debug, info, warn, error") {
			t.Errorf("ParseLevel(%q) = %v, want a refusal naming the levels", bad, err)
		}
	}
	if _, err := logs.New(&bytes.Buffer{}, "xml", slog.LevelInfo); err == nil {
		t.Error("New accepted the format xml")
	}
}
