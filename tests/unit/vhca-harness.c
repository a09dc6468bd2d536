/*
 * Test harness for the vhca engine without QEMU.
 *
 * Copyright (c) 2025 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include <stddef.h>
#include <string.h>

#include "vhca-harness.h"

const uint8_t harness_mac[6] = { 0x52, 0x54, 0x00, 0x12, 0x34, 0x56 };

const VhcaCoreConfig harness_default_cfg = {
    .mac = { 0x52, 0x54, 0x00, 0x12, 0x34, 0x56 },
    .gid_tbl_len = 16,
    .num_db_pages = 4,
    .num_vectors = 8,
};

static bool ram_range(uint64_t addr, size_t len)
{
    return addr >= RAM_BASE && len <= RAM_SIZE &&
           addr - RAM_BASE <= RAM_SIZE - len;
}

static int h_dma_read(void *opaque, uint64_t addr, void *buf, size_t len)
{
    Harness *h = opaque;

    if (!ram_range(addr, len)) {
        return -1;
    }
    memcpy(buf, h->ram + (addr - RAM_BASE), len);
    return 0;
}

static int h_dma_write(void *opaque, uint64_t addr, const void *buf,
                       size_t len)
{
    Harness *h = opaque;

    if (h->fail_dma_write_after && --h->fail_dma_write_after == 0) {
        return -1;
    }
    if (!ram_range(addr, len)) {
        return -1;
    }
    memcpy(h->ram + (addr - RAM_BASE), buf, len);
    return 0;
}

static void h_send_frame(void *opaque, const uint8_t *buf, size_t len)
{
    Harness *h = opaque;

    g_assert_cmpuint(len, <=, VHCA_ETH_MAX_FRAME);
    g_assert_cmpuint(h->nframes, <, MAX_FRAMES);
    h->frames[h->nframes].len = len;
    memcpy(h->frames[h->nframes].data, buf, len);
    h->nframes++;
}

static void h_raise_irq(void *opaque, unsigned vector)
{
    Harness *h = opaque;

    g_assert_cmpuint(vector, <, h->core.cfg.num_vectors);
    h->irqs[vector]++;
}

static void h_rx_ready(void *opaque)
{
    Harness *h = opaque;

    h->rx_ready_calls++;
}

static void h_admin_cmd_done(void *opaque, uint32_t slot, uint16_t opcode,
                             uint32_t token, uint8_t status,
                             uint32_t syndrome)
{
    Harness *h = opaque;

    (void)slot;
    (void)syndrome;
    h->admin_done_calls++;
    h->last_opcode = opcode;
    h->last_token = token;
    h->last_status = status;
}

static void h_guest_error(void *opaque, VhcaGuestError kind, const char *msg)
{
    Harness *h = opaque;

    g_assert_cmpuint(kind, <, VHCA_GUEST_ERR__MAX);
    g_assert_nonnull(msg);
    g_assert_cmpuint(strlen(msg), >, 0);
    h->guest_errors[kind]++;
    g_strlcpy(h->last_error, msg, sizeof(h->last_error));
    if (g_test_verbose()) {
        g_test_message("guest error [%s]: %s",
                       vhca_core_guest_error_name(kind), msg);
    }
}

static const VhcaCoreOps harness_ops = {
    .dma_read = h_dma_read,
    .dma_write = h_dma_write,
    .send_frame = h_send_frame,
    .raise_irq = h_raise_irq,
    .rx_ready = h_rx_ready,
    .admin_cmd_done = h_admin_cmd_done,
    .guest_error = h_guest_error,
};

Harness *harness_new(const VhcaCoreConfig *cfg)
{
    Harness *h = g_new0(Harness, 1);

    h->ram = g_malloc0(RAM_SIZE);
    g_assert_null(vhca_core_config_check(cfg ? cfg : &harness_default_cfg));
    vhca_core_init(&h->core, cfg ? cfg : &harness_default_cfg, &harness_ops,
                   h);
    h->core.link_up = true;
    h->rx_ready_calls = 0;
    return h;
}

void harness_free(Harness *h)
{
    g_free(h->ram);
    g_free(h);
}

void *ram_ptr(Harness *h, uint64_t addr, size_t len)
{
    g_assert_true(ram_range(addr, len));
    return h->ram + (addr - RAM_BASE);
}

void ram_write(Harness *h, uint64_t addr, const void *buf, size_t len)
{
    memcpy(ram_ptr(h, addr, len), buf, len);
}

void ram_read(Harness *h, uint64_t addr, void *buf, size_t len)
{
    memcpy(buf, ram_ptr(h, addr, len), len);
}

uint32_t reg_read(Harness *h, uint32_t offset)
{
    return (uint32_t)vhca_core_reg_read(&h->core, offset, 4);
}

void reg_write(Harness *h, uint32_t offset, uint32_t value)
{
    vhca_core_reg_write(&h->core, offset, value, 4);
}

uint64_t counter(Harness *h, enum vhca_counter c)
{
    uint32_t lo = reg_read(h, VHCA_REG_COUNTERS + 8 * c);
    uint32_t hi = reg_read(h, VHCA_REG_COUNTERS + 8 * c + 4);

    return ((uint64_t)hi << 32) | lo;
}

unsigned guest_errors_total(const Harness *h)
{
    unsigned i, n = 0;

    for (i = 0; i < VHCA_GUEST_ERR__MAX; i++) {
        n += h->guest_errors[i];
    }
    return n;
}

void harness_enable(Harness *h)
{
    reg_write(h, VHCA_REG_ADMQ_BASE_LO, (uint32_t)ADMQ_ADDR);
    reg_write(h, VHCA_REG_ADMQ_BASE_HI, (uint32_t)(ADMQ_ADDR >> 32));
    reg_write(h, VHCA_REG_ADMQ_LOG_SIZE, ADMQ_LOG);
    reg_write(h, VHCA_REG_AEQ_BASE_LO, (uint32_t)AEQ_ADDR);
    reg_write(h, VHCA_REG_AEQ_BASE_HI, (uint32_t)(AEQ_ADDR >> 32));
    reg_write(h, VHCA_REG_AEQ_LOG_SIZE, AEQ_LOG);
    reg_write(h, VHCA_REG_CTRL, VHCA_CTRL_ENABLE);
    g_assert_cmphex(reg_read(h, VHCA_REG_STATUS) & VHCA_STATUS_READY, ==,
                    VHCA_STATUS_READY);
    h->admq_pi = 0;
    h->aeq_ci = 0;
}

void admin_post(Harness *h, uint32_t pi, uint16_t opcode, uint32_t token,
                const void *in, size_t in_len)
{
    struct vhca_admin_cmd cmd;
    uint32_t slot = pi & ((1u << ADMQ_LOG) - 1);

    g_assert_cmpuint(in_len, <=, sizeof(cmd.in));
    memset(&cmd, 0, sizeof(cmd));
    cmd.opcode = GUINT16_TO_LE(opcode);
    cmd.token = GUINT32_TO_LE(token);
    if (in_len) {
        memcpy(cmd.in, in, in_len);
    }
    /* Garbage in the output half: the device must overwrite all of it. */
    memset(&cmd.status, 0xa5, sizeof(cmd) - offsetof(struct vhca_admin_cmd,
                                                     status));
    cmd.done = 0;
    ram_write(h, ADMQ_ADDR + slot * sizeof(cmd), &cmd, sizeof(cmd));
}

struct vhca_admin_cmd admin_entry(Harness *h, uint32_t slot)
{
    struct vhca_admin_cmd cmd;

    ram_read(h, ADMQ_ADDR + (slot & ((1u << ADMQ_LOG) - 1)) * sizeof(cmd),
             &cmd, sizeof(cmd));
    return cmd;
}

uint8_t admin_cmd(Harness *h, uint16_t opcode, uint32_t token,
                  const void *in, size_t in_len, void *out)
{
    uint32_t pi = h->admq_pi;
    struct vhca_admin_cmd cmd;

    admin_post(h, pi, opcode, token, in, in_len);
    h->admq_pi++;
    reg_write(h, VHCA_REG_ADMQ_PI, h->admq_pi);
    g_assert_cmpuint(reg_read(h, VHCA_REG_ADMQ_CI), ==, h->admq_pi);

    cmd = admin_entry(h, pi);
    g_assert_cmpuint(cmd.done, ==, 1);
    g_assert_cmpuint(cmd.token, ==, GUINT32_TO_LE(token));
    g_assert_cmpuint(cmd.opcode, ==, GUINT16_TO_LE(opcode));
    if (out) {
        memcpy(out, cmd.out, sizeof(cmd.out));
    }
    return cmd.status;
}

struct vhca_eqe aeq_entry(Harness *h, uint32_t index)
{
    struct vhca_eqe eqe;

    ram_read(h, AEQ_ADDR + (index & ((1u << AEQ_LOG) - 1)) * sizeof(eqe),
             &eqe, sizeof(eqe));
    return eqe;
}

void gid_from_ipv4(uint8_t gid[16], uint8_t a, uint8_t b, uint8_t c,
                   uint8_t d)
{
    memset(gid, 0, 16);
    gid[10] = 0xff;
    gid[11] = 0xff;
    gid[12] = a;
    gid[13] = b;
    gid[14] = c;
    gid[15] = d;
}

uint8_t add_gid(Harness *h, uint16_t index, uint8_t type,
                const uint8_t gid[16])
{
    struct vhca_cmd_gid_in in = {
        .index = GUINT16_TO_LE(index),
        .port = 1,
        .type = type,
    };

    memcpy(in.gid, gid, 16);
    return admin_cmd(h, VHCA_CMD_ADD_GID, 0x6100 + index, &in, sizeof(in),
                     NULL);
}

void eth_setup(Harness *h, uint32_t eth_ctrl)
{
    reg_write(h, VHCA_REG_TX_BASE_LO, (uint32_t)TX_RING_ADDR);
    reg_write(h, VHCA_REG_TX_BASE_HI, (uint32_t)(TX_RING_ADDR >> 32));
    reg_write(h, VHCA_REG_TX_LOG_SIZE, ETH_LOG);
    reg_write(h, VHCA_REG_RX_BASE_LO, (uint32_t)RX_RING_ADDR);
    reg_write(h, VHCA_REG_RX_BASE_HI, (uint32_t)(RX_RING_ADDR >> 32));
    reg_write(h, VHCA_REG_RX_LOG_SIZE, ETH_LOG);
    reg_write(h, VHCA_REG_ETH_CTRL, eth_ctrl);
    g_assert_cmphex(reg_read(h, VHCA_REG_ETH_CTRL), ==, eth_ctrl);
}

static void desc_write(Harness *h, uint64_t ring, uint32_t index,
                       uint64_t addr, uint16_t len)
{
    struct vhca_eth_desc d = {
        .addr = GUINT64_TO_LE(addr),
        .len = GUINT16_TO_LE(len),
        .flags = 0,
    };

    ram_write(h, ring + (index & ((1u << ETH_LOG) - 1)) * sizeof(d), &d,
              sizeof(d));
}

static struct vhca_eth_desc desc_read(Harness *h, uint64_t ring,
                                      uint32_t index)
{
    struct vhca_eth_desc d;

    ram_read(h, ring + (index & ((1u << ETH_LOG) - 1)) * sizeof(d), &d,
             sizeof(d));
    d.addr = GUINT64_FROM_LE(d.addr);
    d.len = GUINT16_FROM_LE(d.len);
    d.flags = GUINT16_FROM_LE(d.flags);
    return d;
}

void tx_post(Harness *h, uint32_t index, uint64_t addr, uint16_t len)
{
    desc_write(h, TX_RING_ADDR, index, addr, len);
    reg_write(h, VHCA_REG_TX_PI, index + 1);
}

struct vhca_eth_desc tx_desc(Harness *h, uint32_t index)
{
    return desc_read(h, TX_RING_ADDR, index);
}

void rx_post(Harness *h, uint32_t index, uint16_t size)
{
    uint64_t buf = RX_BUF_ADDR +
                   (uint64_t)(index & ((1u << ETH_LOG) - 1)) * RX_BUF_SIZE;

    desc_write(h, RX_RING_ADDR, index, buf, size);
}

struct vhca_eth_desc rx_desc(Harness *h, uint32_t index)
{
    return desc_read(h, RX_RING_ADDR, index);
}

size_t build_eth(uint8_t *buf, const uint8_t dst[6], uint16_t ethertype,
                 size_t payload_len)
{
    static const uint8_t src[6] = { 0x52, 0x54, 0x00, 0xab, 0xcd, 0xef };
    size_t i;

    memcpy(buf, dst, 6);
    memcpy(buf + 6, src, 6);
    buf[12] = ethertype >> 8;
    buf[13] = ethertype & 0xff;
    for (i = 0; i < payload_len; i++) {
        buf[14 + i] = (uint8_t)(i * 7 + 3);
    }
    return 14 + payload_len;
}

static void put_be16(uint8_t *p, uint16_t v)
{
    p[0] = v >> 8;
    p[1] = v & 0xff;
}

size_t build_udp4(uint8_t *buf, const uint8_t daddr[4], uint16_t dport,
                  size_t payload_len)
{
    static const uint8_t saddr[4] = { 10, 0, 0, 99 };
    size_t len = build_eth(buf, harness_mac, 0x0800,
                           20 + 8 + payload_len);
    uint8_t *ip = buf + 14;
    uint8_t *udp = ip + 20;

    memset(ip, 0, 28);
    ip[0] = 0x45;
    put_be16(ip + 2, (uint16_t)(20 + 8 + payload_len));
    ip[6] = 0x40;                       /* DF */
    ip[8] = 64;
    ip[9] = 17;
    memcpy(ip + 12, saddr, 4);
    memcpy(ip + 16, daddr, 4);
    put_be16(udp, 0xc000);
    put_be16(udp + 2, dport);
    put_be16(udp + 4, (uint16_t)(8 + payload_len));
    return len;
}

size_t build_udp6(uint8_t *buf, const uint8_t daddr[16], uint16_t dport,
                  size_t payload_len)
{
    size_t len = build_eth(buf, harness_mac, 0x86dd,
                           40 + 8 + payload_len);
    uint8_t *ip = buf + 14;
    uint8_t *udp = ip + 40;

    memset(ip, 0, 48);
    ip[0] = 0x60;
    put_be16(ip + 4, (uint16_t)(8 + payload_len));
    ip[6] = 17;
    ip[7] = 64;
    ip[8] = 0xfe;
    ip[9] = 0x80;
    ip[23] = 1;
    memcpy(ip + 24, daddr, 16);
    put_be16(udp, 0xc000);
    put_be16(udp + 2, dport);
    put_be16(udp + 4, (uint16_t)(8 + payload_len));
    return len;
}
