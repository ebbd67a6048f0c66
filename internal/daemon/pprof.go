package daemon

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"
)

// checkPprofAddr refuses a --pprof-listen address that is not on loopback.
// The profiles have no authentication, so only local processes may reach
// them: the host must be a loopback IP address or "localhost".
func checkPprofAddr(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--pprof-listen %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); host == "localhost" || ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("--pprof-listen %q is not a loopback address: the Go profiles have no authentication, so they are served only on loopback, e.g. --pprof-listen 127.0.0.1:6060 or [::1]:6060", addr)
}

// listenPprof opens the pprof listener at addr, which checkPprofAddr
// accepted, and makes sure that it is on loopback (a "localhost" that
// resolves elsewhere is refused).
func listenPprof(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("pprof listen on %s: %w", addr, err)
	}
	if a, ok := ln.Addr().(*net.TCPAddr); !ok || !a.IP.IsLoopback() {
		ln.Close()
		return nil, fmt.Errorf("--pprof-listen %q listens on %s, which is not a loopback address", addr, ln.Addr())
	}
	return ln, nil
}

// servePprof serves the Go runtime profiles (net/http/pprof) on ln, for
// profiling a daemon under load, behind hosts, the API's check of the Host
// header on loopback listeners (server.LoopbackHosts), so that a web page
// cannot reach them by DNS rebinding. It is off unless `reserved serve
// --pprof-listen` names a loopback address. /debug/pprof/cmdline is not
// served: the command line can hold secrets (a --dsn password, a
// credential in a --notify-url), and profiling does not need it (go tool
// pprof reads /debug/pprof/profile and /debug/pprof/symbol). The returned
// function stops it.
func servePprof(ln net.Listener, hosts func(http.Handler) http.Handler, logger *slog.Logger) (stop func()) {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.Handle("/debug/pprof/cmdline", http.NotFoundHandler())
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: hosts(mux), ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			logger.Warn("pprof listener failed", "error", err)
		}
	}()
	logger.Warn("serving Go profiles without authentication", "pprof", ln.Addr().String())
	return func() { srv.Close() }
}
