package api

import (
	"fmt"

	"github.com/reserve/reserve/internal/strictjson"
)

// The routes of signing in without a login link made on the machine.
const (
	// PathSignIn answers the sign-in methods the daemon offers (anyone).
	PathSignIn = "/api/v1/sign-in"
	// PathSignInEmail mails a one-time sign-in link to an address.
	PathSignInEmail = "/api/v1/sign-in/email"
)

// SignInMethodEmail is the method of PathSignInEmail in SignInMethods.
const SignInMethodEmail = "email"

// SignInMethods is the answer to GET /api/v1/sign-in: the ways a person
// can sign in to the form besides a login link made with 'reservectl
// login-link' (which always works), e.g. ["email"]; empty when there are
// none.
type SignInMethods struct {
	Methods []string `json:"methods"`
	// OIDCName is what the daemon calls its identity provider, when it
	// offers one.
	OIDCName string `json:"oidc_name,omitempty"`
}

// Languages are the languages of the mails and pages people get.
var Languages = []string{"en", "de"}

// EmailSignInRequest is the body of POST /api/v1/sign-in/email: the
// address to mail a link to and, optionally, the language of the mail
// ("en" or "de"; without it the request's Accept-Language decides).
type EmailSignInRequest struct {
	Email    string `json:"email"`
	Language string `json:"language,omitempty"`
}

// DecodeEmailSignInRequest decodes an EmailSignInRequest strictly:
// "email" is required (whether it is an address is the engine's
// decision), "language" is "en" or "de" when present.
func DecodeEmailSignInRequest(body []byte) (EmailSignInRequest, error) {
	var r EmailSignInRequest
	err := DecodeStrict(body, []strictjson.Member{
		strictjson.StringMember("email", true, nil, &r.Email),
		strictjson.StringMember("language", false, func(s string) error {
			for _, l := range Languages {
				if s == l {
					return nil
				}
			}
			return fmt.Errorf("must be \"en\" or \"de\", not %q", s)
		}, &r.Language),
	})
	return r, err
}

// EmailSignInResponse is the answer (202) to POST /api/v1/sign-in/email,
// the same for every address: whether a link was mailed is not said.
type EmailSignInResponse struct {
	Status    string `json:"status"`
	ExpiresIn int    `json:"expires_in_seconds"`
}
