package cli

import (
	"fmt"
	"io"
	"sync"
	"time"
)

// spinnerAfter is how long a send waits for its answer before reservectl
// shows that it is waiting.
const spinnerAfter = time.Second

// waiting shows, on a terminal and without --json, a spinner on stderr once
// a send has waited spinnerAfter for its answer, until the returned stop is
// called, which clears it again. Elsewhere it does nothing.
func (env *commandEnv) waiting(what string) (stop func()) {
	if env.json || !isTerminal(env.stderr) {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		spin(env.stderr, what, done)
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			close(done)
			wg.Wait()
		})
	}
}

// spin draws the spinner on w after spinnerAfter until done is closed,
// then clears the line if it drew anything.
func spin(w io.Writer, what string, done <-chan struct{}) {
	select {
	case <-done:
		return
	case <-time.After(spinnerAfter):
	}
	frames := []rune("⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏")
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	start := time.Now().Add(-spinnerAfter)
	for i := 0; ; i++ {
		fmt.Fprintf(w, "\r%c %s (%ds; Ctrl-C stops waiting and keeps the intent open)", frames[i%len(frames)], what, int(time.Since(start).Seconds()))
		select {
		case <-done:
			fmt.Fprint(w, "\r\033[K")
			return
		case <-tick.C:
		}
	}
}
