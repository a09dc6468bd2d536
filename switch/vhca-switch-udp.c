/*
 * vhca-switch: the UDP end of a cable (vhca-switch-udp.h).
 *
 * Copyright (c) 2025 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <string.h>
#include <unistd.h>

#include "vhca-switch-udp.h"

#ifndef UDP_SEGMENT
#define UDP_SEGMENT         103
#endif
#ifndef UDP_GRO
#define UDP_GRO             104
#endif

/* Deep queues, as a switch's buffers: a TCG guest sends in bursts. */
#define SOCKET_BUFFER       (4 << 20)

int vhca_udp_socket(unsigned local_port)
{
    struct sockaddr_in addr = {
        .sin_family = AF_INET,
        .sin_port = htons(local_port),
        .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
    };
    int size = SOCKET_BUFFER;
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

    if (fd < 0) {
        return -1;
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
        close(fd);
        return -1;
    }
    return fd;
}

bool vhca_udp_can_segment(int fd)
{
    return !setsockopt(fd, SOL_UDP, UDP_SEGMENT, &(int){ 0 }, sizeof(int));
}

unsigned vhca_udp_local_port(int fd)
{
    struct sockaddr_in addr;
    socklen_t len = sizeof(addr);

    if (getsockname(fd, (struct sockaddr *)&addr, &len)) {
        return 0;
    }
    return ntohs(addr.sin_port);
}

void vhca_udp_set_segment(struct msghdr *msg, void *ctrl, uint16_t seg)
{
    struct cmsghdr *cmsg;

    msg->msg_control = ctrl;
    msg->msg_controllen = CMSG_SPACE(sizeof(seg));
    cmsg = CMSG_FIRSTHDR(msg);
    cmsg->cmsg_level = SOL_UDP;
    cmsg->cmsg_type = UDP_SEGMENT;
    cmsg->cmsg_len = CMSG_LEN(sizeof(seg));
    memcpy(CMSG_DATA(cmsg), &seg, sizeof(seg));
}

size_t vhca_udp_gro_size(struct msghdr *msg, size_t len)
{
    struct cmsghdr *cmsg;
    int gso_size;

    for (cmsg = CMSG_FIRSTHDR(msg); cmsg; cmsg = CMSG_NXTHDR(msg, cmsg)) {
        if (cmsg->cmsg_level == SOL_UDP && cmsg->cmsg_type == UDP_GRO &&
            cmsg->cmsg_len >= CMSG_LEN(sizeof(gso_size))) {
            memcpy(&gso_size, CMSG_DATA(cmsg), sizeof(gso_size));
            if (gso_size > 0 && (size_t)gso_size < len) {
                return (size_t)gso_size;
            }
        }
    }
    return len;
}
