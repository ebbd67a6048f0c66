package peercred

import (
	"net"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestGetReadsOwnCredentials: the peer of a connection to ourselves has
// our uid, gid and supplementary groups.
func TestGetReadsOwnCredentials(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	cred, err := Get(s)
	if err != nil {
		t.Fatal(err)
	}
	groups, err := os.Getgroups()
	if err != nil {
		t.Fatal(err)
	}
	var want []uint32
	for _, g := range groups {
		want = append(want, uint32(g))
	}
	got := slices.Clone(cred.Groups)
	slices.Sort(got)
	slices.Sort(want)
	if cred.UID != uint32(os.Getuid()) || cred.GID != uint32(os.Getgid()) || !slices.Equal(got, want) {
		t.Errorf("Get = %+v, want uid %d gid %d groups %v", cred, os.Getuid(), os.Getgid(), want)
	}
}
