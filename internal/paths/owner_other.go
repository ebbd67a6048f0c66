//go:build !unix

package paths

// CheckSocketOwner knows no file owners on this system and passes.
func CheckSocketOwner(string) error { return nil }
