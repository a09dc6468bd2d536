#!/bin/bash
# Run the kernel's checkpatch.pl (from Debian's linux-source-6.12) on every
# file of the guest driver.  Prints "ok FILE" or "FAIL FILE" and the
# complaints for each.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

src_tar="$(ls /usr/src/linux-source-6.12.tar.xz 2>/dev/null || true)"
[ -n "$src_tar" ] || die "linux-source-6.12 is not installed; run scripts/setup-host.sh"
tools="$VHCA_CACHE/checkpatch-$(hash_inputs "$src_tar")"
if [ ! -x "$tools/scripts/checkpatch.pl" ]; then
	rm -rf "$tools"
	mkdir -p "$tools"
	tar -xJf "$src_tar" -C "$tools" --strip-components=1 \
		linux-source-6.12/scripts/checkpatch.pl \
		linux-source-6.12/scripts/spelling.txt \
		linux-source-6.12/scripts/const_structs.checkpatch ||
		die "could not extract checkpatch.pl from $src_tar"
fi

# The shared hardware header is also compiled by QEMU and rdma-core, so it
# carries its own fixed-width typedefs instead of the kernel's u8/u32, and
# spells bits as shifts (no BIT() outside the kernel).
extra_ignore() {
	case "$1" in include/vhca_hw.h) echo ",NEW_TYPEDEFS,BIT_MACRO,PREFER_KERNEL_TYPES" ;; esac
}

cd "$VHCA_ROOT"
# Sources only: git knows them, build outputs (vhca.mod.c) are ignored.
for f in $(git ls-files -co --exclude-standard 'drivers/vhca/*.[ch]') \
	include/vhca_hw.h include/vhca-abi.h; do
	if out="$("$tools/scripts/checkpatch.pl" --no-tree --strict --quiet \
		--ignore FILE_PATH_CHANGES$(extra_ignore "$f") -f "$f" 2>&1)" && [ -z "$out" ]; then
		echo "ok $f"
	else
		echo "FAIL $f"
		echo "$out"
	fi
done
