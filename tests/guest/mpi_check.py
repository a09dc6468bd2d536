#!/usr/bin/python3
"""An MPI program with checked results, for two or more ranks (mpi4py).

Run by scripts/vhca_mpirun.py across the guests of a fabric
(tests/guest/test_middleware.py):

- ping-pong: rank 0 and rank 1 bounce a message of each size back and
  forth, each end filling it with a pattern of (iteration, size, rank)
  and checking the one it received, so that a byte the transport lost,
  duplicated or misplaced fails the run;
- allreduce: every rank contributes a vector of 4-byte integers that
  depends on its rank; the sum is known in closed form and each rank
  checks every element of it.

Prints one line per part ("mpi_check: pingpong ok ...", "mpi_check:
allreduce ok ...") on rank 0 and exits 0; on any mismatch a line
"mpi_check: FAIL ..." and MPI_Abort, so that mpirun exits non-zero.
Runs inside a guest; python3-mpi4py only (no numpy).
"""

import struct
import sys
import time

from mpi4py import MPI

SIZES = (1, 64, 4096, 65536, 1 << 20)
ITERATIONS = 50
ALLREDUCE_COUNT = 100000


def fail(comm, what):
    print("mpi_check: FAIL rank %d: %s" % (comm.Get_rank(), what),
          flush=True)
    comm.Abort(1)


def pattern(iteration, size, rank):
    """size bytes that no other (iteration, size, rank) gives."""
    seed = struct.pack("!IIB", iteration, size, rank)
    return (seed * (size // len(seed) + 1))[:size]


def pingpong(comm):
    rank = comm.Get_rank()
    peer = 1 - rank
    results = []
    for size in SIZES:
        buf = bytearray(size)
        comm.Barrier()
        start = time.monotonic()
        for i in range(ITERATIONS):
            if rank == 0:
                comm.Send([pattern(i, size, 0), MPI.BYTE], dest=peer, tag=i)
                comm.Recv([buf, MPI.BYTE], source=peer, tag=i)
                if bytes(buf) != pattern(i, size, 1):
                    fail(comm, "pong %d of %d bytes differs" % (i, size))
            else:
                comm.Recv([buf, MPI.BYTE], source=peer, tag=i)
                if bytes(buf) != pattern(i, size, 0):
                    fail(comm, "ping %d of %d bytes differs" % (i, size))
                comm.Send([pattern(i, size, 1), MPI.BYTE], dest=peer, tag=i)
        half_rtt = (time.monotonic() - start) / ITERATIONS / 2
        results.append("%d:%.1fus" % (size, half_rtt * 1e6))
    return results


def allreduce(comm):
    rank, ranks = comm.Get_rank(), comm.Get_size()
    fmt = "<%di" % ALLREDUCE_COUNT
    send = bytearray(struct.pack(fmt, *[(rank + 1) * (j % 1000)
                                        for j in range(ALLREDUCE_COUNT)]))
    recv = bytearray(len(send))
    comm.Allreduce([send, MPI.INT], [recv, MPI.INT], op=MPI.SUM)
    # sum over ranks r of (r + 1) * x = x * ranks * (ranks + 1) / 2
    factor = ranks * (ranks + 1) // 2
    got = struct.unpack(fmt, recv)
    for j, value in enumerate(got):
        if value != factor * (j % 1000):
            fail(comm, "allreduce element %d is %d, not %d"
                 % (j, value, factor * (j % 1000)))
    return ranks


def main():
    comm = MPI.COMM_WORLD
    if comm.Get_size() < 2:
        print("mpi_check: FAIL needs two ranks or more, has %d"
              % comm.Get_size(), flush=True)
        return 1
    hosts = comm.gather(MPI.Get_processor_name(), root=0)
    if comm.Get_rank() <= 1:
        lat = pingpong(comm)
    else:
        lat = None
    comm.Barrier()
    ranks = allreduce(comm)
    if comm.Get_rank() == 0:
        print("mpi_check: hosts %s" % " ".join(hosts), flush=True)
        print("mpi_check: pingpong ok %d iterations, half round trip %s"
              % (ITERATIONS, " ".join(lat)), flush=True)
        print("mpi_check: allreduce ok %d ranks, %d integers"
              % (ranks, ALLREDUCE_COUNT), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
