# Shared helpers for vhca's scripts.  Sourced, not run.

VHCA_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# Slow build outputs (QEMU, the guest image, sources) live outside the clone
# so a fresh clone reuses them; every entry is keyed by its inputs.
VHCA_CACHE="${VHCA_CACHE:-/var/cache/vhca}"
mkdir -p "$VHCA_CACHE"

log() { printf '[vhca] %s\n' "$*" >&2; }
die() { printf 'vhca: error: %s\n' "$*" >&2; exit 1; }

# The newest Debian 12 build of Linux 6.12 that apt knows about.  Resolved
# once per host and remembered, so caches keyed on it stay stable until the
# host's package lists change.
guest_kernel_version() {
	apt-cache search --names-only '^linux-image-6\.12\.[0-9.]*\+deb12-amd64$' |
		sed -n 's/^linux-image-\(6\.12\.[0-9.]*+deb12-amd64\) .*/\1/p' |
		sort -V | tail -1
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
