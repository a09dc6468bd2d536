/*
 * vhca-switch: the process.  Each external port is a UDP socket on the
 * host, the switch's end of a cable whose other end is a guest's -netdev
 * dgram or another switch's port; a control socket answers "info" (the
 * tables and counters) and "cable N up|down" (a peer plugged or
 * unplugged).  scripts/vhca_fabric.py starts it; docs/user-guide.rst,
 * "An InfiniBand subnet".
 *
 *   vhca-switch --guid GUID --name NAME --control PATH
 *               --port N=LOCAL_UDP_PORT:PEER_UDP_PORT ... [--busy-poll]
 *
 * --busy-poll: poll the ports without ever sleeping, as a switch ASIC
 * never does: no wake-up between a packet's arrival and its forwarding.
 * Only for a switch pinned to a core of its own (taskset): otherwise it
 * takes that core from the QEMUs (docs/benchmarks.rst, "InfiniBand
 * switch").
 *
 * Every address is 127.0.0.1: the fabric is on this host.  A host
 * program, not part of QEMU: QEMU's coding style, the C library's calls.
 *
 * The guests' QEMUs send runs of equal-sized packets as one UDP_SEGMENT
 * message and read with UDP_GRO (qemu-patches/0004): a window of RDMA
 * packets crosses the host's network stack once.  The switch does the
 * same, or it would cost a system call per packet each way and be the
 * bottleneck of the stream it forwards: it reads a batch of such runs in
 * one recvmmsg() (vhca-switch-udp.c), cuts them into packets for the
 * switch, and what it forwards out of a port waits, as pointers into
 * what it read, until the batch is done; then each port's packets leave
 * in UDP_SEGMENT runs, all of a port's in one sendmmsg().  A run that
 * goes out as it came in is sent from the receive buffer: the bytes are
 * copied only by the kernel, into the socket and out of it.
 *
 * Copyright (c) 2025 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#define _GNU_SOURCE         /* accept4(), recvmmsg(), sendmmsg() */

#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "vhca-switch.h"
#include "vhca-switch-udp.h"

/* A read: one datagram, or a run of them the kernel kept together. */
#define MAX_READ            65536
/* Reads one recvmmsg() takes from a port before the others get a turn. */
#define RX_BATCH            16
/* A UDP_SEGMENT message: the kernel's UDP_MAX_SEGMENTS, and a datagram. */
#define RUN_MAX_PACKETS     64
#define RUN_MAX_BYTES       65000
/* What may wait to go out of a port: a batch of reads, forwarded. */
#define TX_MAX_PACKETS      (RX_BATCH * RUN_MAX_PACKETS)
/* Room for the packets the switch builds (SMPs, PMA responses). */
#define TX_COPY_BYTES       65536
/* Messages a sendmmsg() takes. */
#define TX_MAX_MSGS         64

/* A packet waiting to go out: where its bytes lie until the flush. */
typedef struct TxPacket {
    const uint8_t *data;
    uint16_t len;
} TxPacket;

typedef struct SwitchPort {
    int fd;                         /* -1: no cable at this port */
    struct sockaddr_in peer;
    bool gso;                       /* UDP_SEGMENT works on this socket */
    /* Packets staged for the next flush, and copies of built ones. */
    unsigned tx_count;
    TxPacket tx[TX_MAX_PACKETS];
    size_t copy_used;
    uint8_t copy[TX_COPY_BYTES];
    uint64_t send_errors;
} SwitchPort;

typedef struct Switch {
    VhcaSwitch core;
    SwitchPort port[VHCA_SWITCH_MAX_PORTS + 1];
    int control_fd;
    /*
     * The batch of reads being forwarded.  Forwarded packets wait in the
     * out ports' queues as pointers into it, so it is not read into
     * again before every queue is flushed.
     */
    uint8_t rx_buf[RX_BATCH][MAX_READ];
} Switch;

static volatile sig_atomic_t stopping;

static void die(const char *what)
{
    fprintf(stderr, "vhca-switch: %s\n", what);
    exit(1);
}

static void on_signal(int sig)
{
    (void)sig;
    stopping = 1;
}

/*
 * Send @n messages, each of @npkts[i] packets; a message the kernel
 * refuses (a full socket buffer) is lost, as on a congested link.
 */
static void send_msgs(SwitchPort *p, struct mmsghdr *msgs,
                      const unsigned *npkts, unsigned n)
{
    unsigned done = 0;

    while (done < n) {
        int sent = sendmmsg(p->fd, msgs + done, n - done, 0);

        if (sent <= 0) {
            p->send_errors += npkts[done++];
        } else {
            done += (unsigned)sent;
        }
    }
}

/*
 * Send what waits at @p: runs of packets of one length (the last of a
 * run may be shorter, as UDP_SEGMENT allows), one message each, a
 * message's bytes gathered from where they lie.  A run that came in as
 * one read and goes out whole is one piece of the receive buffer: it
 * leaves without a copy in user space.  Up to TX_MAX_MSGS messages a
 * system call.
 */
static void flush(SwitchPort *p)
{
    static struct mmsghdr msgs[TX_MAX_MSGS];
    static struct iovec iov[TX_MAX_PACKETS];
    static union {
        char buf[VHCA_UDP_CMSG_SPACE];
        struct cmsghdr align;
    } ctrl[TX_MAX_MSGS];
    static unsigned npkts[TX_MAX_MSGS];
    unsigned i = 0, nmsg = 0, niov = 0;

    while (i < p->tx_count) {
        struct msghdr *msg = &msgs[nmsg].msg_hdr;
        uint16_t seg = p->tx[i].len;
        size_t bytes = 0;
        unsigned j = i;

        memset(msg, 0, sizeof(*msg));
        msg->msg_name = &p->peer;
        msg->msg_namelen = sizeof(p->peer);
        msg->msg_iov = &iov[niov];
        do {
            const TxPacket *t = &p->tx[j++];

            if (msg->msg_iovlen &&
                (const uint8_t *)iov[niov - 1].iov_base +
                iov[niov - 1].iov_len == t->data) {
                iov[niov - 1].iov_len += t->len;
            } else {
                iov[niov].iov_base = (void *)t->data;
                iov[niov++].iov_len = t->len;
                msg->msg_iovlen++;
            }
            bytes += t->len;
        } while (p->gso && j < p->tx_count && j - i < RUN_MAX_PACKETS &&
                 p->tx[j - 1].len == seg && p->tx[j].len <= seg &&
                 bytes + p->tx[j].len <= RUN_MAX_BYTES);
        if (j - i > 1) {
            vhca_udp_set_segment(msg, ctrl[nmsg].buf, seg);
        }
        npkts[nmsg++] = j - i;
        i = j;
        if (nmsg == TX_MAX_MSGS || i == p->tx_count) {
            send_msgs(p, msgs, npkts, nmsg);
            nmsg = 0;
            niov = 0;
        }
    }
    p->tx_count = 0;
    p->copy_used = 0;
}

static void flush_all(Switch *s)
{
    unsigned port;

    for (port = 1; port <= s->core.nports; port++) {
        if (s->port[port].tx_count) {
            flush(&s->port[port]);
        }
    }
}

/* Whether @pkt lies in the batch of reads (the pointer's value only). */
static bool in_rx_buf(const Switch *s, const uint8_t *pkt, size_t len)
{
    uintptr_t off = (uintptr_t)pkt - (uintptr_t)s->rx_buf;

    return off < sizeof(s->rx_buf) && len <= sizeof(s->rx_buf) - off;
}

/*
 * Stage a packet for @port's next flush.  A forwarded one is the very
 * bytes read, in rx_buf, and waits there; one the switch built (an SMP,
 * a response) is on its stack and is copied.
 */
static void transmit(void *opaque, unsigned port, const uint8_t *pkt,
                     size_t len)
{
    Switch *s = opaque;
    SwitchPort *p = &s->port[port];
    TxPacket *t;

    if (p->fd < 0 || len > RUN_MAX_BYTES) {
        p->send_errors++;
        return;
    }
    if (p->tx_count == TX_MAX_PACKETS ||
        (!in_rx_buf(s, pkt, len) && p->copy_used + len > TX_COPY_BYTES)) {
        flush(p);
    }
    if (!in_rx_buf(s, pkt, len)) {
        memcpy(p->copy + p->copy_used, pkt, len);
        pkt = p->copy + p->copy_used;
        p->copy_used += len;
    }
    t = &p->tx[p->tx_count++];
    t->data = pkt;
    t->len = (uint16_t)len;
}

static const VhcaSwitchOps switch_ops = {
    .transmit = transmit,
};

/* --port N=LOCAL:PEER */
static void add_port(Switch *s, const char *spec)
{
    unsigned n, local, peer;
    SwitchPort *p;

    if (sscanf(spec, "%u=%u:%u", &n, &local, &peer) != 3 || n == 0 ||
        n > VHCA_SWITCH_MAX_PORTS || local > 65535 || peer > 65535) {
        fprintf(stderr, "vhca-switch: bad --port '%s': want N=LOCAL:PEER "
                "(N 1..%d, UDP ports)\n", spec, VHCA_SWITCH_MAX_PORTS);
        exit(1);
    }
    p = &s->port[n];
    if (p->fd >= 0) {
        fprintf(stderr, "vhca-switch: port %u given twice\n", n);
        exit(1);
    }
    p->fd = vhca_udp_socket(local);
    if (p->fd < 0) {
        fprintf(stderr, "vhca-switch: cannot bind UDP port %u: %s\n",
                local, strerror(errno));
        exit(1);
    }
    p->gso = vhca_udp_can_segment(p->fd);
    p->peer.sin_family = AF_INET;
    p->peer.sin_port = htons(peer);
    p->peer.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
}

static int control_socket(const char *path)
{
    struct sockaddr_un addr = { .sun_family = AF_UNIX };
    int fd;

    if (strlen(path) >= sizeof(addr.sun_path)) {
        die("--control path too long");
    }
    strcpy(addr.sun_path, path);
    unlink(path);
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || bind(fd, (struct sockaddr *)&addr, sizeof(addr)) ||
        listen(fd, 4)) {
        fprintf(stderr, "vhca-switch: cannot listen on %s: %s\n", path,
                strerror(errno));
        exit(1);
    }
    return fd;
}

static void write_line(void *opaque, const char *text)
{
    FILE *f = opaque;

    fprintf(f, "%s\n", text);
}

/*
 * How long a control client may take to send its line or read the
 * answer: the switch forwards nothing meanwhile, so a client that
 * connects and goes quiet must not hold it for longer.
 */
#define CONTROL_TIMEOUT_MS  500

/* One command from the control socket, answered and closed. */
static void control(Switch *s)
{
    const struct timeval timeout = {
        .tv_usec = CONTROL_TIMEOUT_MS * 1000,
    };
    char cmd[128] = "";
    unsigned port;
    char what[8];
    FILE *f;
    int fd = accept4(s->control_fd, NULL, NULL, SOCK_CLOEXEC);

    if (fd < 0) {
        return;
    }
    if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout,
                   sizeof(timeout)) < 0 ||
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout,
                   sizeof(timeout)) < 0) {
        close(fd);
        return;
    }
    f = fdopen(fd, "r+");
    if (!f) {
        close(fd);
        return;
    }
    if (!fgets(cmd, sizeof(cmd), f)) {
        cmd[0] = '\0';
    }
    if (!strncmp(cmd, "info", 4)) {
        vhca_switch_dump(&s->core, write_line, f);
        for (port = 1; port <= s->core.nports; port++) {
            if (s->port[port].send_errors) {
                fprintf(f, "port %u send-errors %llu\n", port,
                        (unsigned long long)s->port[port].send_errors);
            }
        }
    } else if (sscanf(cmd, "cable %u %7s", &port, what) == 2 &&
               port >= 1 && port <= s->core.nports &&
               (!strcmp(what, "up") || !strcmp(what, "down"))) {
        vhca_switch_set_cable(&s->core, port,
                              !strcmp(what, "up") && s->port[port].fd >= 0);
        fprintf(f, "ok\n");
    } else {
        fprintf(f, "error: unknown command; try 'info' or "
                "'cable N up|down'\n");
    }
    fclose(f);
}

/*
 * Read what @port's cable brought, up to RX_BATCH reads in one system
 * call, each a run of packets (UDP_GRO: the kernel says their length);
 * hand each packet to the switch, then send what it forwarded.
 */
static void receive(Switch *s, unsigned port)
{
    static struct mmsghdr msgs[RX_BATCH];
    static struct iovec iov[RX_BATCH];
    static union {
        char buf[VHCA_UDP_CMSG_SPACE];
        struct cmsghdr align;
    } ctrl[RX_BATCH];
    int i, n;

    for (i = 0; i < RX_BATCH; i++) {
        iov[i].iov_base = s->rx_buf[i];
        iov[i].iov_len = MAX_READ;
        memset(&msgs[i], 0, sizeof(msgs[i]));
        msgs[i].msg_hdr.msg_iov = &iov[i];
        msgs[i].msg_hdr.msg_iovlen = 1;
        msgs[i].msg_hdr.msg_control = ctrl[i].buf;
        msgs[i].msg_hdr.msg_controllen = sizeof(ctrl[i].buf);
    }
    n = recvmmsg(s->port[port].fd, msgs, RX_BATCH, 0, NULL);
    for (i = 0; i < n; i++) {
        size_t len = msgs[i].msg_len, off;
        size_t seg = vhca_udp_gro_size(&msgs[i].msg_hdr, len);

        for (off = 0; off < len; off += seg) {
            vhca_switch_receive(&s->core, port, s->rx_buf[i] + off,
                                len - off < seg ? len - off : seg);
        }
    }
    flush_all(s);
}

int main(int argc, char **argv)
{
    static const struct option options[] = {
        { "guid", required_argument, NULL, 'g' },
        { "name", required_argument, NULL, 'n' },
        { "control", required_argument, NULL, 'c' },
        { "port", required_argument, NULL, 'p' },
        { "busy-poll", no_argument, NULL, 'b' },
        { NULL, 0, NULL, 0 },
    };
    static Switch s;
    struct pollfd fds[VHCA_SWITCH_MAX_PORTS + 1];
    unsigned ports[VHCA_SWITCH_MAX_PORTS + 1];
    const char *name = "vhca-switch", *control_path = NULL;
    unsigned long long guid = 0;
    struct sigaction act = { .sa_flags = 0 };
    unsigned nports = 0, i, nfds;
    int timeout = -1;               /* --busy-poll: 0 */
    char *end;
    int opt;

    for (i = 0; i <= VHCA_SWITCH_MAX_PORTS; i++) {
        s.port[i].fd = -1;
    }
    while ((opt = getopt_long(argc, argv, "", options, NULL)) != -1) {
        switch (opt) {
        case 'g':
            guid = strtoull(optarg, &end, 0);
            if (*end) {
                die("--guid: not a number");
            }
            break;
        case 'n':
            name = optarg;
            break;
        case 'b':
            timeout = 0;
            break;
        case 'c':
            control_path = optarg;
            break;
        case 'p':
            add_port(&s, optarg);
            break;
        default:
            die("usage: vhca-switch --guid GUID --name NAME --control PATH "
                "--port N=LOCAL_UDP:PEER_UDP ... [--busy-poll]");
        }
    }
    for (i = 1; i <= VHCA_SWITCH_MAX_PORTS; i++) {
        if (s.port[i].fd >= 0) {
            nports = i;
        }
    }
    if (!guid || !control_path || !nports) {
        die("--guid, --control and at least one --port are needed");
    }

    vhca_switch_init(&s.core, nports, guid, name, &switch_ops, &s);
    for (i = 1; i <= nports; i++) {
        vhca_switch_set_cable(&s.core, i, s.port[i].fd >= 0);
    }
    s.control_fd = control_socket(control_path);
    sigemptyset(&act.sa_mask);
    act.sa_handler = on_signal;
    sigaction(SIGTERM, &act, NULL);
    sigaction(SIGINT, &act, NULL);
    act.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &act, NULL);

    nfds = 0;
    fds[nfds].fd = s.control_fd;
    fds[nfds].events = POLLIN;
    ports[nfds++] = 0;
    for (i = 1; i <= nports; i++) {
        if (s.port[i].fd >= 0) {
            fds[nfds].fd = s.port[i].fd;
            fds[nfds].events = POLLIN;
            ports[nfds++] = i;
        }
    }
    while (!stopping) {
        if (poll(fds, nfds, timeout) < 0) {
            if (errno == EINTR) {
                continue;
            }
            die("poll failed");
        }
        for (i = 0; i < nfds; i++) {
            if (!(fds[i].revents & POLLIN)) {
                continue;
            }
            if (ports[i] == 0) {
                control(&s);
            } else {
                receive(&s, ports[i]);
            }
        }
    }
    unlink(control_path);
    return 0;
}
