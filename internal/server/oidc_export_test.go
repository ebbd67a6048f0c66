package server

import "time"

// OIDCFlows exposes the store of sign-ins in progress to the tests.
type OIDCFlows struct{ f *oidcFlows }

// NewOIDCFlows returns an empty store on the clock now.
func NewOIDCFlows(now func() time.Time) OIDCFlows { return OIDCFlows{newOIDCFlows(now)} }

// Add remembers a flow with nonce and returns its state.
func (f OIDCFlows) Add(nonce string) string {
	return f.f.add(oidcFlow{browser: "b", nonce: nonce, verifier: "v"})
}

// Take takes the flow of state and returns its nonce.
func (f OIDCFlows) Take(state string) (string, bool) {
	fl, ok := f.f.take(state)
	return fl.nonce, ok
}

// MaxOIDCFlows is how many sign-ins may be in progress.
const MaxOIDCFlows = maxOIDCFlows
