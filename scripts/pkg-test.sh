#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# pkg-test.sh COMMAND ... - the packaging steps of "make check" (each one
# a step of scripts/check.sh; run as root like CI).
#
#   lint DEBDIR        lintian on the packages in DEBDIR: no error, no
#                      warning (overrides in debian/*.lintian-overrides)
#   install DEBDIR     install the packages built by deb-build.sh in DEBDIR
#                      on this machine (dpkg -i, reinstalling the same
#                      version), after removing a DKMS registration of the
#                      same version that "make dkms-install" made from the
#                      tree (two registrations of zcx/<version> collide);
#                      zcx-dkms's postinst builds the module through DKMS
#   dkms KVER          make sure DKMS built and installed the packaged
#                      modules (zcx, zcx_ib) for kernel KVER, and check
#                      what modprobe will load there
#   make-install       "make install DESTDIR=tmp" then "make uninstall":
#                      the expected files, then nothing left
#   pkg-config OUTDIR  build the examples against the installed headers and
#                      libraries (pkg-config libzcx, no tree paths) into
#                      OUTDIR, and a libzcx-verbs program
#   guest OUTDIR TAPDIR   in the guest: run those programs against the
#                      installed libraries and the DKMS module, TAP output
#                      to TAPDIR/installed.tap
#   purge              remove the packages (dpkg --purge) and their DKMS
#                      module: the machine as before "make check"
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
version=$(sed -n 's/^PACKAGE_VERSION="*\([^"]*\)"*$/\1/p' "$top/dkms.conf")
packages=(zcx-dkms libzcx1 libzcx-verbs1 libzcx-pmix1 libzcx-dev zcx-utils)
multiarch=$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)
libdir=/usr/lib/$multiarch
# What ldd prints for the installed libzcx (/lib is /usr/lib on merged-usr).
ldd_re="=> (/usr)?/lib/$multiarch/libzcx\\.so\\.1 "

die() { echo "pkg-test: $*" >&2; exit 1; }

# Whether dpkg knows the module source directory as a package's.
src_owned() { dpkg-query -S "/usr/src/zcx-$version" > /dev/null 2>&1; }

cmd_install() {
	local debdir=${1:?install DEBDIR} debs=() p f=()
	for p in "${packages[@]}"; do
		f=("$debdir/${p}_${version}_"*.deb)
		[ -f "${f[0]}" ] || die "no $p $version package in $debdir (make deb)"
		debs+=("${f[0]}")
	done
	# A registration from the tree (make dkms-install): not the package's.
	if ! src_owned; then
		if [ -n "$(dkms status -m zcx -v "$version" 2>/dev/null)" ]; then
			echo "removing the DKMS registration zcx/$version made from the tree"
			dkms remove -m zcx -v "$version" --all
		fi
		rm -rf "/usr/src/zcx-$version"
	fi
	# The dependencies (dkms, libibverbs1, ...) are in install-deps.sh.
	DEBIAN_FRONTEND=noninteractive dpkg -i "${debs[@]}"
	dpkg-query -W "${packages[@]}"
}

cmd_lint() {
	local debdir=${1:?lint DEBDIR} changes=()
	changes=("$debdir"/zcx_"$version"_*.changes)
	[ -f "${changes[0]}" ] || die "no zcx $version .changes in $debdir (make deb)"
	lintian --fail-on error,warning --tag-display-limit 0 --info "${changes[@]}"
}

cmd_dkms() {
	local kver=${1:?dkms KVER} status path v m
	src_owned || die "/usr/src/zcx-$version does not come from zcx-dkms"
	status=$(dkms status -m zcx -v "$version" -k "$kver")
	echo "before: ${status:-not built}"
	# The postinst builds for the running and the newest kernel only
	# (all kernels on a first install in a chroot): do the others.
	case $status in
	*": installed"*) ;;
	*) dkms install -m zcx -v "$version" -k "$kver" ;;
	esac
	status=$(dkms status -m zcx -v "$version" -k "$kver")
	echo "after: $status"
	case $status in *": installed"*) ;; *) die "not installed for $kver" ;; esac
	for m in zcx zcx_ib; do
		path=$(modinfo -k "$kver" -n $m)
		v=$(modinfo -k "$kver" -F version $m)
		echo "modprobe $m on $kver: $path, version $v"
		case $path in */updates/dkms/$m.ko*) ;; *) die "modprobe would load $path" ;; esac
		[ "$v" = "$version" ] || die "$m version $v, want $version"
	done
	# zcx.ko must load on a node without the RDMA stack.
	[ -z "$(modinfo -k "$kver" -F depends zcx)" ] || die "zcx.ko depends on other modules"
}

cmd_make_install() {
	local tmp rc=0 left f expect=()
	tmp=$(mktemp -d)
	# shellcheck disable=SC2064 # expand now: $tmp is local
	trap "rm -rf '$tmp'" EXIT
	make -s -C "$top" install DESTDIR="$tmp" PREFIX=/opt/zcx
	(cd "$tmp" && find . \( -type f -o -type l \) | sort)
	expect=(opt/zcx/lib/libzcx.so.1 opt/zcx/lib/libzcx.so opt/zcx/lib/libzcx.a \
		opt/zcx/lib/libzcx-verbs.so.1 opt/zcx/lib/zcx/libzcx-verbs-preload.so \
		opt/zcx/lib/libzcx-pmix.so.1 opt/zcx/lib/libzcx-pmix.so opt/zcx/include/zcx_pmix.h \
		opt/zcx/include/zcx.h opt/zcx/include/zcx_uapi.h \
		opt/zcx/lib/pkgconfig/libzcx.pc opt/zcx/share/man/man3/zcx_mr_reg.3 \
		opt/zcx/share/man/man3/zcx_open.3 etc/udev/rules.d/60-zcx.rules \
		opt/zcx/share/doc/zcx/examples/modules-load.d/zcx.conf \
		opt/zcx/bin/zcxctl opt/zcx/share/man/man8/zcxctl.8)
	for f in "${expect[@]}"; do
		[ -e "$tmp/$f" ] || { echo "missing: $f"; rc=1; }
	done
	[ "$(readlink -f "$tmp/opt/zcx/lib/libzcx.so")" = "$tmp/opt/zcx/lib/libzcx.so.1.0.0" ] ||
		{ echo "libzcx.so does not lead to libzcx.so.1.0.0"; rc=1; }
	grep -qx 'libdir=/opt/zcx/lib' "$tmp/opt/zcx/lib/pkgconfig/libzcx.pc" ||
		{ echo "libzcx.pc: wrong libdir"; rc=1; }
	PKG_CONFIG_PATH=$tmp/opt/zcx/lib/pkgconfig PKG_CONFIG_SYSROOT_DIR=$tmp \
		pkg-config --cflags --libs libzcx
	make -s -C "$top" uninstall DESTDIR="$tmp" PREFIX=/opt/zcx
	left=$(cd "$tmp" && find . \( -type f -o -type l \))
	if [ -n "$left" ]; then
		echo "left after make uninstall:"
		echo "$left"
		rc=1
	fi
	return $rc
}

cmd_pkg_config() {
	local out=${1:?pkg-config OUTDIR} flags ex name
	rm -rf "$out"
	mkdir -p "$out"
	flags=$(pkg-config --cflags --libs libzcx)
	echo "pkg-config libzcx: $flags ($(pkg-config --modversion libzcx))"
	[ "$(pkg-config --modversion libzcx)" = "$version" ] || die "libzcx.pc has another version"
	# Only system paths: a user's build, not the tree's.
	for ex in zcx_info zcx_regcache zcx_pingpong zcx_barrier; do
		# shellcheck disable=SC2086 # pkg-config output is a list of words
		cc -std=c11 -D_POSIX_C_SOURCE=200809L -Wall -Wextra -Werror \
			"$top/examples/$ex.c" -o "$out/$ex" $flags
	done
	cat > "$out/verbs.c" <<-'EOC'
	#include <zcx_verbs.h>
	int main(void)
	{
		/* Link check: the symbol comes from libzcx-verbs.so.1. */
		void (*volatile fn)(struct zcx_verbs_cache *) = zcx_verbs_cache_destroy;
		return fn == NULL;
	}
	EOC
	# shellcheck disable=SC2086
	cc -std=c11 -Wall -Wextra -Werror "$out/verbs.c" -o "$out/verbs" \
		$flags -lzcx-verbs -libverbs
	"$out/verbs"
	# shellcheck disable=SC2086
	cc -std=c11 -D_POSIX_C_SOURCE=200809L -Wall -Wextra -Werror \
		"$top/examples/zcx_pmix_ring.c" -o "$out/zcx_pmix_ring" $flags -lzcx-pmix
	for name in zcx_info verbs zcx_pmix_ring; do
		if readelf -d "$out/$name" | grep 'R.*PATH' > /dev/null; then
			die "$name has an rpath"
		fi
		ldd "$out/$name" | grep -E 'libzcx'
	done
	ldd "$out/zcx_info" | grep -E "$ldd_re" > /dev/null || die "zcx_info does not use $libdir/libzcx.so.1"
	# The manual pages are where man looks.
	man -w zcx_mr_reg zcx_open zcx_send
}

cmd_guest() {
	local bindir=${1:?guest BINDIR TAPDIR} tapdir=${2:?guest BINDIR TAPDIR}
	local n=0 rc=0 tap
	mkdir -p "$tapdir"
	tap=$tapdir/installed.tap
	t() {
		local name=$1 log
		shift
		n=$((n + 1))
		if log=$("$@" 2>&1); then
			echo "ok $n installed.$name"
		else
			printf '%s\n' "$log" | tail -n 20 | sed 's/^/# /'
			echo "not ok $n installed.$name"
			rc=1
		fi
	}
	{
		echo "TAP version 13"
		t module-from-dkms sh -c "modinfo -n zcx | grep -q /updates/dkms/ &&
			[ \"\$(cat /sys/module/zcx/version)\" = $version ]"
		t udev-rule-installed test -f /lib/udev/rules.d/60-zcx.rules
		t libzcx-from-system sh -c "ldd $bindir/zcx_info | grep -Eq '$ldd_re'"
		t zcx_info "$bindir/zcx_info"
		t zcx_regcache "$bindir/zcx_regcache"
		t zcx_pingpong "$bindir/zcx_pingpong"
		t zcx_barrier "$bindir/zcx_barrier" -n 4
		t zcx_ib-from-dkms sh -c "modinfo -n zcx_ib | grep -q /updates/dkms/"
		t zcx_pmix_ring mpirun --allow-run-as-root --oversubscribe -n 2 \
			"$bindir/zcx_pmix_ring" -r 10
		t zcxctl-installed test -x /usr/bin/zcxctl
		t zcxctl-status /usr/bin/zcxctl status
		echo "1..$n"
	} > "$tap"
	cat "$tap"
	return $rc
}

cmd_purge() {
	local installed=() p
	for p in "${packages[@]}"; do
		dpkg-query -W -f '${db:Status-Status}' "$p" 2>/dev/null | grep . > /dev/null &&
			installed+=("$p")
	done
	[ ${#installed[@]} -eq 0 ] || dpkg --purge "${installed[@]}"
}

command=${1:-}
[ $# -eq 0 ] || shift
case $command in
lint) cmd_lint "$@" ;;
install) cmd_install "$@" ;;
dkms) cmd_dkms "$@" ;;
make-install) cmd_make_install ;;
pkg-config) cmd_pkg_config "$@" ;;
guest) cmd_guest "$@" ;;
purge) cmd_purge ;;
*) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//p}' "$0" >&2; exit 2 ;;
esac
