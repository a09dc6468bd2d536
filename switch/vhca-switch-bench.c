/*
 * vhca-switch-bench: how fast vhca-switch forwards, on this host alone.
 * docs/benchmarks.rst, "InfiniBand switch".
 *
 *   vhca-switch-bench [--switch PATH] [--seconds S] [--size BYTES]
 *
 * It starts a vhca-switch with two ports on 127.0.0.1, plays the subnet
 * manager on port 1 as opensm would (directed route SMPs, IBTA Vol 1
 * 14.2.2: every port ARMED then ACTIVE, LIDs 1 and 2 in the LFT on
 * ports 1 and 2), then sends RDMA WRITE middle packets of BYTES payload
 * (valid LRH, BTH, ICRC and VCRC, the engine's builder) to port 1 in
 * UDP_SEGMENT runs, as a guest's QEMU sends a window, and counts what
 * comes out of port 2.  It prints the bandwidth through the switch and
 * the switch's CPU time per GiB forwarded, the figure that says whether
 * the switch can keep up with the QEMUs on either side.  A benchmark,
 * not a test: it prints figures and judges none.
 *
 * Copyright (c) 2025 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#define _GNU_SOURCE         /* mkdtemp() */

#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "vhca-switch.h"
#include "vhca-switch-udp.h"
#include "vhca-mad.h"
#include "vhca-wire.h"

/* One UDP_SEGMENT message: what the guests' QEMUs send at most. */
#define RUN_BYTES           65000

#define MIN(a, b)           ((a) < (b) ? (a) : (b))
/* The SM's LIDs: the two ends, and the switch's port 0. */
#define LID_END1            1
#define LID_END2            2
#define LID_SWITCH          3

static void die(const char *what)
{
    fprintf(stderr, "vhca-switch-bench: %s: %s\n", what, strerror(errno));
    exit(1);
}

static double now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int udp_socket(void)
{
    int fd = vhca_udp_socket(0);

    if (fd < 0) {
        die("UDP socket");
    }
    return fd;
}

/* A UDP port free now, for the switch to bind (closed again). */
static unsigned free_port(void)
{
    int fd = udp_socket();
    unsigned port = vhca_udp_local_port(fd);

    close(fd);
    return port;
}

static void connect_to(int fd, unsigned port)
{
    struct sockaddr_in addr = {
        .sin_family = AF_INET,
        .sin_port = htons(port),
        .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
    };

    if (connect(fd, (struct sockaddr *)&addr, sizeof(addr))) {
        die("connect");
    }
}

/* The switch's user and system CPU time so far, in seconds. */
static double cpu_seconds(pid_t pid)
{
    char path[64], buf[1024], *p;
    unsigned long utime, stime;
    FILE *f;

    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    f = fopen(path, "r");
    if (!f || !fgets(buf, sizeof(buf), f)) {
        die("reading the switch's /proc stat");
    }
    fclose(f);
    /* Fields 14 and 15, counted after the command's closing ')'. */
    p = strrchr(buf, ')');
    if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u "
                     "%lu %lu", &utime, &stime) != 2) {
        die("parsing the switch's /proc stat");
    }
    return (double)(utime + stime) / sysconf(_SC_CLK_TCK);
}

/* The switch's control socket: one command, its answer to stdout. */
static bool control(const char *path, const char *cmd, bool print)
{
    struct sockaddr_un addr = { .sun_family = AF_UNIX };
    char buf[4096];
    ssize_t n;
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

    snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", path);
    if (fd < 0 || connect(fd, (struct sockaddr *)&addr, sizeof(addr))) {
        if (fd >= 0) {
            close(fd);
        }
        return false;
    }
    if (write(fd, cmd, strlen(cmd)) < 0) {
        die("control write");
    }
    /* The command is all said: the switch reads a line, or to the end. */
    shutdown(fd, SHUT_WR);
    while ((n = read(fd, buf, sizeof(buf))) > 0) {
        if (print) {
            fwrite(buf, 1, n, stdout);
        }
    }
    close(fd);
    return true;
}

/*
 * A Get or Set of the switch one hop away, by directed route, answered:
 * its status.  The SM's own CA sent it out of its port 1 (C14-9:1).
 */
static uint16_t smp(int fd, uint8_t method, uint16_t attr, uint32_t mod,
                    uint8_t *data)
{
    uint8_t mad[VHCA_MAD_SIZE], frame[VHCA_WIRE_SMP_LEN + 64];
    struct pollfd pfd = { .fd = fd, .events = POLLIN };
    VhcaWirePacket pkt;
    size_t len;
    ssize_t n;

    vhca_smp_init_dr(mad, method, attr, mod, 1, 1, NULL);
    memcpy(mad + VHCA_SMP_DATA, data, VHCA_SMP_DATA_LEN);
    len = vhca_wire_build_smp(mad, VHCA_IB_LID_PERMISSIVE,
                              VHCA_IB_LID_PERMISSIVE, frame, sizeof(frame));
    if (send(fd, frame, len, 0) < 0) {
        die("sending an SMP");
    }
    if (poll(&pfd, 1, 2000) != 1) {
        fprintf(stderr, "vhca-switch-bench: the switch did not answer an "
                "SMP\n");
        exit(1);
    }
    n = recv(fd, frame, sizeof(frame), 0);
    if (n < 0 || vhca_wire_parse_lrh(frame, n, &pkt) != VHCA_WIRE_OK ||
        vhca_wire_parse_ib(frame, n, &pkt) != VHCA_WIRE_OK ||
        pkt.payload_len != VHCA_MAD_SIZE) {
        fprintf(stderr, "vhca-switch-bench: a bad SMP response\n");
        exit(1);
    }
    memcpy(data, pkt.payload + VHCA_SMP_DATA, VHCA_SMP_DATA_LEN);
    return vhca_ld_be16(pkt.payload + VHCA_MAD_STATUS) & ~VHCA_SMP_DIRECTION;
}

/* What opensm does to a switch with two CAs, for this bench's LIDs. */
static void subnet_manager(int fd)
{
    uint8_t data[VHCA_SMP_DATA_LEN];
    uint16_t status = 0;
    uint8_t state;
    unsigned port;

    for (state = VHCA_PORT_ARMED; state <= VHCA_PORT_ACTIVE; state++) {
        for (port = 0; port <= 2; port++) {
            memset(data, 0, sizeof(data));
            if (port == 0) {
                vhca_mad_set(data, VHCA_PI_LID, LID_SWITCH);
                vhca_mad_set(data, VHCA_PI_MASTER_SM_LID, LID_END1);
            }
            vhca_mad_set(data, VHCA_PI_PORT_STATE, state);
            status |= smp(fd, VHCA_MAD_METHOD_SET, VHCA_SMP_ATTR_PORT_INFO,
                          port, data);
        }
    }
    memset(data, VHCA_SWITCH_NO_PORT, sizeof(data));
    data[LID_END1] = 1;
    data[LID_END2] = 2;
    data[LID_SWITCH] = 0;
    status |= smp(fd, VHCA_MAD_METHOD_SET, VHCA_SMP_ATTR_LFT, 0, data);
    status |= smp(fd, VHCA_MAD_METHOD_GET, VHCA_SMP_ATTR_SWITCH_INFO, 0,
                  data);
    vhca_mad_set(data, VHCA_SI_LFT_TOP, LID_SWITCH);
    vhca_mad_set(data, VHCA_SI_PORT_STATE_CHANGE, 0);
    status |= smp(fd, VHCA_MAD_METHOD_SET, VHCA_SMP_ATTR_SWITCH_INFO, 0,
                  data);
    if (status) {
        fprintf(stderr, "vhca-switch-bench: the switch's SMA refused the "
                "SM (status 0x%x)\n", status);
        exit(1);
    }
}

/* Runs of @count packets of @len bytes at @run until @end, or killed. */
static void sender(int fd, const uint8_t *run, unsigned count, size_t len,
                   double end)
{
    union {
        char buf[VHCA_UDP_CMSG_SPACE];
        struct cmsghdr align;
    } ctrl;
    struct iovec iov = { .iov_base = (void *)run, .iov_len = count * len };
    struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
    struct pollfd pfd = { .fd = fd, .events = POLLOUT };

    vhca_udp_set_segment(&msg, ctrl.buf, (uint16_t)len);
    while (now() < end) {
        /* A full buffer on the way is the switch's backlog: wait. */
        if (sendmsg(fd, &msg, 0) < 0 && errno == EAGAIN) {
            poll(&pfd, 1, 10);
        }
    }
    _exit(0);
}

int main(int argc, char **argv)
{
    static const struct option options[] = {
        { "switch", required_argument, NULL, 's' },
        { "seconds", required_argument, NULL, 't' },
        { "size", required_argument, NULL, 'b' },
        { NULL, 0, NULL, 0 },
    };
    static uint8_t run[RUN_BYTES], buf[65536];
    char dir[] = "/tmp/vhca-switch-bench.XXXXXX", sock[128], spec[2][64];
    char self[4096], bin[4096 + 16];
    const char *binary = NULL;
    double seconds = 5, start, end, cpu0, cpu1, elapsed;
    unsigned size = 4096, count, i;
    uint64_t bytes = 0, packets = 0;
    int end1, end2, opt;
    VhcaWirePacket pkt;
    uint8_t *payload;
    pid_t sw, tx;
    size_t len;

    while ((opt = getopt_long(argc, argv, "", options, NULL)) != -1) {
        switch (opt) {
        case 's':
            binary = optarg;
            break;
        case 't':
            seconds = atof(optarg);
            break;
        case 'b':
            size = (unsigned)atoi(optarg);
            break;
        default:
            fprintf(stderr, "usage: vhca-switch-bench [--switch PATH] "
                    "[--seconds S] [--size BYTES]\n");
            return 1;
        }
    }
    if (size == 0 || size > 4096 || size % 4) {
        fprintf(stderr, "vhca-switch-bench: --size is a payload of 4..4096 "
                "bytes, a multiple of 4 (an IB MTU's)\n");
        return 1;
    }
    if (!binary) {
        /* The switch this bench was built with, in the same directory. */
        ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
        char *slash;

        self[n > 0 ? n : 0] = '\0';
        slash = strrchr(self, '/');
        if (slash) {
            *slash = '\0';
        }
        snprintf(bin, sizeof(bin), "%s/vhca-switch", self);
        binary = bin;
    }

    /* The packet: RC RDMA WRITE middle, LID 1 to LID 2, built once. */
    payload = calloc(1, size);
    for (i = 0; i < size; i++) {
        payload[i] = (uint8_t)(i * 7);
    }
    vhca_wire_ib_init(&pkt, 0, LID_END2, LID_END1,
                      VHCA_IB_OPCODE(RC, RDMA_WRITE_MIDDLE), 0xffff, 0x11);
    pkt.payload = payload;
    pkt.payload_len = size;
    len = vhca_wire_build(&pkt, run, sizeof(run));
    if (!len) {
        fprintf(stderr, "vhca-switch-bench: cannot build the packet\n");
        return 1;
    }
    count = RUN_BYTES / len;
    for (i = 1; i < count; i++) {
        memcpy(run + i * len, run, len);
    }

    end1 = udp_socket();
    end2 = udp_socket();
    if (!mkdtemp(dir)) {
        die("mkdtemp");
    }
    snprintf(sock, sizeof(sock), "%s/switch.sock", dir);
    snprintf(spec[0], sizeof(spec[0]), "1=%u:%u", free_port(),
             vhca_udp_local_port(end1));
    snprintf(spec[1], sizeof(spec[1]), "2=%u:%u", free_port(),
             vhca_udp_local_port(end2));
    sw = fork();
    if (sw == 0) {
        execl(binary, binary, "--guid", "0x5648434100000001", "--name",
              "bench", "--control", sock, "--port", spec[0], "--port",
              spec[1], (char *)NULL);
        die(binary);
    }
    for (i = 0; !control(sock, "\n", false); i++) {
        if (i == 200 || waitpid(sw, NULL, WNOHANG) == sw) {
            fprintf(stderr, "vhca-switch-bench: %s did not start\n", binary);
            return 1;
        }
        usleep(10000);
    }
    connect_to(end1, atoi(strchr(spec[0], '=') + 1));
    subnet_manager(end1);

    start = now();
    end = start + seconds;
    cpu0 = cpu_seconds(sw);
    tx = fork();
    if (tx == 0) {
        sender(end1, run, count, len, end);
    }
    while (now() < end) {
        struct pollfd pfd = { .fd = end2, .events = POLLIN };
        ssize_t n;

        if (poll(&pfd, 1, 100) != 1) {
            continue;
        }
        n = recv(end2, buf, sizeof(buf), MSG_DONTWAIT);
        if (n <= 0) {
            continue;
        }
        if (!packets && memcmp(buf, run, MIN((size_t)n, len))) {
            fprintf(stderr, "vhca-switch-bench: the switch changed a "
                    "packet\n");
        }
        bytes += n;
        packets += (n + len - 1) / len;
    }
    elapsed = now() - start;
    cpu1 = cpu_seconds(sw);
    waitpid(tx, NULL, 0);

    printf("packet %zu bytes (payload %u), runs of %u, %.1f s\n", len, size,
           count, elapsed);
    printf("forwarded %.0f MiB/s (%.0f kpkt/s); switch CPU %.0f%% of a "
           "core, %.2f s per GiB forwarded\n",
           bytes / elapsed / (1 << 20), packets / elapsed / 1000,
           100 * (cpu1 - cpu0) / elapsed,
           bytes ? (cpu1 - cpu0) / (bytes / (double)(1 << 30)) : 0);
    control(sock, "info\n", true);
    kill(sw, SIGTERM);
    waitpid(sw, NULL, 0);
    rmdir(dir);
    return 0;
}
