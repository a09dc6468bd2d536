#!/bin/bash
# The README's main job: boot two guests with a vhca each on one fabric and
# show them reach each other over the vhca netdev and the RDMA device.
# Every step goes through the fabric library, scripts/vhca_fabric.py
# (start, exec, gid, pair, stop), as the guest tests do.
# Guests are stopped on exit, error or Ctrl-C.  Set VHCA_KEEP=1 to leave
# them running (then: scripts/vhca_fabric.py exec 1 CMD ...; ... stop).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
"$VHCA_ROOT/scripts/setup-host.sh"

fabric=(/usr/bin/python3 "$VHCA_ROOT/scripts/vhca_fabric.py")
stop() { "${fabric[@]}" stop 2>/dev/null || true; }
[ "${VHCA_KEEP:-0}" = 1 ] || trap stop EXIT
trap 'exit 130' INT TERM

log "building (cached) and booting two guests (pcaps in ${VHCA_RUN_DIR:-/tmp/vhca-run}/guest*/fabric.pcap)"
"${fabric[@]}" start -n 2 --pcap

in_guest() {
	local g="$1"; shift
	printf '\n=== guest%s: %s\n' "$g" "$*"
	"${fabric[@]}" exec "$g" "$@"
}
in_guest 1 ip -brief address show
in_guest 1 ping -c 3 192.0.2.2
in_guest 2 ping -c 3 2001:db8::1
in_guest 1 rdma link show
in_guest 1 ibv_devinfo -v -d vhca0
in_guest 2 ibv_devinfo -d vhca0
in_guest 2 ethtool -S '$(ls /sys/bus/pci/drivers/vhca/*/net)'

# RDMA between the guests: unmodified rping, ibv_*_pingpong and perftest.
# The server runs in guest 2, the client in guest 1 (vhca_fabric.py pair
# starts the server, waits until it listens, runs the client, waits for the
# server to end and prints both outputs); each side uses the RoCE v2 GID of
# its IPv4 address, whose index vhca_fabric.py gid looks up.
gid1="$("${fabric[@]}" gid 1)"
gid2="$("${fabric[@]}" gid 2)"
rdma_pair() { "${fabric[@]}" pair 2 1 "$@"; }
# rdma_cm first, as users try it: rping connects by IP address (the CM's
# MADs go over QP1 as UD datagrams) and checks every ping's data (-V).
rdma_pair --rdma-cm --port 7174 "rping -s -a 192.0.2.2 -p 7174 -V -v -C 5" \
	"rping -c -a 192.0.2.2 -p 7174 -V -v -C 5"
rdma_pair "ibv_ud_pingpong -d vhca0 -g $gid2 -s 512 -n 200" \
	"ibv_ud_pingpong -d vhca0 -g $gid1 -s 512 -n 200 192.0.2.2"
rdma_pair "ibv_rc_pingpong -d vhca0 -g $gid2 -c -s 65536 -n 200" \
	"ibv_rc_pingpong -d vhca0 -g $gid1 -c -s 65536 -n 200 192.0.2.2"
# Measurements last: first the capture stops (writing every frame to the
# pcaps costs more than moving it), then both interfaces go to MTU 9000 so
# RoCE runs path MTU 4096, as docs/benchmarks.rst measures.  Bandwidth for
# four seconds and latency over 5000 iterations, as scripts/bench.py: a
# count of 2000 messages lasted a tenth of a second, and the guests' 4 ms
# tick moved such figures by tens of percent.
log "stopping the capture and setting MTU 9000 before measuring"
"${fabric[@]}" capture-off
"${fabric[@]}" mtu 9000
rdma_pair "ib_write_bw -d vhca0 -x $gid2 -F -s 65536 -D 4" \
	"ib_write_bw -d vhca0 -x $gid1 -F -s 65536 -D 4 192.0.2.2"
rdma_pair "ib_send_lat -d vhca0 -x $gid2 -F -s 64 -n 5000" \
	"ib_send_lat -d vhca0 -x $gid1 -F -s 64 -n 5000 192.0.2.2"
