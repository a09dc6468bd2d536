#!/usr/bin/python3
"""Run an MPI program across the guests of a running fabric, Open MPI over
UCX or libfabric.

    vhca_mpirun.py [--run-dir DIR] [--put FILE]... [-x VAR=VALUE]...
                   [--transport ucx|ofi] [--timeout S] PROGRAM [ARGS...]

One rank per guest, rank i - 1 in guest i, started by mpirun in guest 1.
Open MPI's launcher (PRRTE) starts its daemon in the other guests over
ssh, which the guests lack; the decision (docs/user-guide.rst,
"Middleware"): give it scripts/vhca_rsh.py as its ssh
(PRTE_MCA_plm_ssh_agent), a remote shell whose server this script starts
in guests 2..N for the run and stops after it.  The alternatives were
worse: starting each rank by hand as a singleton and joining them with
MPI_Comm_connect/accept needs a PMIx name server and a program written
for it, not an ordinary MPI program; and the fabric's own agent serves
the host, not a guest.

--put copies a host file into /tmp of every guest first (the program,
say tests/guest/mpi_check.py).  With --transport ucx (the default) the
ranks get Open MPI's UCX PML on the guest's RDMA device's RC and UD
transports:

    OMPI_MCA_pml=ucx UCX_NET_DEVICES=vhca0:1 UCX_TLS=rc_verbs,ud_verbs,self

(rxe0:1 in a guest with rxe, which also gets
UCX_UD_VERBS_ETH_DGID_CHECK=n: each rank its own values, from a file in
its guest that the shell starting it reads).  With --transport ofi they get
the CM PML over the OFI MTL on libfabric's verbs provider under RXM:

    OMPI_MCA_pml=cm OMPI_MCA_mtl=ofi
    OMPI_MCA_mtl_ofi_provider_include="verbs;ofi_rxm"
    FI_MR_CACHE_MAX_COUNT=0

(libfabric's registration cache off: TRANSPORT_ENV says why).  Either way a run that cannot use its transport fails instead of falling
back to TCP.  The hosts are named (guestI, the fabric's guest_name, with
/etc/hosts entries in every guest): given its own address, PRRTE maps no
rank to the first guest.  Prints mpirun's output; exits with its status.
"""

import argparse
import os
import shlex
import sys

import vhca_fabric

HERE = os.path.dirname(os.path.abspath(__file__))
RSH = "/tmp/vhca_rsh.py"
RSH_PORT = 7022
RSH_PID = "/tmp/vhca_rsh.pid"
RANK_ENV = "/tmp/vhca_mpirun.env"
# What every rank needs on vhca (docs/user-guide.rst, "Middleware"), by
# transport; UCX_NET_DEVICES is each guest's own (guest_env).
TRANSPORT_ENV = {
    "ucx": {
        "OMPI_MCA_pml": "ucx",
        "OMPI_MCA_osc": "ucx",
        "UCX_TLS": "rc_verbs,ud_verbs,self",
    },
    # Open MPI's OFI MTL takes the first provider whose name starts with
    # an entry of the list (opal_common_ofi_is_in_list): "verbs;ofi_rxm"
    # is RXM's RDM endpoints over verbs, the one libfabric has for it.
    # FI_MR_CACHE_MAX_COUNT=0: libfabric's memory registration cache
    # off.  With it on, mpi_check.py's 1 MiB ping-pong gets the previous
    # message's bytes: RXM's rendezvous reads the sender's buffer by RDMA
    # READ through a cached registration, and once glibc has trimmed the
    # freed buffer off the heap and grown it again at the same address,
    # that registration still pins the old pages (no MPI error; the same
    # run passes with the cache off, or with MALLOC_TRIM_THRESHOLD_ set
    # so that the heap never shrinks).  docs/limits.rst, "Middleware".
    "ofi": {
        "OMPI_MCA_pml": "cm",
        "OMPI_MCA_mtl": "ofi",
        "OMPI_MCA_mtl_ofi_provider_include": "verbs;ofi_rxm",
        "FI_MR_CACHE_MAX_COUNT": "0",
    },
}
TRANSPORTS = sorted(TRANSPORT_ENV)
# What a rank on a device of this kind needs besides (UCX only): rxe
# reports no RoCE packet type in ibv_wc.sl, so UCX's UD transport on rxe
# drops every IPv4 datagram unless its GID check is off
# (docs/user-guide.rst, "Middleware", "Linux rxe").
DEVICE_ENV = {"rxe": {"UCX_UD_VERBS_ETH_DGID_CHECK": "n"}}


def guest_env(guest, transport):
    """The variables rank guest.index - 1 needs beyond its transport's."""
    if transport != "ucx":
        return {}
    env = {"UCX_NET_DEVICES": "%s:1" % guest.rdma_dev}
    env.update(DEVICE_ENV.get(guest.rdma_dev.rstrip("0123456789"), {}))
    return env


def prepare(fabric, transport="ucx"):
    """/etc/hosts, the remote shell and the rank's own variables
    (RANK_ENV) in every guest; the remote shell's server running in
    guests 2..N."""
    hosts = "".join("%s guest%d\n" % (g.ipv4, g.index)
                    for g in fabric.guests)
    for g in fabric.guests:
        g.run("printf '%%s' %s > %s" % (shlex.quote("".join(
            "export %s=%s\n" % (k, shlex.quote(v))
            for k, v in sorted(guest_env(g, transport).items()))),
            RANK_ENV))
        g.put_file(RSH, os.path.join(HERE, "vhca_rsh.py"))
        g.run("chmod +x %s; [ $(hostname) = guest%d ] || "
              "{ echo \"hostname $(hostname), not guest%d\"; exit 1; }; "
              "grep -q ' guest%d$' /etc/hosts || printf '%s' >> /etc/hosts"
              % (RSH, g.index, g.index, g.index, hosts))
    for g in fabric.guests[1:]:
        g.run("setsid python3 %s serve --port %d > /tmp/vhca_rsh.log "
              "2>&1 < /dev/null & echo $! > %s; "
              "for i in $(seq 100); do ss -ltn | grep -q ':%d ' && exit 0; "
              "sleep 0.1; done; cat /tmp/vhca_rsh.log; exit 1"
              % (RSH, RSH_PORT, RSH_PID, RSH_PORT))


def finish(fabric):
    """Stop the remote shell's servers (and whatever of the run they
    still carry)."""
    for g in fabric.guests[1:]:
        g.exec("kill $(cat %s) 2>/dev/null; pkill -x prted; true" % RSH_PID)


def mpirun_command(fabric, program, env=None, transport="ucx"):
    """The mpirun line guest 1 runs for program (a list of words)."""
    common = dict(TRANSPORT_ENV[transport], **(env or {}))
    # By name: given guest 1's own address, PRRTE launches and counts the
    # daemons but maps no rank there ("not enough slots").
    hosts = ",".join("guest%d:1" % g.index for g in fabric.guests)
    exports = " ".join("-x %s=%s" % (k, shlex.quote(v))
                       for k, v in sorted(common.items()))
    # A rank's own variables (guest_env) come from its guest's RANK_ENV
    # file, read by the shell that then execs the program: Open MPI
    # 5.0.7's mpirun crashes (SIGSEGV) on an MPMD line ("-np 1 A : -np 1
    # B", or --app), the way to give ranks different environments.
    words = ["sh", "-c", '. %s && exec "$@"' % RANK_ENV, "rank"] + program
    return ("env PRTE_MCA_plm_ssh_agent=%s %s "
            "mpirun --allow-run-as-root --host %s -np %d "
            "--prtemca plm_ssh_agent %s %s %s"
            % (RSH, " ".join("%s=%s" % (k, shlex.quote(v))
                             for k, v in sorted(common.items())),
               hosts, fabric.count, RSH, exports,
               " ".join(shlex.quote(w) for w in words)))


def mpirun(fabric, program, put=(), env=None, timeout=300, transport="ucx"):
    """Run program (a list of words) as one rank per guest over transport
    ("ucx" or "ofi"); return (status, output)."""
    for path in put:
        for g in fabric.guests:
            g.put_file(os.path.join("/tmp", os.path.basename(path)), path)
    prepare(fabric, transport)
    try:
        return fabric[1].exec("timeout %d %s" % (
            timeout, mpirun_command(fabric, program, env, transport)),
            timeout + 30)
    finally:
        finish(fabric)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--run-dir", default=vhca_fabric.DEFAULT_RUN_DIR)
    parser.add_argument("--put", action="append", default=[],
                        metavar="FILE")
    parser.add_argument("-x", action="append", default=[],
                        metavar="VAR=VALUE", dest="env")
    parser.add_argument("--transport", choices=TRANSPORTS, default="ucx")
    parser.add_argument("--timeout", type=int, default=300)
    parser.add_argument("program", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    if not args.program:
        parser.error("no program given")
    try:
        fabric = vhca_fabric.Fabric.attach(args.run_dir)
        env = dict(e.split("=", 1) for e in args.env)
        status, out = mpirun(fabric, args.program, args.put, env,
                             args.timeout, args.transport)
    except vhca_fabric.FabricError as e:
        print("vhca_mpirun: %s" % e, file=sys.stderr)
        return 1
    sys.stdout.write(out)
    return status


if __name__ == "__main__":
    sys.exit(main())
