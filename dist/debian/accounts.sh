# accounts.sh: the rules of reserve's maintainer scripts for the system
# user and group "reserved" the daemon runs as. scripts/package.sh puts it
# into preinst, postinst and postrm where they source it.
#
# The package adopts an existing user "reserved" only if it is a system
# account (a uid from 1 to the last system uid) without a login shell: the
# daemon runs as that user, which makes it an admin of the socket, so a
# person's login must never become it. It records in $accounts what
# postinst created, and purging removes only that.
#
# DPKG_ROOT (set by dpkg --root, and by the tests) names the system to act
# on; the account tools then work on its files.

root=${DPKG_ROOT:-}
# accounts lists, one a line, what postinst created: "user", "group".
accounts=$root/var/lib/reserve/accounts

# prefix runs an account tool on the system of DPKG_ROOT.
prefix() {
	if [ -n "$root" ]; then
		"$@" --prefix "$root"
	else
		"$@"
	fi
}

# entry prints the passwd or group entry named reserved, if there is one.
entry() {
	if [ -n "$root" ]; then
		grep '^reserved:' "$root/etc/$1" || true
	else
		getent "$1" reserved || true
	fi
}

# setting prints the value of setting $2 of the configuration file $1
# (KEY VALUE as in login.defs, or KEY=VALUE as in adduser.conf).
setting() {
	[ -r "$root$1" ] || return 0
	sed -n "s/^[[:space:]]*$2[[:space:]=][[:space:]=]*\"\{0,1\}\([0-9]*\).*/\1/p" "$root$1" | tail -n 1
}

# last_system_uid prints the highest uid of a system account:
# SYS_UID_MAX of login.defs, else LAST_SYSTEM_UID of adduser.conf, else
# one below the first uid of people (UID_MIN), else 999.
last_system_uid() {
	last=$(setting /etc/login.defs SYS_UID_MAX)
	[ -n "$last" ] || last=$(setting /etc/adduser.conf LAST_SYSTEM_UID)
	if [ -z "$last" ]; then
		first=$(setting /etc/login.defs UID_MIN)
		last=$((${first:-1000} - 1))
	fi
	echo "$last"
}

# check_user fails, saying why, when a user reserved exists that the
# package may not adopt: one with a uid outside the system range, or with
# a login shell.
check_user() {
	user=$(entry passwd)
	[ -n "$user" ] || return 0
	uid=$(echo "$user" | cut -d: -f3)
	shell=$(echo "$user" | cut -d: -f7)
	last=$(last_system_uid)
	case $shell in
	*/nologin | */false) login=no ;;
	*) login=yes ;;
	esac
	if [ "$uid" -ge 1 ] && [ "$uid" -le "$last" ] && [ $login = no ]; then
		return 0
	fi
	echo "reserve: refusing to install: a user \"reserved\" exists (uid $uid, shell ${shell:-none}) that is not a system account without a login shell (uid 1 to $last, shell nologin or false). The daemon runs as that user, which makes it an admin of reserve's socket. Rename or remove that user (the package then creates a system account of its own), or make it a system account without a login shell, and install again." >&2
	return 1
}

# created reports whether postinst recorded that it created $1 (user or
# group).
created() {
	[ -r "$accounts" ] && grep -qx "$1" "$accounts"
}

# record notes that postinst created $1 (user or group).
record() {
	mkdir -p "$(dirname "$accounts")"
	created "$1" || echo "$1" >>"$accounts"
}
