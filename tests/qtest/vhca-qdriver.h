/*
 * vhca qtest driver: brings the device up the way a guest driver would
 * (PCI enable, BARs, MSI-X, admin queue, async EQ, Ethernet rings) so the
 * conformance tests can drive it through libqtest without a guest OS.
 *
 * Every wait is bounded (VHCA_TEST_TIMEOUT_S of wall time) and fails the
 * test with a message naming what it waited for; nothing sleeps.
 *
 * Helpers that wait or check the device are declared as foo_at(...,
 * where) with a macro foo(...) that passes G_STRLOC, so a failure names
 * the test line, not a line in this driver.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef VHCA_QDRIVER_H
#define VHCA_QDRIVER_H

#include "libqtest.h"
#include "libqos/pci.h"
#include "libqos/libqos-malloc.h"
#include "vhca_hw.h"
#include "vhca-dut.h"           /* VhcaBadDma */

/* Where the tests put the function: directly on q35's pcie.0. */
#define VHCA_TEST_SLOT          4
#define VHCA_TEST_DEVFN         QPCI_DEVFN(VHCA_TEST_SLOT, 0)
#define VHCA_TEST_NETDEV_ID     "hs0"
#define VHCA_TEST_TIMEOUT_S     5       /* one wait */
#define VHCA_TEST_CASE_TIMEOUT_S 60     /* one test case, all its waits */
/* TX buffers hold the largest frame plus room for oversize tests. */
#define VHCA_TEST_TX_BUF_LEN    (VHCA_ETH_MAX_FRAME + 256)
/* Outside guest RAM and every MMIO window of q35 (1 TiB). */
#define VHCA_TEST_BAD_DMA_ADDR  (1ull << 40)
/*
 * Another device's MMIO (q35's HPET): not guest RAM, so the device must
 * refuse it as a DMA address just like unmapped space.
 */
#define VHCA_TEST_HPET_ADDR     0xfed00000ull
/* Guest RAM the tests give QEMU, which ends at this address. */
#define VHCA_TEST_RAM_END       (128ull << 20)

/* The permanent MAC every test gives the device (mac= property). */
extern const uint8_t vhca_test_mac[6];

/* Data word each MSI-X vector writes, so a stray write is told apart. */
#define VHCA_TEST_MSI_DATA(v)   (0x5ca10000u | (v))

typedef struct VhcaTestDev VhcaTestDev;

typedef struct VhcaRing {
    uint64_t addr;              /* guest address of the ring */
    unsigned log_size;
    uint32_t pi;                /* next index the test produces */
    uint32_t ci;                /* next index the test consumes */
} VhcaRing;

struct VhcaTestDev {
    QTestState *qts;
    QGuestAllocator alloc;
    QPCIBus *bus;
    QPCIDevice *pdev;
    QPCIBar bar0;
    QPCIBar bar2;
    int sock;                   /* test end of the netdev socketpair or -1 */
    uint16_t vectors;           /* MSI-X table size */
    uint64_t msi_addr;          /* vector v writes msi_addr + 4 * v */

    VhcaRing admq;
    VhcaRing aeq;               /* ci = events the test consumed */
    uint32_t next_token;
    VhcaRing tx;
    VhcaRing rx;                /* pi = buffers posted, ci = filled seen */
    uint32_t last_syndrome;     /* syndrome of the last vhca_cmd_exec */
    /*
     * With stash_events, vhca_cmd_exec keeps events other than CMD_DONE
     * that arrive while it waits (an RDMA command may post a CQ_ERROR or
     * QP_EVENT before its own CMD_DONE) in @stashed_events instead of
     * failing; vhca_async_event_wait() hands them out in order.
     */
    bool stash_events;
    GArray *stashed_events;     /* of struct vhca_eqe */
    /*
     * Set on every function but the first of vhca_test_start_many(): it
     * shares qts and bus with the first and owns neither.
     */
    bool shares_qemu;
    uint64_t *tx_bufs;          /* one guest buffer per TX slot */
    uint64_t *rx_bufs;          /* one guest buffer per RX slot */
    uint16_t *rx_buf_len;
    /*
     * vhca_test_start_shared_ram() only: guest RAM mapped in this
     * process (guest address a is ram[a], a < VHCA_TEST_RAM_END), else
     * NULL.
     */
    uint8_t *ram;
};

/* ---- test registration ----------------------------------------------- */

/*
 * g_test_init() for the vhca tests.  Each test registered with
 * vhca_add_test() runs in a child process of its own (a GLib test trap),
 * so a failed assertion or a QEMU crash fails that test and the others
 * still run and report.
 */
void vhca_test_init(int *argc, char ***argv);
void vhca_add_test(const char *path, void (*fn)(void));
void vhca_add_data_test(const char *path, const void *data,
                        void (*fn)(const void *data));

/*
 * DMA addresses that are not guest RAM, which the device must refuse
 * (spec: "outside guest RAM"; the kinds are in tests/common/vhca-dut.h):
 * each test that takes a buffer address runs once per kind.
 */
uint64_t vhca_bad_dma_addr(VhcaTestDev *d, VhcaBadDma kind);
/* Register @fn once per kind as <prefix>/<kind name>, data = the kind. */
void vhca_add_bad_dma_tests(const char *prefix,
                            void (*fn)(const void *data));

/* ---- life cycle ------------------------------------------------------ */

/*
 * Start QEMU (q35, 128 MiB) with "-device vhca,<device_opts>" on pcie.0
 * (@device_opts may be NULL).
 * With @netdev, a -netdev socket over a socketpair backs the device and
 * d->sock is the test's end.  PCI is enabled, BAR0/BAR2 mapped, MSI-X
 * enabled with every vector unmasked and pointed at d->msi_addr.
 */
VhcaTestDev *vhca_test_start(bool netdev, const char *device_opts);
/*
 * vhca_test_start() with guest RAM in a memfd that QEMU maps shared
 * (memory-backend-file on /proc/self/fd/N, share=on) and this process
 * maps too, at d->ram: the test reads what the device writes (a CQE, a
 * doorbell record) in RAM, as a driver would, instead of asking QEMU
 * over the qtest socket each time.
 */
VhcaTestDev *vhca_test_start_shared_ram(bool netdev, const char *device_opts);
/* d->ram + @addr, failing the test unless [@addr, +@len) is guest RAM. */
void *vhca_test_ram(VhcaTestDev *d, uint64_t addr, size_t len);
void vhca_test_stop(VhcaTestDev *d);

/*
 * Several functions in one QEMU, for traffic between them: function i is
 * "-device vhca,addr=@slots[i].0,netdev=hs<i>,@device_opts[i]" (each
 * naming its own mac=), each on a -netdev socket over a socketpair whose
 * other end is devs[i]->sock, so the test carries (and can tamper with)
 * every frame between them.  Guest RAM (@ram_mib) is split evenly: each
 * function's allocator hands out memory of its own share only, as if
 * two drivers owned disjoint memory.  They share one libqos PCI bus, so
 * their BARs do not overlap.  Stop them with vhca_test_stop_many().
 */
void vhca_test_start_many(unsigned n, const unsigned *slots,
                          const char *const *device_opts, unsigned ram_mib,
                          VhcaTestDev **devs);
void vhca_test_stop_many(unsigned n, VhcaTestDev **devs);

/* (Re)do PCI set-up: memory + bus master, BAR0/BAR2, MSI-X vectors. */
void vhca_pci_setup(VhcaTestDev *d);

/* Forget every ring (after a reset); guest memory is not reused. */
void vhca_forget_rings(VhcaTestDev *d);

/* ---- registers ------------------------------------------------------- */

uint32_t vhca_rd(VhcaTestDev *d, uint32_t reg);
void vhca_wr(VhcaTestDev *d, uint32_t reg, uint32_t val);
/* 64-bit counter, LO then HI as the spec requires. */
uint64_t vhca_counter(VhcaTestDev *d, enum vhca_counter c);
void vhca_wr_base(VhcaTestDev *d, uint32_t reg_lo, uint64_t addr);

/* Fail unless register @reg reaches @expected within the timeout. */
void vhca_wait_reg_at(VhcaTestDev *d, uint32_t reg, uint32_t mask,
                      uint32_t expected, const char *what,
                      const char *where);
#define vhca_wait_reg(...) vhca_wait_reg_at(__VA_ARGS__, G_STRLOC)
void vhca_wait_counter_at(VhcaTestDev *d, enum vhca_counter c,
                          uint64_t expected, const char *what,
                          const char *where);
#define vhca_wait_counter(...) vhca_wait_counter_at(__VA_ARGS__, G_STRLOC)

/*
 * Bounded polling: VHCA_WAIT_UNTIL(d, cond, "what") re-evaluates cond
 * after each step of the virtual clock until it holds or the wall-clock
 * timeout expires, which fails the test naming @where.
 */
#define VHCA_WAIT_UNTIL_AT(d, cond, what, where)                            \
    do {                                                                    \
        gint64 vhca_deadline_ = g_get_monotonic_time() +                    \
            VHCA_TEST_TIMEOUT_S * G_TIME_SPAN_SECOND;                       \
        while (!(cond)) {                                                   \
            if (g_get_monotonic_time() > vhca_deadline_) {                  \
                g_error("%s: timed out waiting for %s", (where), (what));   \
            }                                                               \
            qtest_clock_step((d)->qts, 10000);                              \
        }                                                                   \
    } while (0)
#define VHCA_WAIT_UNTIL(d, cond, what) \
    VHCA_WAIT_UNTIL_AT(d, cond, what, G_STRLOC)

/* A check inside a helper, reported at the test line that called it. */
#define VHCA_CHECK_EQ(where, what, got, want)                               \
    do {                                                                    \
        uint64_t vhca_got_ = (got), vhca_want_ = (want);                    \
        if (vhca_got_ != vhca_want_) {                                      \
            g_error("%s: %s is 0x%" PRIx64 ", expected 0x%" PRIx64,         \
                    (where), (what), vhca_got_, vhca_want_);                \
        }                                                                   \
    } while (0)

/* ---- admin queue and async EQ ---------------------------------------- */

/*
 * Allocate and program an admin queue of 2^admq_log entries and an AEQ of
 * 2^aeq_log entries, set CTRL.ENABLE and check STATUS.READY.
 */
void vhca_admin_setup_at(VhcaTestDev *d, unsigned admq_log, unsigned aeq_log,
                         const char *where);
#define vhca_admin_setup(...) vhca_admin_setup_at(__VA_ARGS__, G_STRLOC)

/* Write the input half of the next entry (no doorbell); returns slot. */
uint32_t vhca_cmd_write(VhcaTestDev *d, uint16_t opcode, const void *in,
                        size_t in_len, uint32_t token);
/* Write the input half of the next entry and ring ADMQ_PI; returns slot. */
uint32_t vhca_cmd_post(VhcaTestDev *d, uint16_t opcode, const void *in,
                       size_t in_len, uint32_t token);
/* Ring ADMQ_PI with the driver's current producer index. */
void vhca_cmd_ring(VhcaTestDev *d);
/* Wait for done = 1 in @slot and return the whole entry. */
void vhca_cmd_wait_done_at(VhcaTestDev *d, uint32_t slot,
                           struct vhca_admin_cmd *entry,
                           const char *where);
#define vhca_cmd_wait_done(...) vhca_cmd_wait_done_at(__VA_ARGS__, G_STRLOC)

/*
 * Execute one command as a driver does: post, wait for done, check
 * ADMQ_CI, the token echo and the CMD_DONE event (slot, token, status),
 * acknowledge the event with ARM.  Returns the status; @out (16 bytes,
 * may be NULL) receives the entry's output.
 */
uint8_t vhca_cmd_exec_at(VhcaTestDev *d, uint16_t opcode, const void *in,
                         size_t in_len, void *out,
                         const char *where);
#define vhca_cmd_exec(...) vhca_cmd_exec_at(__VA_ARGS__, G_STRLOC)

/* Convenience wrappers around vhca_cmd_exec. */
uint8_t vhca_cmd_add_gid_at(VhcaTestDev *d, uint16_t index, uint8_t port,
                            uint8_t type, const uint8_t gid[16],
                            const char *where);
#define vhca_cmd_add_gid(...) vhca_cmd_add_gid_at(__VA_ARGS__, G_STRLOC)
uint8_t vhca_cmd_del_gid_at(VhcaTestDev *d, uint16_t index,
                            const char *where);
#define vhca_cmd_del_gid(...) vhca_cmd_del_gid_at(__VA_ARGS__, G_STRLOC)
uint8_t vhca_cmd_set_mtu_at(VhcaTestDev *d, uint32_t mtu, const char *where);
#define vhca_cmd_set_mtu(...) vhca_cmd_set_mtu_at(__VA_ARGS__, G_STRLOC)
uint8_t vhca_cmd_set_mac_at(VhcaTestDev *d, const uint8_t mac[6],
                            const char *where);
#define vhca_cmd_set_mac(...) vhca_cmd_set_mac_at(__VA_ARGS__, G_STRLOC)
uint8_t vhca_cmd_query_port_at(VhcaTestDev *d, uint8_t port,
                               struct vhca_port_attr *attr,
                               const char *where);
#define vhca_cmd_query_port(...) vhca_cmd_query_port_at(__VA_ARGS__, G_STRLOC)
/* QUERY_DEVICE into a fresh guest buffer; attr in host byte order. */
uint8_t vhca_cmd_query_device_at(VhcaTestDev *d,
                                 struct vhca_device_attr *attr,
                                 const char *where);
#define vhca_cmd_query_device(...) \
    vhca_cmd_query_device_at(__VA_ARGS__, G_STRLOC)
uint8_t vhca_cmd_alloc_uctx_at(VhcaTestDev *d, uint32_t *db_page,
                               const char *where);
#define vhca_cmd_alloc_uctx(...) vhca_cmd_alloc_uctx_at(__VA_ARGS__, G_STRLOC)
uint8_t vhca_cmd_dealloc_uctx_at(VhcaTestDev *d, uint32_t db_page,
                                 const char *where);
#define vhca_cmd_dealloc_uctx(...) \
    vhca_cmd_dealloc_uctx_at(__VA_ARGS__, G_STRLOC)

/*
 * The next async event that is not CMD_DONE: a stashed one first (see
 * stash_events), else wait for it on the AEQ, consume it and re-arm.
 */
void vhca_async_event_wait_at(VhcaTestDev *d, struct vhca_eqe *eqe,
                              const char *where);
#define vhca_async_event_wait(...) \
    vhca_async_event_wait_at(__VA_ARGS__, G_STRLOC)

/* Is the next event (at aeq.ci) written?  Reads it into @eqe if so. */
bool vhca_eq_peek(VhcaTestDev *d, struct vhca_eqe *eqe);
/* Wait for the next event, consume it (ci++), no doorbell. */
void vhca_eq_next_at(VhcaTestDev *d, struct vhca_eqe *eqe,
                     const char *where);
#define vhca_eq_next(...) vhca_eq_next_at(__VA_ARGS__, G_STRLOC)
/* Write AEQ_DB with the consumer index, optionally ARM. */
void vhca_eq_ack(VhcaTestDev *d, bool arm);
/* Owner value the device writes for event index @idx of the AEQ. */
uint8_t vhca_eq_owner(VhcaTestDev *d, uint32_t idx);

/* ---- host introspection ---------------------------------------------- */

/*
 * The text x-query-vhca returns for @id (all devices if NULL), also
 * logged with g_test_message(); g_free it.  _quiet: not logged.
 */
char *vhca_query_text(VhcaTestDev *d, const char *id);
char *vhca_query_text_quiet(VhcaTestDev *d, const char *id);

/* ---- MSI-X ----------------------------------------------------------- */

/*
 * Point vector @v's table entry at @addr with @data: wherever that is
 * (vhca-reentry-test.c aims vectors at the device itself).
 */
void vhca_msix_aim(VhcaTestDev *d, uint16_t v, uint64_t addr, uint32_t data);
/* Has vector @v fired since the last call?  Clears the record. */
bool vhca_msix_fired_at(VhcaTestDev *d, uint16_t v, const char *where);
#define vhca_msix_fired(...) vhca_msix_fired_at(__VA_ARGS__, G_STRLOC)
void vhca_msix_wait_at(VhcaTestDev *d, uint16_t v, const char *where);
#define vhca_msix_wait(...) vhca_msix_wait_at(__VA_ARGS__, G_STRLOC)

/* ---- Ethernet rings --------------------------------------------------- */

/*
 * Allocate TX and RX rings of 2^log entries with one buffer per slot
 * (RX buffers of @rx_buf_len bytes, not yet posted), program them and
 * write ETH_CTRL = @eth_ctrl; check the enable bits stuck.
 */
void vhca_eth_setup_at(VhcaTestDev *d, unsigned tx_log, unsigned rx_log,
                       uint16_t rx_buf_len, uint32_t eth_ctrl,
                       const char *where);
#define vhca_eth_setup(...) vhca_eth_setup_at(__VA_ARGS__, G_STRLOC)

/* Write the next TX descriptor as given and ring TX_PI. */
void vhca_tx_post_desc(VhcaTestDev *d, uint64_t addr, uint16_t len);
/* Copy @frame into the next TX slot's buffer and ring TX_PI. */
void vhca_tx_post(VhcaTestDev *d, const void *frame, size_t len);
/* Wait until TX_CI covers the oldest posted frame; returns its flags. */
uint16_t vhca_tx_complete_at(VhcaTestDev *d, const char *where);
#define vhca_tx_complete(...) vhca_tx_complete_at(__VA_ARGS__, G_STRLOC)
/* Both, for one frame. */
uint16_t vhca_tx_frame_at(VhcaTestDev *d, const void *frame, size_t len,
                          const char *where);
#define vhca_tx_frame(...) vhca_tx_frame_at(__VA_ARGS__, G_STRLOC)

/* Write the next RX descriptor as given and ring RX_PI. */
void vhca_rx_post_desc(VhcaTestDev *d, uint64_t addr, uint16_t len);
/* Post @n RX buffers (ring RX_PI once). */
void vhca_rx_post(VhcaTestDev *d, unsigned n);
/*
 * Wait until RX_CI covers the next filled descriptor, check DONE, copy
 * the frame into @buf (up to @cap bytes); returns the descriptor len.
 */
size_t vhca_rx_receive_at(VhcaTestDev *d, void *buf, size_t cap,
                          const char *where);
#define vhca_rx_receive(...) vhca_rx_receive_at(__VA_ARGS__, G_STRLOC)

/* ---- the wire (netdev socket) ----------------------------------------- */

/* Inject one frame (4-byte big-endian length prefix, as -netdev socket). */
void vhca_wire_send(VhcaTestDev *d, const void *frame, size_t len);
/* Read the next frame the device sent; waits at most the timeout. */
size_t vhca_wire_recv_at(VhcaTestDev *d, void *buf, size_t cap,
                         const char *where);
#define vhca_wire_recv(...) vhca_wire_recv_at(__VA_ARGS__, G_STRLOC)
/* True if no frame bytes are waiting on the socket right now. */
bool vhca_wire_idle(VhcaTestDev *d);

/* QMP set_link on the netdev. */
void vhca_set_link(VhcaTestDev *d, bool up);

#endif /* VHCA_QDRIVER_H */
