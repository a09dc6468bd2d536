#!/bin/bash
# The README's main job: boot two guests with a vhca each on one fabric and
# show them reach each other over the vhca netdev and the RDMA device.
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
