package intent

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"strings"
)

// socketPrefix starts the Server of an intent sent over a Unix socket.
const socketPrefix = "unix:"

// SocketServer returns the normalised Server for the Unix socket at path:
// "unix:" followed by the absolute, cleaned path.
func SocketServer(path string) (string, error) {
	if path == "" {
		return "", errors.New("socket path is empty")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("socket path %q: %w", path, err)
	}
	return socketPrefix + abs, nil
}

// URLServer returns the normalised Server for the base URL raw of a reserved
// reachable over TCP: scheme and host in lower case, the scheme's default
// port dropped, no trailing slash. It refuses URLs that are not http or
// https, that have no host, or that carry user information, a query or a
// fragment (user information would put a secret into the state file).
func URLServer(raw string) (string, error) {
	if host, port, err := net.SplitHostPort(raw); err == nil && host != "" && isPort(port) {
		return "", fmt.Errorf("server URL %q has no scheme: write http://%s (or https:// behind TLS)", raw, raw)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("server URL %q: %w", raw, err)
	}
	scheme := strings.ToLower(u.Scheme)
	switch {
	case scheme != "http" && scheme != "https":
		return "", fmt.Errorf("server URL %q: the scheme must be http or https", raw)
	case u.Opaque != "" || u.Host == "":
		return "", fmt.Errorf("server URL %q: it has no host", raw)
	case u.User != nil:
		return "", fmt.Errorf("server URL %q: user information is not allowed; pass credentials with --token", raw)
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || u.RawFragment != "":
		return "", fmt.Errorf("server URL %q: a query or fragment is not allowed", raw)
	}
	host, port := strings.ToLower(u.Hostname()), u.Port()
	if host == "" {
		return "", fmt.Errorf("server URL %q: it has no host", raw)
	}
	if (scheme == "http" && port == "80") || (scheme == "https" && port == "443") {
		port = ""
	}
	if strings.Contains(host, ":") {
		host = strings.Replace(host, "%", "%25", 1) // An IPv6 zone, escaped again.
	}
	hostport := host
	switch {
	case port != "":
		hostport = net.JoinHostPort(host, port)
	case strings.Contains(host, ":"):
		hostport = "[" + host + "]"
	}
	return scheme + "://" + hostport + strings.TrimRight(u.EscapedPath(), "/"), nil
}

// validServer checks that s is a Server as SocketServer or URLServer make it.
func validServer(s string) error {
	if s == "" {
		return errors.New("member \"server\" is missing")
	}
	if path, ok := strings.CutPrefix(s, socketPrefix); ok {
		if !filepath.IsAbs(path) || filepath.Clean(path) != path {
			return fmt.Errorf("server %q is not \"unix:\" and an absolute, clean socket path", s)
		}
		return nil
	}
	if n, err := URLServer(s); err != nil || n != s {
		return fmt.Errorf("server %q is not a normalised http or https URL", s)
	}
	return nil
}

// isPort reports whether s is a port number: decimal digits only.
func isPort(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
