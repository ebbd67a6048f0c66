// Package dist holds what the Debian package of reserve installs besides
// the binaries: the systemd units in dist/systemd and the maintainer
// scripts, copyright file and lintian overrides in dist/debian
// (scripts/package.sh builds the package). Its tests verify the units with
// systemd-analyze, check the package with lintian, and install, run and
// remove it.
package dist
