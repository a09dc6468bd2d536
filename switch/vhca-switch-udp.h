/*
 * vhca-switch: the UDP end of a cable, as the guests' QEMUs use theirs
 * (-netdev dgram, qemu-patches/0004): deep socket buffers, reads with
 * UDP_GRO (a run of packets the kernel kept together, and their
 * length), writes of runs with UDP_SEGMENT.  For the switch's ports
 * (vhca-switch-main.c) and for vhca-switch-bench.c, which plays the
 * guests.
 *
 * Copyright (c) 2025 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef VHCA_SWITCH_UDP_H
#define VHCA_SWITCH_UDP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

/* Room for the one control message of a read or a write. */
#define VHCA_UDP_CMSG_SPACE     CMSG_SPACE(sizeof(int))

/*
 * A non-blocking UDP socket bound to 127.0.0.1:@local_port (0: any),
 * with UDP_GRO where the kernel has it; -1 and errno if it cannot bind.
 */
int vhca_udp_socket(unsigned local_port);

/* The kernel takes UDP_SEGMENT on this socket (Linux 4.18 and later). */
bool vhca_udp_can_segment(int fd);

/* The socket's local UDP port. */
unsigned vhca_udp_local_port(int fd);

/*
 * Make @msg send its bytes as packets of @seg bytes (the last may be
 * shorter), UDP_SEGMENT, with @ctrl (VHCA_UDP_CMSG_SPACE bytes, aligned
 * for a cmsghdr) as its control buffer.
 */
void vhca_udp_set_segment(struct msghdr *msg, void *ctrl, uint16_t seg);

/*
 * The length of each packet in the @len bytes that @msg read: the
 * UDP_GRO size if the kernel gave one, else @len (one datagram).
 */
size_t vhca_udp_gro_size(struct msghdr *msg, size_t len);

#endif /* VHCA_SWITCH_UDP_H */
