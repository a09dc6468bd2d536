/*
 * vhca-switch: the process.  Each external port is a UDP socket on the
 * host, the switch's end of a cable whose other end is a guest's -netdev
 * dgram or another switch's port; a control socket answers "info" (the
 * tables and counters) and "cable N up|down" (a peer plugged or
 * unplugged).  scripts/vhca_fabric.py starts it; docs/user-guide.rst,
 * "An InfiniBand subnet".
 *
 *   vhca-switch --guid GUID --name NAME --control PATH
 *               --port N=LOCAL_UDP_PORT:PEER_UDP_PORT ...
 *
 * Every address is 127.0.0.1: the fabric is on this host.  A host
 * program, not part of QEMU: QEMU's coding style, the C library's calls.
 *
 * The guests' QEMUs send runs of equal-sized packets as one UDP_SEGMENT
 * message and read with UDP_GRO (qemu-patches/0004): a window of RDMA
 * packets crosses the host's network stack once.  The switch does the
 * same, or it would cost a system call per packet each way and be the
 * bottleneck of the stream it forwards: it reads with UDP_GRO and cuts
 * what it reads into packets, and what it forwards out of a port waits
 * until the read is done and leaves in runs with UDP_SEGMENT.
 *
 * Copyright (c) 2025 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#define _GNU_SOURCE         /* accept4() */

#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/udp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "vhca-switch.h"

/* A read: one datagram, or a run of them the kernel kept together. */
#define MAX_READ            65536
/* Deep queues, as a switch's buffers: a TCG guest sends in bursts. */
#define SOCKET_BUFFER       (4 << 20)
/* Reads one port may do before the others get a turn. */
#define RX_BUDGET           16
/* What waits to go out of a port: packets and bytes (a run's limits). */
#define TX_MAX_PACKETS      64
#define TX_MAX_BYTES        65000

#ifndef UDP_SEGMENT
#define UDP_SEGMENT         103
#endif
#ifndef UDP_GRO
#define UDP_GRO             104
#endif

typedef struct SwitchPort {
    int fd;                         /* -1: no cable at this port */
    struct sockaddr_in peer;
    bool gso;                       /* UDP_SEGMENT works on this socket */
    /* Packets staged for the next flush: lengths, and the bytes. */
    unsigned tx_count;
    size_t tx_bytes;
    uint16_t tx_len[TX_MAX_PACKETS];
    uint8_t tx_buf[TX_MAX_BYTES];
    uint64_t send_errors;
} SwitchPort;

typedef struct Switch {
    VhcaSwitch core;
    SwitchPort port[VHCA_SWITCH_MAX_PORTS + 1];
    int control_fd;
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

/* Send @n packets of @seg bytes (the last may be shorter) in one message. */
static void send_run(SwitchPort *p, const uint8_t *data, size_t bytes,
                     unsigned n, uint16_t seg)
{
    union {
        char buf[CMSG_SPACE(sizeof(uint16_t))];
        struct cmsghdr align;
    } ctrl;
    struct iovec iov = { .iov_base = (void *)data, .iov_len = bytes };
    struct msghdr msg = {
        .msg_name = &p->peer,
        .msg_namelen = sizeof(p->peer),
        .msg_iov = &iov,
        .msg_iovlen = 1,
    };

    if (n > 1) {
        struct cmsghdr *cmsg;

        msg.msg_control = ctrl.buf;
        msg.msg_controllen = sizeof(ctrl.buf);
        cmsg = CMSG_FIRSTHDR(&msg);
        cmsg->cmsg_level = SOL_UDP;
        cmsg->cmsg_type = UDP_SEGMENT;
        cmsg->cmsg_len = CMSG_LEN(sizeof(seg));
        memcpy(CMSG_DATA(cmsg), &seg, sizeof(seg));
    }
    if (sendmsg(p->fd, &msg, 0) < 0) {
        /* A full socket buffer: lost, as on a congested link. */
        p->send_errors += n;
    }
}

/*
 * Send what waits at @p: runs of packets of one length (the last of a
 * run may be shorter, as UDP_SEGMENT allows), one message each.
 */
static void flush(SwitchPort *p)
{
    const uint8_t *data = p->tx_buf;
    unsigned i = 0;

    while (i < p->tx_count) {
        uint16_t seg = p->tx_len[i];
        size_t bytes = seg;
        unsigned j = i + 1;

        while (p->gso && j < p->tx_count && p->tx_len[j] <= seg) {
            bytes += p->tx_len[j];
            if (p->tx_len[j++] < seg) {
                break;
            }
        }
        send_run(p, data, bytes, j - i, seg);
        data += bytes;
        i = j;
    }
    p->tx_count = 0;
    p->tx_bytes = 0;
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

static void transmit(void *opaque, unsigned port, const uint8_t *pkt,
                     size_t len)
{
    Switch *s = opaque;
    SwitchPort *p = &s->port[port];

    if (p->fd < 0 || len > TX_MAX_BYTES) {
        p->send_errors++;
        return;
    }
    if (p->tx_count == TX_MAX_PACKETS || p->tx_bytes + len > TX_MAX_BYTES) {
        flush(p);
    }
    memcpy(p->tx_buf + p->tx_bytes, pkt, len);
    p->tx_len[p->tx_count++] = (uint16_t)len;
    p->tx_bytes += len;
}

static const VhcaSwitchOps switch_ops = {
    .transmit = transmit,
};

static int udp_socket(unsigned local_port)
{
    struct sockaddr_in addr = {
        .sin_family = AF_INET,
        .sin_port = htons(local_port),
        .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
    };
    int size = SOCKET_BUFFER;
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

    if (fd < 0) {
        die("cannot create a UDP socket");
    }
    /* Past net.core.rmem_max if we may (root), else as deep as allowed. */
    if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof(size))) {
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
    }
    if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &size, sizeof(size))) {
        setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof(size));
    }
    /* Without UDP_GRO (an old kernel) every read is one packet. */
    setsockopt(fd, SOL_UDP, UDP_GRO, &(int){ 1 }, sizeof(int));
    if (bind(fd, (struct sockaddr *)&addr, sizeof(addr))) {
        fprintf(stderr, "vhca-switch: cannot bind UDP port %u: %s\n",
                local_port, strerror(errno));
        exit(1);
    }
    return fd;
}

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
    p->fd = udp_socket(local);
    /* The kernel takes UDP_SEGMENT on a UDP socket since Linux 4.18. */
    p->gso = !setsockopt(p->fd, SOL_UDP, UDP_SEGMENT, &(int){ 0 },
                         sizeof(int));
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

/* One command from the control socket, answered and closed. */
static void control(Switch *s)
{
    char cmd[128] = "";
    unsigned port;
    char what[8];
    FILE *f;
    int fd = accept4(s->control_fd, NULL, NULL, SOCK_CLOEXEC);

    if (fd < 0) {
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
 * Read what @port's cable brought, a run of packets at a time (UDP_GRO:
 * the kernel says their length), and hand each to the switch.
 */
static void receive(Switch *s, unsigned port)
{
    static uint8_t buf[MAX_READ];
    union {
        char buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } ctrl;
    unsigned n;

    for (n = 0; n < RX_BUDGET; n++) {
        struct iovec iov = { .iov_base = buf, .iov_len = sizeof(buf) };
        struct msghdr msg = {
            .msg_iov = &iov,
            .msg_iovlen = 1,
            .msg_control = ctrl.buf,
            .msg_controllen = sizeof(ctrl.buf),
        };
        struct cmsghdr *cmsg;
        ssize_t len = recvmsg(s->port[port].fd, &msg, 0);
        size_t seg, off;

        if (len < 0) {
            break;
        }
        seg = (size_t)len;
        for (cmsg = CMSG_FIRSTHDR(&msg); cmsg;
             cmsg = CMSG_NXTHDR(&msg, cmsg)) {
            int gso_size;

            if (cmsg->cmsg_level == SOL_UDP && cmsg->cmsg_type == UDP_GRO) {
                memcpy(&gso_size, CMSG_DATA(cmsg), sizeof(gso_size));
                if (gso_size > 0) {
                    seg = (size_t)gso_size;
                }
            }
        }
        for (off = 0; off < (size_t)len; off += seg) {
            size_t plen = (size_t)len - off < seg ? (size_t)len - off : seg;

            vhca_switch_receive(&s->core, port, buf + off, plen);
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
        { NULL, 0, NULL, 0 },
    };
    static Switch s;
    struct pollfd fds[VHCA_SWITCH_MAX_PORTS + 1];
    unsigned ports[VHCA_SWITCH_MAX_PORTS + 1];
    const char *name = "vhca-switch", *control_path = NULL;
    unsigned long long guid = 0;
    struct sigaction act = { .sa_flags = 0 };
    unsigned nports = 0, i, nfds;
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
        case 'c':
            control_path = optarg;
            break;
        case 'p':
            add_port(&s, optarg);
            break;
        default:
            die("usage: vhca-switch --guid GUID --name NAME --control PATH "
                "--port N=LOCAL_UDP:PEER_UDP ...");
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
        if (poll(fds, nfds, -1) < 0) {
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
