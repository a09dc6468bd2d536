#!/usr/bin/python3
"""Run an MPI program across the guests of a running fabric, Open MPI over UCX.

    vhca_mpirun.py [--run-dir DIR] [--put FILE]... [-x VAR=VALUE]...
                   [--timeout S] PROGRAM [ARGS...]

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
say tests/guest/mpi_check.py).  The ranks get Open MPI's UCX PML on
vhca0's RC and UD transports:

    OMPI_MCA_pml=ucx UCX_NET_DEVICES=vhca0:1 UCX_TLS=rc_verbs,ud_verbs,self

so a run that cannot use UCX on vhca0 fails instead of falling back to
TCP.  The hosts are named (guestI, the fabric's guest_name, with
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
# What every rank needs on vhca (docs/user-guide.rst, "Middleware").
UCX_ENV = {
    "OMPI_MCA_pml": "ucx",
    "OMPI_MCA_osc": "ucx",
    "UCX_NET_DEVICES": "vhca0:1",
    "UCX_TLS": "rc_verbs,ud_verbs,self",
}


def prepare(fabric):
    """/etc/hosts and the remote shell in every guest; the
    remote shell's server running in guests 2..N."""
    hosts = "".join("%s guest%d\n" % (g.ipv4, g.index)
                    for g in fabric.guests)
    for g in fabric.guests:
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


def mpirun_command(fabric, program, env=None):
    """The mpirun line guest 1 runs for program (a list of words)."""
    env = dict(UCX_ENV, **(env or {}))
    # By name: given guest 1's own address, PRRTE launches and counts the
    # daemons but maps no rank there ("not enough slots").
    hosts = ",".join("guest%d:1" % g.index for g in fabric.guests)
    exports = " ".join("-x %s=%s" % (k, shlex.quote(v))
                       for k, v in sorted(env.items()))
    return ("env PRTE_MCA_plm_ssh_agent=%s %s "
            "mpirun --allow-run-as-root --host %s -np %d "
            "--prtemca plm_ssh_agent %s %s %s"
            % (RSH, " ".join("%s=%s" % (k, shlex.quote(v))
                             for k, v in sorted(env.items())),
               hosts, fabric.count, RSH, exports,
               " ".join(shlex.quote(w) for w in program)))


def mpirun(fabric, program, put=(), env=None, timeout=300):
    """Run program (a list of words) as one rank per guest; return
    (status, output)."""
    for path in put:
        for g in fabric.guests:
            g.put_file(os.path.join("/tmp", os.path.basename(path)), path)
    prepare(fabric)
    try:
        return fabric[1].exec("timeout %d %s" % (
            timeout, mpirun_command(fabric, program, env)), timeout + 30)
    finally:
        finish(fabric)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--run-dir", default=vhca_fabric.DEFAULT_RUN_DIR)
    parser.add_argument("--put", action="append", default=[],
                        metavar="FILE")
    parser.add_argument("-x", action="append", default=[],
                        metavar="VAR=VALUE", dest="env")
    parser.add_argument("--timeout", type=int, default=300)
    parser.add_argument("program", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    if not args.program:
        parser.error("no program given")
    try:
        fabric = vhca_fabric.Fabric.attach(args.run_dir)
        env = dict(e.split("=", 1) for e in args.env)
        status, out = mpirun(fabric, args.program, args.put, env,
                             args.timeout)
    except vhca_fabric.FabricError as e:
        print("vhca_mpirun: %s" % e, file=sys.stderr)
        return 1
    sys.stdout.write(out)
    return status


if __name__ == "__main__":
    sys.exit(main())
