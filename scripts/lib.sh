# Shared helpers for vhca's scripts.  Sourced, not run.

VHCA_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# Slow build outputs (QEMU, the guest image, sources) live outside the clone
# so a fresh clone reuses them; every entry is keyed by its inputs.
VHCA_CACHE="${VHCA_CACHE:-/var/cache/vhca}"
mkdir -p "$VHCA_CACHE"

log() { printf '[vhca] %s\n' "$*" >&2; }
die() { printf 'vhca: error: %s\n' "$*" >&2; exit 1; }

# build_lock NAME: hold $VHCA_CACHE/NAME.lock until the script exits, so
# that builds of one artefact wait for each other (tests/run_all.py starts
# two fabrics at once, and each runs the build scripts): two ninjas in one
# build tree fail.  One name per script: build-image.sh runs
# build-provider.sh, which takes its own.
build_lock() {
	exec {VHCA_BUILD_LOCK_FD}>"$VHCA_CACHE/$1.lock"
	flock "$VHCA_BUILD_LOCK_FD"
}

# The newest Debian 12 build of Linux 6.12 that apt knows about.  Resolved
# once per state of the host's package lists (apt-get update renames files
# into /var/lib/apt/lists, which changes its mtime) and remembered in the
# cache: apt-cache search takes about a second, and every fabric start asks
# twice (images/build-image.sh, scripts/build-driver.sh).
guest_kernel_version() {
	local memo="$VHCA_CACHE/guest-kernel-version" lists kver
	lists="$(stat -c %Y /var/lib/apt/lists 2>/dev/null || echo none)"
	if [ -f "$memo" ] && [ "$(sed -n 1p "$memo")" = "$lists" ]; then
		sed -n 2p "$memo"
		return
	fi
	kver="$(apt-cache search --names-only '^linux-image-6\.12\.[0-9.]*\+deb12-amd64$' |
		sed -n 's/^linux-image-\(6\.12\.[0-9.]*+deb12-amd64\) .*/\1/p' |
		sort -V | tail -1)"
	if [ -n "$kver" ]; then
		printf '%s\n%s\n' "$lists" "$kver" > "$memo.$$"
		mv -f "$memo.$$" "$memo"
	fi
	echo "$kver"
}

# Where the guest kernel's packages are unpacked (scripts/setup-host.sh):
# its vmlinuz in boot/, its modules in lib/modules/KVER, its headers in
# usr/src/linux-headers-KVER.  Unpacked into the cache rather than
# installed, so the host's /boot, boot loader and initramfs stay as they
# were.
guest_kernel_root() {
	echo "$VHCA_CACHE/kernel-$1"
}

# Hash of files, folders and strings, for cache keys.  Only contents and
# names inside a folder count, not where the clone is.
hash_inputs() {
	( for f in "$@"; do
		if [ -d "$f" ]; then
			( cd "$f" && find . -type f -print0 | sort -z | xargs -0 -r sha256sum )
		elif [ -f "$f" ]; then
			sha256sum < "$f"
		else
			echo "$f"
		fi
	done ) | sha256sum | cut -c1-16
}

# qemu_prepare_tree TARBALL SRC BUILD: unpack QEMU's TARBALL into SRC once,
# apply qemu-patches/ (each once: a marker per patch, since patch --forward
# alone may apply a hunk twice) and hook hw/vhca and the vhca qtests in,
# pointing at this clone; if they pointed at another one, forget what BUILD
# made from it.  Every step is idempotent, so a tree can gain hooks later.
# scripts/build-qemu.sh and scripts/fuzz-qemu.sh share it.
qemu_prepare_tree() {
	local tarball="$1" src="$2" build="$3" p marker
	if [ ! -f "$src/.vhca-unpacked" ]; then
		log "unpacking $(basename "$tarball") into $src"
		rm -rf "$src"
		mkdir -p "$src"
		tar -xf "$tarball" -C "$src" --strip-components=1
		touch "$src/.vhca-unpacked"
	fi
	for p in "$VHCA_ROOT"/qemu-patches/*.patch; do
		marker="$src/.vhca-patch-$(basename "$p" .patch)"
		[ -f "$marker" ] && continue
		log "applying $(basename "$p")"
		patch -d "$src" -p1 --forward --quiet < "$p" || {
			rm -f "$src/.vhca-unpacked"  # unpack afresh next time
			die "$(basename "$p") does not apply to $(basename "$tarball")"
		}
		touch "$marker"
	done
	qemu_append_once "$src/hw/meson.build" "subdir('vhca')"
	qemu_append_once "$src/hw/Kconfig" "source vhca/Kconfig"
	qemu_append_once "$src/tests/qtest/meson.build" "subdir('vhca')"
	qemu_sed_once "$src/meson.build" "'hw/vhca'," \
		"s|^    'hw/net',$|    'hw/net',\n    'hw/vhca',|" \
		"add hw/vhca to QEMU's trace_events_subdirs"
	# The +ds tarball has no edk2 blobs; do not try to unpack them.
	qemu_sed_once "$src/pc-bios/meson.build" \
		"fs.exists('edk2-x86_64-code.fd.bz2')" \
		"s/^if unpack_edk2_blobs$/if unpack_edk2_blobs and fs.exists('edk2-x86_64-code.fd.bz2')/" \
		"skip the edk2 blobs in pc-bios/meson.build"
	# Point the hooks at this clone (CI uses a fresh clone in another folder).
	if [ "$(readlink "$src/hw/vhca" || true)" != "$VHCA_ROOT/hw/vhca" ]; then
		qemu_forget_checkout "$src" "$build"
	fi
	ln -sfn "$VHCA_ROOT/hw/vhca" "$src/hw/vhca"
	ln -sfn "$VHCA_ROOT/tests/qtest" "$src/tests/qtest/vhca"
}

# qemu_forget_checkout SRC BUILD: delete what BUILD made from the hw/vhca
# and qtests of the checkout SRC pointed at before.  Ninja rebuilds by
# mtime, and the files of a checkout switched in (another worktree, a CI
# clone) may be older than the objects built from the one before: without
# this its changes would be silently left out of the binary.  Touching
# QEMU's meson.build makes meson read the new checkout's file lists.
# ccache makes the rebuild cheap.
qemu_forget_checkout() {
	local src="$1" build="$2"
	[ -d "$build" ] || return 0
	log "hw/vhca now comes from $VHCA_ROOT: rebuilding what came from elsewhere"
	rm -rf "$build"/libcommon.a.p/hw_vhca_* \
		"$build"/libqemuutil.a.p/*trace-hw_vhca* \
		"$build"/trace/trace-hw_vhca.* \
		"$build/hw/vhca" "$build/tests/qtest/vhca"
	touch "$src/meson.build"
}

# qemu_append_once FILE LINE: add LINE at the end of FILE unless it is there.
qemu_append_once() { grep -qxF "$2" "$1" || echo "$2" >> "$1"; }

# qemu_sed_once FILE TEXT EXPR WHAT: edit FILE with sed EXPR unless it
# already holds TEXT (what the edit puts there), then make sure it does.
# Only once: sed -i rewrites the file even when nothing changes, and a
# newer meson.build makes every ninja run regenerate QEMU's build files.
qemu_sed_once() {
	grep -qF "$2" "$1" || sed -i "$3" "$1"
	grep -qF "$2" "$1" || die "could not $4 (QEMU source layout changed?)"
}
