#!/usr/bin/env bash
# package.sh builds the Debian package of reserve:
#
#   scripts/package.sh [VERSION]
#
# It builds reserved and reservectl, generates their man pages and shell
# completions from the command trees, and writes
# $PACKAGE_OUT/reserve_<version>_<arch>.deb (PACKAGE_OUT defaults to
# dist/out). VERSION defaults to `git describe --tags --always --dirty`,
# made into a Debian version. GOARCH chooses the architecture.
#
# The package is built with plain `dpkg-deb --build --root-owner-group`
# rather than a packager such as nfpm: dpkg-deb is Debian's own tool, present
# wherever dpkg is, so building the package needs nothing installed, and the
# package's layout is spelled out here file by file.
set -euo pipefail
cd "$(dirname "$0")/.."

die() { echo "package.sh: $*" >&2; exit 1; }

if [ $# -gt 1 ]; then
  echo "usage: scripts/package.sh [VERSION]" >&2
  exit 2
fi

# debian_version turns a git description (v1.2.3-4-gabc1234-dirty) into a
# Debian version (1.2.3+4.gabc1234.dirty) that sorts after its tag and
# before the next.
debian_version() {
  local v=${1#v}
  v=${v/-/+}
  v=${v//[!A-Za-z0-9.+~]/.}
  printf '%s\n' "$v"
}

if [ $# -eq 1 ]; then
  version=$1
else
  described=$(git describe --tags --always --dirty) || die "git describe failed: give the version as an argument"
  if ! git describe --tags --abbrev=0 >/dev/null 2>&1; then
    # A bare commit sorts before any tagged version.
    described="0~git.$described"
  fi
  version=$(debian_version "$described")
fi
# Without a Debian revision a version is digits first, then letters, digits
# and . + ~ only.
[[ $version =~ ^[0-9][A-Za-z0-9.+~]*$ ]] ||
  die "version \"$version\" is not a Debian version: it starts with a digit and has only letters, digits and . + ~"

# The package's maintainer, in the control file and the changelog.
maintainer='Reserve maintainers <maintainers@reserve.dev>'

goarch=$(go env GOARCH)
case $goarch in
amd64 | arm64 | riscv64 | s390x) arch=$goarch ;;
386) arch=i386 ;;
arm) arch=armhf ;;
ppc64le) arch=ppc64el ;;
*) die "no Debian architecture known for GOARCH $goarch" ;;
esac

out=${PACKAGE_OUT:-dist/out}
mkdir -p "$out"
work=$(mktemp -d "${TMPDIR:-/tmp}/reserve-package.XXXXXX")
trap 'rm -rf "$work"' EXIT
root=$work/root

# The binaries carry their version and the commit they were built from
# (-buildvcs=true overrides a GOFLAGS=-buildvcs=false of the machine), and
# are static (CGO_ENABLED=0), so they run on any release's C library.
install -d "$root/usr/bin"
for cmd in reserved reservectl; do
  CGO_ENABLED=0 go build -buildvcs=true -trimpath \
    -ldflags "-s -w -X github.com/reserve/reserve/internal/version.Version=$version" \
    -o "$root/usr/bin/$cmd" "./cmd/$cmd"
done

# The man pages and the changelog are dated by the commit, not the day of
# the build.
source_date=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct)}
SOURCE_DATE_EPOCH=$source_date \
  go run ./internal/tools/gendocs -version "$version" "$work/docs"
install -d "$root/usr/share/man/man1"
for page in "$work"/docs/man/man1/*.1; do
  gzip -9n <"$page" >"$root/usr/share/man/man1/$(basename "$page").gz"
done
install -D -m 0644 -t "$root/usr/share/bash-completion/completions" "$work"/docs/completions/bash/*
install -D -m 0644 -t "$root/usr/share/zsh/vendor-completions" "$work"/docs/completions/zsh/*
install -D -m 0644 -t "$root/usr/share/fish/vendor_completions.d" "$work"/docs/completions/fish/*
install -D -m 0644 -t "$root/lib/systemd/system" dist/systemd/reserved.service dist/systemd/reserved.socket dist/systemd/reserved-tcp.socket
install -D -m 0644 -t "$root/usr/share/doc/reserve" README.md
install -D -m 0644 -t "$root/usr/share/doc/reserve/docs" docs/*.md
install -D -m 0644 dist/debian/copyright "$root/usr/share/doc/reserve/copyright"
install -D -m 0644 dist/debian/lintian-overrides "$root/usr/share/lintian/overrides/reserve"
# The environment file of reserved.service is the administrator's: a
# conffile, which dpkg keeps when it was changed, and root's alone, since
# it may hold a database password.
install -D -m 0600 dist/debian/reserved.default "$root/etc/default/reserved"

# A native package's changelog, in Debian's format, gzipped as policy asks:
# one entry for the version built, dated by its commit like the man pages.
# The project's changes are its git history.
commit=$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
{
  printf 'reserve (%s) unstable; urgency=medium\n\n' "$version"
  printf '  * Built from commit %s; the changes are in the git history of\n' "$commit"
  printf '    https://github.com/reserve/reserve.\n\n'
  printf ' -- %s  %s\n' "$maintainer" "$(LC_ALL=C date -u -R -d "@$source_date")"
} | gzip -9n >"$root/usr/share/doc/reserve/changelog.gz"
chmod 0644 "$root/usr/share/doc/reserve/changelog.gz"

# The maintainer scripts source dist/debian/accounts.sh, which is put in
# its place: a maintainer script has nothing but itself to read.
install -d "$root/DEBIAN"
for script in preinst postinst prerm postrm; do
  awk '$0 == ". dist/debian/accounts.sh" { while ((getline line < "dist/debian/accounts.sh") > 0) print line; close("dist/debian/accounts.sh"); next } { print }' \
    "dist/debian/$script" >"$root/DEBIAN/$script"
  chmod 0755 "$root/DEBIAN/$script"
done
# What dpkg checks the installed files against (debsums, dpkg --verify),
# as dh_md5sums writes it: every file but the conffiles, which dpkg tracks
# on its own.
echo /etc/default/reserved >"$root/DEBIAN/conffiles"
(cd "$root" && find . -path ./DEBIAN -prune -o -path ./etc -prune -o -type f -printf '%P\0' |
  LC_ALL=C sort -z | xargs -0 md5sum) >"$root/DEBIAN/md5sums"
chmod 0644 "$root/DEBIAN/conffiles" "$root/DEBIAN/md5sums"
cat >"$root/DEBIAN/control" <<CONTROL
Package: reserve
Version: $version
Architecture: $arch
Maintainer: $maintainer
Section: net
Priority: optional
Depends: passwd
Installed-Size: $(du -sk --exclude=DEBIAN "$root" | cut -f1)
Homepage: https://github.com/reserve/reserve
Description: idempotent workshop reservations over HTTP
 reserved is a daemon that serves an HTTP API on a Unix socket and a TCP
 address where one intended reservation has exactly one effect, however
 often its request is repeated. reservectl is its command-line client.
 The systemd units reserved.socket and reserved-tcp.socket activate
 reserved.service as the system user "reserved".
CONTROL

# Built aside and moved into place, so a failure leaves no partial package.
name=reserve_${version}_${arch}.deb
dpkg-deb --build --root-owner-group "$root" "$work/$name" >/dev/null
mv "$work/$name" "$out/$name"
echo "$out/$name"
