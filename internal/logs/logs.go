// Package logs makes the daemon's logger: one line per record, as text or
// JSON, from a level on (--log-level), and every duration in milliseconds.
//
// A duration attribute "latency" of 1.234567 ms is written as
// "latency_ms": 1.235 (JSON) or latency_ms=1.235 (text): a number of
// milliseconds to the microsecond, which log tools can compare and add up,
// under a name that says its unit. Go's own formats say neither the same
// way (JSON writes nanoseconds, text writes "1.234567ms" or "1m0s"), so
// every duration of every line goes through this one rule, also those a
// later log call adds.
package logs

import (
	"fmt"
	"io"
	"log/slog"
	"math"
	"strconv"
	"strings"
	"time"
)

// Formats are the names of the line formats New accepts.
var Formats = []string{"text", "json"}

// Levels are the names of the levels ParseLevel accepts, lowest first.
var Levels = []string{"debug", "info", "warn", "error"}

var levels = map[string]slog.Level{"debug": slog.LevelDebug, "info": slog.LevelInfo, "warn": slog.LevelWarn, "error": slog.LevelError}

// ParseLevel returns the level named name, one of Levels.
func ParseLevel(name string) (slog.Level, error) {
	if l, ok := levels[name]; ok {
		return l, nil
	}
	return 0, fmt.Errorf("unknown log level %q: use %s", name, strings.Join(Levels, ", "))
}

// New returns a logger that writes the records of level and above to w in
// format (one of Formats), with every duration in milliseconds.
func New(w io.Writer, format string, level slog.Leveler) (*slog.Logger, error) {
	opts := &slog.HandlerOptions{Level: level, ReplaceAttr: InMilliseconds}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("unknown log format %q: use %s", format, strings.Join(Formats, " or "))
}

// InMilliseconds is the slog.HandlerOptions.ReplaceAttr that writes a
// duration attribute k as k_ms, a number of milliseconds rounded to the
// microsecond (Milliseconds); a name that ends in _ms already keeps it.
// Every other attribute passes as it is.
func InMilliseconds(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() != slog.KindDuration {
		return a
	}
	key := a.Key
	if !strings.HasSuffix(key, "_ms") {
		key += "_ms"
	}
	return slog.Any(key, Milliseconds(a.Value.Duration()))
}

// Millis is a number of milliseconds, written in full (1.235, 259200000),
// never in exponent form, in text and JSON alike.
type Millis float64

// Milliseconds returns d in milliseconds, rounded to the microsecond.
func Milliseconds(d time.Duration) Millis {
	return Millis(math.Round(float64(d)/float64(time.Microsecond)) / 1000)
}

func (m Millis) String() string { return strconv.FormatFloat(float64(m), 'f', -1, 64) }

// MarshalJSON writes m as a JSON number.
func (m Millis) MarshalJSON() ([]byte, error) { return []byte(m.String()), nil }

// MarshalText writes m as the text handler shows it.
func (m Millis) MarshalText() ([]byte, error) { return []byte(m.String()), nil }
