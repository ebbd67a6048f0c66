package server

import (
	"net/http"

	"github.com/reserve/reserve/internal/engine"
)

// The sign-in methods that GET /api/v1/sign-in can name.
const (
	// SignInOIDC is the sign-in through an OpenID Connect provider, at
	// OIDCStartPath.
	SignInOIDC = "oidc"
	// SignInLink is a login link made by 'reservectl login-link'; it is
	// always offered.
	SignInLink = "link"
)

// signInMethods is the answer of GET /api/v1/sign-in.
type signInMethods struct {
	Methods  []string `json:"methods"`
	OIDCName string   `json:"oidc_name,omitempty"`
}

// signIn is GET /api/v1/sign-in, open to anyone: the ways to sign in that
// this daemon offers, for the form's signed-out page.
func (s *Server) signIn(w http.ResponseWriter, _ *http.Request, _ engine.Principal) error {
	m := signInMethods{Methods: []string{}}
	if s.oidc != nil {
		m.Methods = append(m.Methods, SignInOIDC)
		m.OIDCName = s.oidc.cfg.Name
	}
	m.Methods = append(m.Methods, SignInLink)
	w.Header().Set("Cache-Control", "no-store")
	return writeJSON(w, http.StatusOK, m)
}
