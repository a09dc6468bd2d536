#!/bin/bash
# Build the vhca guest: Debian 13 (trixie) user space with rdma-core,
# perftest and pyverbs, Debian's Linux 6.12 kernel for Debian 12, and our
# kernel module and rdma-core provider, packed as one uncompressed cpio
# initramfs (no block device, no loop mount, no root needed in the guest).
#
# Two cached layers, each keyed by its inputs:
#   base  (slow, ~2 min): debootstrap + kernel modules, keyed by the package
#         list, the kernel version and this script.
#   final (seconds): base + vhca.ko + provider + init scripts, keyed by
#         their hashes.
# Prints "KERNEL INITRD" on stdout.
set -euo pipefail
. "$(dirname "$0")/../scripts/lib.sh"
build_lock image

kver="$(guest_kernel_version)"
kroot="$(guest_kernel_root "$kver")"
[ -f "$kroot/boot/vmlinuz-$kver" ] || die "guest kernel $kroot/boot/vmlinuz-$kver missing; run scripts/setup-host.sh"

packages=rdma-core,ibverbs-providers,ibverbs-utils,rdmacm-utils,perftest,infiniband-diags,opensm,python3-pyverbs,iproute2,kmod,iputils-ping,procps,ethtool,coreutils,nvme-cli,fio
# The middleware (docs/user-guide.rst, "Middleware"): UCX's tools
# (ucx_info, ucx_perftest), libfabric's fabtests, Open MPI, and mpi4py for
# an MPI program without a compiler in the guest.
packages+=,ucx-utils,libfabric-bin,openmpi-bin,python3-mpi4py
# What the guest never uses, removed from the base after debootstrap: the
# initramfs is unpacked into a tmpfs that may take half the RAM left once
# the initramfs itself is loaded, so with 1 GiB an image much above 300 MB
# does not boot ("Initramfs unpacking failed: write error").
#  - libucx0 depends on AMD's ROCm run time for its GPU modules
#    (libuct_rocm, libucm_rocm): HIP, HSA, comgr and LLVM 17 with z3,
#    233 MB.  No guest has a GPU; UCX loads its modules with dlopen and
#    goes on without one that is missing, so both go; and UCX's Go
#    perftest.
#  - udev's hardware database (22 MB): the guest runs no udev (init).
#  - perl's modules and libperl (53 MB), for three infiniband-diags
#    scripts no test runs (check_lft_balance, ibfindnodesusing,
#    ibidsverify); perl-base stays.
slim="usr/lib/x86_64-linux-gnu/ucx/*rocm* usr/lib/x86_64-linux-gnu/libamdhip64.so*
usr/lib/x86_64-linux-gnu/libamd_comgr.so* usr/lib/x86_64-linux-gnu/libLLVM-17.so*
usr/lib/x86_64-linux-gnu/libz3.so* usr/lib/x86_64-linux-gnu/libhsa-runtime64.so*
usr/lib/x86_64-linux-gnu/libhsakmt.so* usr/bin/goperftest
usr/lib/udev/hwdb.bin usr/lib/udev/hwdb.d
usr/lib/x86_64-linux-gnu/perl usr/share/perl usr/lib/x86_64-linux-gnu/libperl.so*"
# Host kernel modules the guest needs beyond vhca.ko (dependencies follow).
# crc32_generic: rxe needs the crc32 crypto driver, which nothing else pulls in.
# nvme-rdma, nvmet-rdma, null_blk: NVMe over RDMA between two guests
# (tests/guest/test_nvme_rdma.py), a RAM-backed null_blk namespace.
# ib_umad: /dev/infiniband/umad* for opensm and infiniband-diags (IB port).
# 8021q: RoCE and IP over VLAN interfaces (tests/guest/test_vlan.py).  bridge, sch_htb, sch_red,
# cls_u32: the congestion point of the incast experiment
# (scripts/congestion_point.py), a guest bridging two taps with an
# ECN-marking RED queue for RoCE under an HTB rate limit (the test hosts'
# kernel has neither RED nor any other ECN-marking qdisc, docs/limits.rst).
modules="ib_uverbs rdma_ucm ib_umad ib_ipoib rdma_rxe crc32_generic virtio_net 9p 9pnet_virtio configfs nvme-rdma nvmet-rdma null_blk 8021q bridge sch_htb sch_red cls_u32"

base_key="$(hash_inputs "$packages" "$slim" "$modules" "$kver" "$0")"
base="$VHCA_CACHE/image-base-$base_key"
if [ ! -f "$base/done" ]; then
	rm -rf "$base"
	mkdir -p "$base"
	log "debootstrap trixie into $base/rootfs (about 2 minutes)"
	debootstrap --variant=minbase --include="$packages" trixie "$base/rootfs" \
		http://deb.debian.org/debian > "$base/debootstrap.log" 2>&1 ||
		die "debootstrap failed; see $base/debootstrap.log"
	root="$base/rootfs"
	# Slim down: the guest lives in RAM.
	rm -rf "$root"/usr/share/{doc,man,info,locale}/* "$root"/var/cache/apt/* \
		"$root"/var/lib/apt/lists/*
	( cd "$root" && rm -rf $slim )
	# Kernel modules: the wanted ones and everything they depend on.
	mdir="$kroot/lib/modules/$kver"
	want=()
	for m in $modules; do
		want+=("$(modinfo -b "$kroot" -k "$kver" -n "$m")") ||
			die "kernel module $m not found for $kver"
	done
	python3 - "$mdir" "${want[@]}" > "$base/modules.list" <<'PY'
import sys, os
mdir, want = sys.argv[1], sys.argv[2:]
deps = {}
for line in open(os.path.join(mdir, "modules.dep")):
    mod, _, rest = line.partition(":")
    deps[mod] = rest.split()
todo = [os.path.relpath(w, mdir) for w in want]
seen = set()
while todo:
    m = todo.pop()
    if m in seen:
        continue
    seen.add(m)
    todo.extend(deps.get(m, []))
print("\n".join(sorted(seen)))
PY
	while read -r m; do
		install -D -m 0644 "$mdir/$m" "$root/lib/modules/$kver/$m"
	done < "$base/modules.list"
	cp "$mdir"/modules.{order,builtin,builtin.modinfo} "$root/lib/modules/$kver/"
	touch "$base/done"
	# Older bases are dead weight (about 250 MB each); the newest two stay,
	# so that two branches with different package lists, tested in turn
	# on one host, do not each rebuild the base the other just replaced.
	find "$VHCA_CACHE" -maxdepth 1 -name 'image-base-*' ! -path "$base" \
		-printf '%T@ %p\n' | sort -rn | tail -n +2 | cut -d' ' -f2- |
		xargs -r rm -rf
fi

# Final layer: our module, provider and init scripts on top of the base.
module="$("$VHCA_ROOT/scripts/build-driver.sh")"
provider="$("$VHCA_ROOT/scripts/build-provider.sh")"
final_key="$(hash_inputs "$base_key" "$module" "$provider" "$VHCA_ROOT/images/guest")"
final="$VHCA_CACHE/image-$final_key"
if [ ! -f "$final/initrd.cpio" ]; then
	log "packing guest initramfs $final"
	rm -rf "$final"
	mkdir -p "$final"
	stage="$final/stage"
	cp -a "$base/rootfs" "$stage"
	install -D -m 0644 "$module" "$stage/lib/modules/$kver/extra/vhca.ko"
	install -D -m 0644 "$provider" "$stage/usr/lib/x86_64-linux-gnu/libibverbs/libvhca-rdmav34.so"
	echo "driver vhca" > "$stage/etc/libibverbs.d/vhca.driver"
	install -m 0755 "$VHCA_ROOT/images/guest/init" "$stage/init"
	install -m 0755 "$VHCA_ROOT/images/guest/vhca-agent" "$stage/usr/local/sbin/vhca-agent"
	depmod -b "$stage" "$kver"
	( cd "$stage" && find . -print0 | cpio --null -o -H newc --quiet ) > "$final/initrd.cpio.tmp"
	mv "$final/initrd.cpio.tmp" "$final/initrd.cpio"
	rm -rf "$stage"
	# Keep only the newest few final images.
	find "$VHCA_CACHE" -maxdepth 1 -regextype egrep -regex '.*/image-[0-9a-f]{16}' \
		-printf '%T@ %p\n' | sort -rn | tail -n +4 | cut -d' ' -f2- | xargs -r rm -rf
fi
echo "$kroot/boot/vmlinuz-$kver $final/initrd.cpio"
