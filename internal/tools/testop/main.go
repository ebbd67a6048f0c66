// Command testop is a small OpenID Provider for the tests of reserved's
// sign-in: the example provider of github.com/zitadel/oidc (its storage
// and its username and password login page) with two people, alice
// (groups staff and reserve-admins) and bob (group staff), both with the
// password "secret", and a client "reserve" with the secret "reserve-secret"
// that may redirect to any loopback port's /oidc/callback.
//
// It prints "issuer <URL>" on its standard output once it serves, and
// answers test hooks under /testop/ (POST, loopback only, for tests only):
//
//	/testop/rename?id=alice&username=NAME  change a person's preferred_username (and login name)
//	/testop/rotate                          sign with a new key, and publish only that one
//	/testop/mode?id_token=MODE              how the next ID tokens come out: normal,
//	                                        foreign-key (signed by an unpublished key under
//	                                        the published key's id), wrong-nonce, expired
//
// It must never be used for anything but tests.
package main

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/zitadel/oidc/v3/example/server/exampleop"
	"github.com/zitadel/oidc/v3/example/server/storage"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
	"golang.org/x/text/language"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "loopback address to serve on")
	flag.Parse()
	if err := run(*listen); err != nil {
		fmt.Fprintln(os.Stderr, "testop:", err)
		os.Exit(1)
	}
}

func run(listen string) error {
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	issuer := "http://" + ln.Addr().String()
	users := &users{m: map[string]*storage.User{
		"alice": {ID: "alice-sub-0001", Username: "alice", Password: "secret", FirstName: "Alice", LastName: "Liddell", Email: "alice@example.org", EmailVerified: true, PreferredLanguage: language.English},
		"bob":   {ID: "bob-sub-0002", Username: "bob", Password: "secret", FirstName: "Bob", LastName: "Builder", Email: "bob@example.org", EmailVerified: false, PreferredLanguage: language.German},
	}, groups: map[string][]string{"alice-sub-0001": {"staff", "reserve-admins"}, "bob-sub-0002": {"staff"}}}
	storage.RegisterClients(storage.WebClient("reserve", "reserve-secret", "http://127.0.0.1/oidc/callback"))
	st := &store{Storage: storage.NewStorage(users), users: users, mode: "normal"}
	st.key = newKey()
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	router := exampleop.SetupServer(issuer, st, logger, false)
	mux := http.NewServeMux()
	mux.Handle("/", router)
	mux.HandleFunc("POST /testop/rename", func(w http.ResponseWriter, r *http.Request) {
		if !users.rename(r.FormValue("id"), r.FormValue("username")) {
			http.Error(w, "no such person", http.StatusNotFound)
		}
	})
	mux.HandleFunc("POST /testop/rotate", func(w http.ResponseWriter, r *http.Request) { st.rotate() })
	mux.HandleFunc("POST /testop/mode", func(w http.ResponseWriter, r *http.Request) {
		switch m := r.FormValue("id_token"); m {
		case "normal", "foreign-key", "wrong-nonce", "expired":
			st.setMode(m)
		default:
			http.Error(w, "unknown mode", http.StatusBadRequest)
		}
	})
	fmt.Printf("issuer %s\n", issuer)
	return (&http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}).Serve(ln)
}

// users is the provider's people, by login name; rename changes a login
// name (which is also the preferred_username), never the sub.
type users struct {
	mu     sync.Mutex
	m      map[string]*storage.User
	groups map[string][]string // By sub.
}

func (u *users) GetUserByID(id string) *storage.User {
	u.mu.Lock()
	defer u.mu.Unlock()
	for _, p := range u.m {
		if p.ID == id {
			c := *p
			return &c
		}
	}
	return nil
}

func (u *users) GetUserByUsername(name string) *storage.User {
	u.mu.Lock()
	defer u.mu.Unlock()
	if p, ok := u.m[name]; ok {
		c := *p
		return &c
	}
	return nil
}

func (u *users) ExampleClientID() string { return "service" }

func (u *users) rename(old, name string) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	p, ok := u.m[old]
	if !ok || name == "" {
		return false
	}
	delete(u.m, old)
	p.Username = name
	u.m[name] = p
	return true
}

func (u *users) groupsOf(sub string) []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.groups[sub]
}

// key is an RSA signing key with its id.
type key struct {
	id  string
	key *rsa.PrivateKey
}

func newKey() *key {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		panic(err)
	}
	return &key{id: rand.Text(), key: k}
}

func (k *key) SignatureAlgorithm() jose.SignatureAlgorithm { return jose.RS256 }
func (k *key) Algorithm() jose.SignatureAlgorithm          { return jose.RS256 }
func (k *key) Use() string                                 { return "sig" }
func (k *key) ID() string                                  { return k.id }
func (k *key) Key() any                                    { return k.key }

// public is the published half of a key.
type public struct{ *key }

func (p public) Key() any { return &p.key.key.PublicKey }

// store is the example storage with this provider's people, groups,
// keys and test modes.
type store struct {
	*storage.Storage
	users *users

	mu   sync.Mutex
	key  *key
	mode string
}

func (s *store) rotate() {
	k := newKey()
	s.mu.Lock()
	s.key = k
	s.mu.Unlock()
}

func (s *store) setMode(m string) {
	s.mu.Lock()
	s.mode = m
	s.mu.Unlock()
}

func (s *store) state() (*key, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.key, s.mode
}

func (s *store) SigningKey(context.Context) (op.SigningKey, error) {
	k, mode := s.state()
	if mode == "foreign-key" {
		return &key{id: k.id, key: newKey().key}, nil
	}
	return k, nil
}

func (s *store) SignatureAlgorithms(context.Context) ([]jose.SignatureAlgorithm, error) {
	return []jose.SignatureAlgorithm{jose.RS256}, nil
}

func (s *store) KeySet(context.Context) ([]op.Key, error) {
	k, _ := s.state()
	return []op.Key{public{k}}, nil
}

func (s *store) GetClientByClientID(ctx context.Context, id string) (op.Client, error) {
	c, err := s.Storage.GetClientByClientID(ctx, id)
	if err != nil {
		return nil, err
	}
	return &client{Client: c, s: s}, nil
}

func (s *store) AuthRequestByCode(ctx context.Context, code string) (op.AuthRequest, error) {
	ar, err := s.Storage.AuthRequestByCode(ctx, code)
	if _, mode := s.state(); err == nil && mode == "wrong-nonce" {
		return wrongNonce{ar}, nil
	}
	return ar, err
}

func (s *store) SetUserinfoFromScopes(ctx context.Context, info *oidc.UserInfo, userID, clientID string, scopes []string) error {
	if err := s.Storage.SetUserinfoFromScopes(ctx, info, userID, clientID, scopes); err != nil {
		return err
	}
	if g := s.users.groupsOf(userID); g != nil {
		info.AppendClaims("groups", g)
	}
	return nil
}

// wrongNonce is an auth request that gives its ID token another nonce.
type wrongNonce struct{ op.AuthRequest }

func (wrongNonce) GetNonce() string { return "not-the-nonce-that-was-sent" }

// client is the example client that puts the profile claims into the ID
// token, may redirect to any loopback port, and in the expired mode gets
// ID tokens that expired an hour ago.
type client struct {
	op.Client
	s *store
}

func (c *client) IDTokenUserinfoClaimsAssertion() bool { return true }

func (c *client) IDTokenLifetime() time.Duration {
	if _, mode := c.s.state(); mode == "expired" {
		return -time.Hour
	}
	return time.Hour
}

func (c *client) RedirectURIGlobs() []string {
	return []string{"http://127.0.0.1:*/oidc/callback"}
}

func (c *client) PostLogoutRedirectURIGlobs() []string { return []string{"http://127.0.0.1:*/"} }
