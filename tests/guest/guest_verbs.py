"""What every pyverbs script that runs inside a guest needs: the vhca
device, the GID of its IPv4 address, a failure exit, and for the two-sided
scripts a named device, the address a peer reaches it by, the commands
the test writes into a FIFO and an RC connection.

Runs inside a guest only (it imports pyverbs); guest_scripts.put() copies
it next to the script that imports it."""
import sys

import pyverbs.device as d
import pyverbs.enums as e
from pyverbs.addr import GID, AHAttr, GlobalRoute
from pyverbs.qp import QPAttr

PORT = 1


def fail(msg):
    """Report a failure the test looks for, and exit."""
    print("FAIL: " + msg, flush=True)
    sys.exit(1)


def vhca_context():
    """A context on the guest's vhca RDMA device."""
    for dev in d.get_device_list():
        name = dev.name.decode()
        if name.startswith("vhca"):
            return d.Context(name=name)
    fail("no vhca RDMA device")


def ipv4_gid_index(ctx):
    """The GID table index of the interface's IPv4 address, ::ffff:a.b.c.d
    (IBTA A17.4.1.1; every GID of a vhca is a RoCE v2 GID)."""
    for idx in range(ctx.query_port(PORT).gid_tbl_len):
        if str(ctx.query_gid(PORT, idx)).startswith(
                "0000:0000:0000:0000:0000:ffff:"):
            return idx
    fail("no IPv4 RoCEv2 GID on port %d" % PORT)


def local_address(ctx):
    """How a peer reaches this port: (the source GID index, the address
    it passes to connect()).  On RoCE the IPv4 address's GID; on an
    InfiniBand port "lid:N", its LID, as the subnet manager assigned it:
    inside a subnet a path needs no GRH (IBTA 8.3)."""
    port = ctx.query_port(PORT)
    if port.link_layer == e.IBV_LINK_LAYER_INFINIBAND:
        return 0, "lid:%d" % port.lid
    idx = ipv4_gid_index(ctx)
    return idx, str(ctx.query_gid(PORT, idx))


def context(name):
    """A context on RDMA device name (vhca0, rxe0)."""
    for dev in d.get_device_list():
        if dev.name.decode() == name:
            return d.Context(name=name)
    fail("no RDMA device %s" % name)


def read_command(fifo):
    """The next line the test wrote into fifo, split.  An open can meet
    the previous line's writer before it closed, and then reads only its
    end of file: that is no command, so open again."""
    while True:
        with open(fifo) as f:
            line = f.readline().split()
        if line:
            return line


def connect(qp, sgid_index, peer_qpn, peer_gid, timeout=14, retry_cnt=7,
            rd_atomic=4):
    """Take RC QP qp from INIT to RTS towards peer_qpn at peer_gid (a GID,
    or "lid:N" from local_address() on an InfiniBand port): PSNs 0,
    rd_atomic RDMA READs or atomics each way, path MTU 1024, the Local ACK
    Timeout 4.096 us * 2^timeout (14: 67 ms), retry_cnt retries and seven
    RNR retries."""
    attr = QPAttr(qp_state=e.IBV_QPS_RTR, path_mtu=e.IBV_MTU_1024)
    if peer_gid.startswith("lid:"):
        attr.ah_attr = AHAttr(port_num=PORT, dlid=int(peer_gid[4:]))
    else:
        gr = GlobalRoute(dgid=GID(peer_gid), sgid_index=sgid_index,
                         hop_limit=64)
        attr.ah_attr = AHAttr(port_num=PORT, is_global=1, gr=gr)
    attr.dest_qp_num = peer_qpn
    attr.rq_psn = 0
    attr.max_dest_rd_atomic = rd_atomic
    attr.min_rnr_timer = 12
    qp.modify(attr, e.IBV_QP_STATE | e.IBV_QP_AV | e.IBV_QP_PATH_MTU |
              e.IBV_QP_DEST_QPN | e.IBV_QP_RQ_PSN |
              e.IBV_QP_MAX_DEST_RD_ATOMIC | e.IBV_QP_MIN_RNR_TIMER)
    attr = QPAttr(qp_state=e.IBV_QPS_RTS)
    attr.timeout = timeout
    attr.retry_cnt = retry_cnt
    attr.rnr_retry = 7
    attr.sq_psn = 0
    attr.max_rd_atomic = rd_atomic
    qp.modify(attr, e.IBV_QP_STATE | e.IBV_QP_TIMEOUT | e.IBV_QP_RETRY_CNT |
              e.IBV_QP_RNR_RETRY | e.IBV_QP_SQ_PSN | e.IBV_QP_MAX_QP_RD_ATOMIC)
