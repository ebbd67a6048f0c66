package server

import (
	"net/http"
	"sync"
	"time"

	"github.com/reserve/reserve/internal/api"
	"github.com/reserve/reserve/internal/engine"
)

// profile is what an identity provider said of the person behind a browser
// session: the display name, and the email address only if the provider
// verified it. It is kept with the session in this process's memory and
// never chooses the actor; the display name is stored in the actor's
// profile (engine.Profile) at sign-in when that has none, and this one
// only answers while the stored profile cannot be read into whoami.
type profile struct {
	DisplayName string
	Email       string
}

// maxProfiles bounds the profiles kept.
const maxProfiles = 100000

// profiles keeps the profiles by the hash of the login code that carries
// them to a session, then by the hash of that session, until either
// expires.
type profiles struct {
	mu  sync.Mutex
	now func() time.Time
	m   map[string]profileEntry
}

type profileEntry struct {
	profile
	expires time.Time
}

func newProfiles(now func() time.Time) *profiles {
	return &profiles{now: now, m: map[string]profileEntry{}}
}

// put keeps p under hash for ttl. When maxProfiles are kept, the expired
// ones go first; if none has, p is not kept (the session works without
// it).
func (ps *profiles) put(hash string, p profile, ttl time.Duration) {
	if p == (profile{}) {
		return
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	now := ps.now()
	if len(ps.m) >= maxProfiles {
		for h, e := range ps.m {
			if !now.Before(e.expires) {
				delete(ps.m, h)
			}
		}
		if len(ps.m) >= maxProfiles {
			return
		}
	}
	ps.m[hash] = profileEntry{p, now.Add(ttl)}
}

// get returns the profile under hash, if it has not expired.
func (ps *profiles) get(hash string) profile {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	e, ok := ps.m[hash]
	if !ok || !ps.now().Before(e.expires) {
		delete(ps.m, hash)
		return profile{}
	}
	return e.profile
}

// move hands the profile under from to to, for ttl.
func (ps *profiles) move(from, to string, ttl time.Duration) {
	p := ps.get(from)
	ps.forget(from)
	ps.put(to, p, ttl)
}

// forget drops the profile under hash.
func (ps *profiles) forget(hash string) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	delete(ps.m, hash)
}

// whoAmI is the answer of GET /api/v1/whoami: the principal, the kind of
// subject its actor is bound to (omitted when none is), the display name
// and language of its stored profile, and the email address the identity
// provider verified for the person behind the request's browser session.
type whoAmI struct {
	engine.Principal
	SubjectKind string `json:"subject_kind,omitempty"`
	DisplayName string `json:"display_name,omitempty"`
	Language    string `json:"language,omitempty"`
	Email       string `json:"email,omitempty"`
}

// whoAmIOf is the answer of GET /api/v1/whoami for who. A socket peer's
// actor is its uid's binding, which its request resolved already, so its
// answer reads nothing more and keeps answering from the engine's caches
// when the store cannot serve; a token's or a session's actor is looked
// up once, for the kind of its subject and, for a session, the address
// it is bound to when the identity provider gave none; then its stored
// profile is read. The display name is the stored one, else the one the
// identity provider gave this session.
func (s *Server) whoAmIOf(r *http.Request, who engine.Principal) (whoAmI, error) {
	out := whoAmI{Principal: who}
	if connOf(r.Context()).socket {
		out.SubjectKind = engine.SubjectUID
		return out, nil
	}
	b, _, err := s.eng.SubjectOf(r.Context(), who.Actor)
	if err != nil {
		return whoAmI{}, err
	}
	out.SubjectKind = b.Kind
	stored, err := s.eng.ProfileOf(r.Context(), who.Actor)
	if err != nil {
		return whoAmI{}, err
	}
	out.DisplayName, out.Language = stored.DisplayName, stored.Language
	if session := sessionOf(r); session != "" {
		p := s.profiles.get(engine.HashToken(session))
		out.Email = p.Email
		if out.DisplayName == "" {
			out.DisplayName = p.DisplayName
		}
		if out.Email == "" {
			out.Email = engine.EmailOfBinding(b)
		}
	}
	return out, nil
}

// putMe is PUT /api/v1/me: the caller changes its own profile and gets it
// back as stored. A bad member is refused naming it, and nothing is
// stored.
func (s *Server) putMe(w http.ResponseWriter, r *http.Request, who engine.Principal) error {
	change, err := decodeBody(w, r, api.DecodeProfileChange)
	if err != nil {
		return err
	}
	p, err := s.eng.ChangeProfile(r.Context(), who.Actor, change)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, p)
}
