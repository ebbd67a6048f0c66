// Package dist holds what the Debian package of reserve installs besides
// the binaries: the systemd units in dist/systemd and the maintainer scripts
// in dist/debian (scripts/package.sh builds the package). Its tests verify
// the units with systemd-analyze and install, run and remove the package.
package dist
