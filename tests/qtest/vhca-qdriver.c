/*
 * vhca qtest driver: the device bring-up and ring handling shared by the
 * conformance tests.  It follows docs/specs/vhca.rst the way a guest
 * driver would, and checks on the way what every command must satisfy
 * (done byte, ADMQ_CI, token echo, CMD_DONE event contents).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include "qemu/bswap.h"
#include "hw/pci/pci_regs.h"
#include "libqos/pci-pc.h"
#include "libqos/malloc-pc.h"
#include "qobject/qdict.h"
#include "vhca-qdriver.h"

const uint8_t vhca_test_mac[6] = { 0x52, 0x54, 0x00, 0x12, 0x34, 0x56 };

/* ---- test registration ----------------------------------------------- */

void vhca_test_init(int *argc, char ***argv)
{
    g_test_init(argc, argv, NULL);
    /* The parent only collects results: a failed child must not stop it. */
    if (!g_test_subprocess()) {
        g_test_set_nonfatal_assertions();
    }
}

static void vhca_run_isolated(const void *data)
{
    void (*fn)(void) = data;

    if (g_test_subprocess()) {
        fn();
        return;
    }
    /* The child's TAP output is the parent's business; keep its stderr. */
    g_test_trap_subprocess(NULL, VHCA_TEST_CASE_TIMEOUT_S * G_USEC_PER_SEC,
                           G_TEST_SUBPROCESS_INHERIT_STDERR);
    g_test_trap_assert_passed();
}

void vhca_add_test(const char *path, void (*fn)(void))
{
    qtest_add_data_func(path, fn, vhca_run_isolated);
}

typedef struct VhcaDataTest {
    void (*fn)(const void *data);
    const void *data;
} VhcaDataTest;

static void vhca_run_isolated_data(const void *opaque)
{
    const VhcaDataTest *t = opaque;

    if (g_test_subprocess()) {
        t->fn(t->data);
        return;
    }
    g_test_trap_subprocess(NULL, VHCA_TEST_CASE_TIMEOUT_S * G_USEC_PER_SEC,
                           G_TEST_SUBPROCESS_INHERIT_STDERR);
    g_test_trap_assert_passed();
}

void vhca_add_data_test(const char *path, const void *data,
                        void (*fn)(const void *data))
{
    VhcaDataTest *t = g_new(VhcaDataTest, 1);

    t->fn = fn;
    t->data = data;
    /* Registered tests live as long as the program: t is never freed. */
    qtest_add_data_func(path, t, vhca_run_isolated_data);
}

uint64_t vhca_bad_dma_addr(VhcaTestDev *d, VhcaBadDma kind)
{
    switch (kind) {
    case VHCA_BAD_DMA_UNMAPPED:
        return VHCA_TEST_BAD_DMA_ADDR;
    case VHCA_BAD_DMA_OWN_BAR0:
        return d->bar0.addr;
    case VHCA_BAD_DMA_OTHER_MMIO:
        /* Make sure something answers there: HPET capabilities. */
        g_assert_cmphex(qtest_readl(d->qts, VHCA_TEST_HPET_ADDR), !=, 0);
        return VHCA_TEST_HPET_ADDR;
    case VHCA_BAD_DMA_ACROSS_RAM_END:
        return VHCA_TEST_RAM_END - 32;
    case VHCA_BAD_DMA_WRAPS:
        return UINT64_MAX - 31;
    default:
        g_assert_not_reached();
    }
}

void vhca_add_bad_dma_tests(const char *prefix, void (*fn)(const void *data))
{
    for (int kind = 0; kind < VHCA_BAD_DMA_MAX; kind++) {
        g_autofree char *path = g_strdup_printf("%s/%s", prefix,
                                                vhca_bad_dma_kind_name(kind));

        vhca_add_data_test(path, GINT_TO_POINTER(kind), fn);
    }
}

/* ---- life cycle ------------------------------------------------------ */

/* @memory_opts: the -machine memory options (with their -object), or "" */
static VhcaTestDev *vhca_test_start_with(bool netdev, const char *device_opts,
                                         const char *memory_opts)
{
    VhcaTestDev *d = g_new0(VhcaTestDev, 1);
    const char *opts = device_opts ? device_opts : "";
    g_autofree char *netdev_arg = NULL;
    g_autofree char *cmdline = NULL;
    int sv[2] = { -1, -1 };

    d->sock = -1;
    if (netdev) {
        g_assert_cmpint(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), ==, 0);
        /* QEMU inherits sv[1] only; our end must not leak into it. */
        g_assert_cmpint(fcntl(sv[0], F_SETFD, FD_CLOEXEC), ==, 0);
        d->sock = sv[0];
        netdev_arg = g_strdup_printf("-netdev socket,id=%s,fd=%d",
                                     VHCA_TEST_NETDEV_ID, sv[1]);
    }

    cmdline = g_strdup_printf("-machine q35%s -m %lluM -nodefaults %s "
                              "-device vhca,id=vhca0,addr=0x%x.0,"
                              "mac=52:54:00:12:34:56%s%s%s",
                              memory_opts, VHCA_TEST_RAM_END >> 20,
                              netdev_arg ? netdev_arg : "",
                              VHCA_TEST_SLOT,
                              netdev ? ",netdev=" VHCA_TEST_NETDEV_ID : "",
                              opts[0] ? "," : "", opts);

    d->qts = qtest_init(cmdline);
    if (netdev) {
        close(sv[1]);           /* QEMU holds its own copy */
    }

    pc_alloc_init(&d->alloc, d->qts, ALLOC_NO_FLAGS);
    d->bus = qpci_new_pc(d->qts, NULL);
    d->pdev = qpci_device_find(d->bus, VHCA_TEST_DEVFN);
    g_assert_nonnull(d->pdev);
    d->next_token = 0x7e570000;
    d->stashed_events = g_array_new(false, false, sizeof(struct vhca_eqe));
    vhca_pci_setup(d);
    return d;
}

VhcaTestDev *vhca_test_start(bool netdev, const char *device_opts)
{
    return vhca_test_start_with(netdev, device_opts, "");
}

VhcaTestDev *vhca_test_start_shared_ram(bool netdev, const char *device_opts)
{
    g_autofree char *memory_opts = NULL;
    VhcaTestDev *d;
    void *ram;
    int fd;

    /* Not CLOEXEC: QEMU inherits it and opens it by its /proc name. */
    fd = memfd_create("vhca-test-ram", 0);
    g_assert_cmpint(fd, >=, 0);
    g_assert_cmpint(ftruncate(fd, VHCA_TEST_RAM_END), ==, 0);
    ram = mmap(NULL, VHCA_TEST_RAM_END, PROT_READ | PROT_WRITE, MAP_SHARED,
               fd, 0);
    g_assert(ram != MAP_FAILED);
    /*
     * On q35 all of 128 MiB is below the PCI hole, at guest address 0,
     * so guest address a is byte a of the backend.
     */
    memory_opts = g_strdup_printf(",memory-backend=ram0 -object "
                                  "memory-backend-file,id=ram0,size=%llu,"
                                  "mem-path=/proc/self/fd/%d,share=on",
                                  VHCA_TEST_RAM_END, fd);
    d = vhca_test_start_with(netdev, device_opts, memory_opts);
    close(fd);                  /* QEMU and the mapping hold it */
    d->ram = ram;
    return d;
}

void *vhca_test_ram(VhcaTestDev *d, uint64_t addr, size_t len)
{
    g_assert_nonnull(d->ram);
    g_assert_cmpuint(addr, <=, VHCA_TEST_RAM_END);
    g_assert_cmpuint(len, <=, VHCA_TEST_RAM_END - addr);
    return d->ram + addr;
}

void vhca_test_stop(VhcaTestDev *d)
{
    if (d->sock >= 0) {
        close(d->sock);
    }
    g_free(d->tx_bufs);
    g_free(d->rx_bufs);
    g_free(d->rx_buf_len);
    g_array_free(d->stashed_events, true);
    g_free(d->pdev);
    alloc_destroy(&d->alloc);
    if (!d->shares_qemu) {
        qpci_free_pc(d->bus);
        qtest_quit(d->qts);
    }
    if (d->ram) {
        munmap(d->ram, VHCA_TEST_RAM_END);
    }
    g_free(d);
}

void vhca_test_start_many(unsigned n, const unsigned *slots,
                          const char *const *device_opts, unsigned ram_mib,
                          VhcaTestDev **devs)
{
    g_autoptr(GString) cmdline = g_string_new(NULL);
    g_autofree int *qemu_ends = g_new(int, n);
    /* Below 1 MiB lives firmware; pc_alloc_init starts there too. */
    uint64_t ram_start = 1 << 20;
    uint64_t share = (((uint64_t)ram_mib << 20) - ram_start) / n;
    QTestState *qts;
    QPCIBus *bus;

    g_assert_cmpuint(n, >, 0);
    g_string_printf(cmdline, "-machine q35 -m %uM -nodefaults", ram_mib);
    for (unsigned i = 0; i < n; i++) {
        int sv[2];

        devs[i] = g_new0(VhcaTestDev, 1);
        g_assert_cmpint(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), ==, 0);
        g_assert_cmpint(fcntl(sv[0], F_SETFD, FD_CLOEXEC), ==, 0);
        devs[i]->sock = sv[0];
        qemu_ends[i] = sv[1];
        g_string_append_printf(cmdline,
                               " -netdev socket,id=hs%u,fd=%d"
                               " -device vhca,id=vhca%u,addr=0x%x.0,"
                               "netdev=hs%u%s%s",
                               i, sv[1], i, slots[i], i,
                               device_opts[i] ? "," : "",
                               device_opts[i] ? device_opts[i] : "");
    }

    qts = qtest_init(cmdline->str);
    bus = qpci_new_pc(qts, NULL);
    for (unsigned i = 0; i < n; i++) {
        VhcaTestDev *d = devs[i];
        uint64_t start = ram_start + i * share;

        close(qemu_ends[i]);    /* QEMU holds its own copy */
        d->qts = qts;
        d->bus = bus;
        d->shares_qemu = i > 0;
        alloc_init(&d->alloc, ALLOC_NO_FLAGS, start,
                   QEMU_ALIGN_DOWN(start + share, 4096), 4096);
        d->pdev = qpci_device_find(bus, QPCI_DEVFN(slots[i], 0));
        g_assert_nonnull(d->pdev);
        d->next_token = 0x7e570000 + (i << 12);
        d->stashed_events = g_array_new(false, false,
                                        sizeof(struct vhca_eqe));
        vhca_pci_setup(d);
    }
}

void vhca_test_stop_many(unsigned n, VhcaTestDev **devs)
{
    /* The first owns QEMU and the bus: it goes last. */
    for (unsigned i = n; i-- > 0;) {
        vhca_test_stop(devs[i]);
        devs[i] = NULL;
    }
}

void vhca_pci_setup(VhcaTestDev *d)
{
    uint16_t v;

    qpci_device_enable(d->pdev);
    d->bar0 = qpci_iomap(d->pdev, VHCA_BAR_CTRL, NULL);
    d->bar2 = qpci_iomap(d->pdev, VHCA_BAR_DOORBELL, NULL);

    /*
     * Point every vector at its own word of guest memory: a write there
     * with the vector's data is the interrupt (as libqos/virtio-pci.c
     * checks MSI-X), so a test sees delivery, not only the PBA.
     */
    qpci_msix_enable(d->pdev);
    d->vectors = qpci_msix_table_size(d->pdev);
    if (!d->msi_addr) {
        d->msi_addr = guest_alloc(&d->alloc, 4 * 64);
    }
    qtest_memset(d->qts, d->msi_addr, 0, 4 * d->vectors);
    for (v = 0; v < d->vectors; v++) {
        vhca_msix_aim(d, v, d->msi_addr + 4 * v, VHCA_TEST_MSI_DATA(v));
        qpci_io_writel(d->pdev, d->pdev->msix_table_bar,
                       d->pdev->msix_table_off + v * PCI_MSIX_ENTRY_SIZE +
                       PCI_MSIX_ENTRY_VECTOR_CTRL, 0);
    }
}

void vhca_msix_aim(VhcaTestDev *d, uint16_t v, uint64_t addr, uint32_t data)
{
    uint64_t entry = d->pdev->msix_table_off + v * PCI_MSIX_ENTRY_SIZE;

    qpci_io_writel(d->pdev, d->pdev->msix_table_bar,
                   entry + PCI_MSIX_ENTRY_LOWER_ADDR, addr & 0xffffffff);
    qpci_io_writel(d->pdev, d->pdev->msix_table_bar,
                   entry + PCI_MSIX_ENTRY_UPPER_ADDR, addr >> 32);
    qpci_io_writel(d->pdev, d->pdev->msix_table_bar,
                   entry + PCI_MSIX_ENTRY_DATA, data);
}

void vhca_forget_rings(VhcaTestDev *d)
{
    memset(&d->admq, 0, sizeof(d->admq));
    memset(&d->aeq, 0, sizeof(d->aeq));
    memset(&d->tx, 0, sizeof(d->tx));
    memset(&d->rx, 0, sizeof(d->rx));
    g_array_set_size(d->stashed_events, 0);
    g_clear_pointer(&d->tx_bufs, g_free);
    g_clear_pointer(&d->rx_bufs, g_free);
    g_clear_pointer(&d->rx_buf_len, g_free);
}

/* ---- registers ------------------------------------------------------- */

uint32_t vhca_rd(VhcaTestDev *d, uint32_t reg)
{
    return qpci_io_readl(d->pdev, d->bar0, reg);
}

void vhca_wr(VhcaTestDev *d, uint32_t reg, uint32_t val)
{
    qpci_io_writel(d->pdev, d->bar0, reg, val);
}

uint64_t vhca_counter(VhcaTestDev *d, enum vhca_counter c)
{
    uint32_t reg = VHCA_REG_COUNTERS + 8 * c;
    uint64_t lo = vhca_rd(d, reg);      /* latches HI */

    return lo | (uint64_t)vhca_rd(d, reg + 4) << 32;
}

void vhca_wr_base(VhcaTestDev *d, uint32_t reg_lo, uint64_t addr)
{
    vhca_wr(d, reg_lo, addr & 0xffffffff);
    vhca_wr(d, reg_lo + 4, addr >> 32);
}

void vhca_wait_reg_at(VhcaTestDev *d, uint32_t reg, uint32_t mask,
                      uint32_t expected, const char *what,
                      const char *where)
{
    VHCA_WAIT_UNTIL_AT(d, (vhca_rd(d, reg) & mask) == expected, what, where);
}

void vhca_wait_counter_at(VhcaTestDev *d, enum vhca_counter c,
                          uint64_t expected, const char *what,
                          const char *where)
{
    VHCA_WAIT_UNTIL_AT(d, vhca_counter(d, c) >= expected, what, where);
    VHCA_CHECK_EQ(where, what, vhca_counter(d, c), expected);
}

/* ---- admin queue and async EQ ---------------------------------------- */

void vhca_admin_setup_at(VhcaTestDev *d, unsigned admq_log, unsigned aeq_log,
                         const char *where)
{
    size_t admq_bytes = sizeof(struct vhca_admin_cmd) << admq_log;
    size_t aeq_bytes = sizeof(struct vhca_eqe) << aeq_log;

    memset(&d->admq, 0, sizeof(d->admq));
    memset(&d->aeq, 0, sizeof(d->aeq));
    d->admq.log_size = admq_log;
    d->admq.addr = guest_alloc(&d->alloc, admq_bytes);
    qtest_memset(d->qts, d->admq.addr, 0, admq_bytes);
    d->aeq.log_size = aeq_log;
    d->aeq.addr = guest_alloc(&d->alloc, aeq_bytes);
    qtest_memset(d->qts, d->aeq.addr, 0, aeq_bytes);

    vhca_wr_base(d, VHCA_REG_ADMQ_BASE_LO, d->admq.addr);
    vhca_wr(d, VHCA_REG_ADMQ_LOG_SIZE, admq_log);
    vhca_wr_base(d, VHCA_REG_AEQ_BASE_LO, d->aeq.addr);
    vhca_wr(d, VHCA_REG_AEQ_LOG_SIZE, aeq_log);
    vhca_wr(d, VHCA_REG_CTRL, VHCA_CTRL_ENABLE);

    VHCA_CHECK_EQ(where, "CTRL after ENABLE", vhca_rd(d, VHCA_REG_CTRL),
                  VHCA_CTRL_ENABLE);
    VHCA_CHECK_EQ(where, "STATUS.READY after ENABLE",
                  vhca_rd(d, VHCA_REG_STATUS) & VHCA_STATUS_READY,
                  VHCA_STATUS_READY);
    VHCA_CHECK_EQ(where, "ADMQ_CI after ENABLE",
                  vhca_rd(d, VHCA_REG_ADMQ_CI), 0);
    VHCA_CHECK_EQ(where, "AEQ_PI after ENABLE", vhca_rd(d, VHCA_REG_AEQ_PI), 0);
}

static uint64_t vhca_cmd_addr(VhcaTestDev *d, uint32_t slot)
{
    return d->admq.addr + slot * sizeof(struct vhca_admin_cmd);
}

uint32_t vhca_cmd_write(VhcaTestDev *d, uint16_t opcode, const void *in,
                        size_t in_len, uint32_t token)
{
    uint32_t slot = d->admq.pi & ((1u << d->admq.log_size) - 1);
    struct vhca_admin_cmd cmd;

    g_assert_cmpuint(in_len, <=, sizeof(cmd.in));
    memset(&cmd, 0, sizeof(cmd));
    cmd.opcode = cpu_to_le16(opcode);
    cmd.token = cpu_to_le32(token);
    if (in_len) {
        memcpy(cmd.in, in, in_len);
    }
    /* Output half zeroed: done = 0 is what tells us the device wrote. */
    qtest_memwrite(d->qts, vhca_cmd_addr(d, slot), &cmd, sizeof(cmd));
    d->admq.pi++;
    return slot;
}

void vhca_cmd_ring(VhcaTestDev *d)
{
    vhca_wr(d, VHCA_REG_ADMQ_PI, d->admq.pi);
}

uint32_t vhca_cmd_post(VhcaTestDev *d, uint16_t opcode, const void *in,
                       size_t in_len, uint32_t token)
{
    uint32_t slot = vhca_cmd_write(d, opcode, in, in_len, token);

    vhca_cmd_ring(d);
    return slot;
}

void vhca_cmd_wait_done_at(VhcaTestDev *d, uint32_t slot,
                           struct vhca_admin_cmd *entry,
                           const char *where)
{
    uint64_t addr = vhca_cmd_addr(d, slot);

    VHCA_WAIT_UNTIL_AT(d, qtest_readb(d->qts, addr +
                                      offsetof(struct vhca_admin_cmd,
                                               done)) != 0,
                       "admin command done byte", where);
    qtest_memread(d->qts, addr, entry, sizeof(*entry));
    VHCA_CHECK_EQ(where, "admin command done byte", entry->done, 1);
}

uint8_t vhca_cmd_exec_at(VhcaTestDev *d, uint16_t opcode, const void *in,
                         size_t in_len, void *out, const char *where)
{
    uint32_t token = d->next_token++;
    struct vhca_admin_cmd entry;
    struct vhca_eqe eqe;
    uint32_t slot;

    slot = vhca_cmd_post(d, opcode, in, in_len, token);
    vhca_cmd_wait_done_at(d, slot, &entry, where);
    d->admq.ci++;

    /* The input half is the driver's: the device leaves it alone. */
    VHCA_CHECK_EQ(where, "entry opcode", le16_to_cpu(entry.opcode), opcode);
    VHCA_CHECK_EQ(where, "entry token", le32_to_cpu(entry.token), token);
    if (entry.status == VHCA_ST_OK) {
        VHCA_CHECK_EQ(where, "syndrome of a successful command",
                      le32_to_cpu(entry.syndrome), 0);
    }

    /* done is written before ADMQ_CI advances and the event is posted. */
    vhca_wait_reg_at(d, VHCA_REG_ADMQ_CI, ~0u, d->admq.ci, "ADMQ_CI", where);

    d->last_syndrome = le32_to_cpu(entry.syndrome);
    vhca_eq_next_at(d, &eqe, where);
    while (d->stash_events && eqe.type != VHCA_EQE_CMD_DONE) {
        g_array_append_val(d->stashed_events, eqe);
        vhca_eq_next_at(d, &eqe, where);
    }
    VHCA_CHECK_EQ(where, "event type (CMD_DONE)", eqe.type,
                  VHCA_EQE_CMD_DONE);
    VHCA_CHECK_EQ(where, "CMD_DONE subtype (status)", eqe.subtype,
                  entry.status);
    VHCA_CHECK_EQ(where, "CMD_DONE data[0] (slot)",
                  le32_to_cpu(eqe.data[0]), slot);
    VHCA_CHECK_EQ(where, "CMD_DONE data[1] (token)",
                  le32_to_cpu(eqe.data[1]), token);
    vhca_eq_ack(d, true);

    if (out) {
        memcpy(out, entry.out, sizeof(entry.out));
    }
    return entry.status;
}

uint8_t vhca_cmd_add_gid_at(VhcaTestDev *d, uint16_t index, uint8_t port,
                            uint8_t type, const uint8_t gid[16],
                            const char *where)
{
    struct vhca_cmd_gid_in in = {
        .index = cpu_to_le16(index),
        .port = port,
        .type = type,
    };

    memcpy(in.gid, gid, sizeof(in.gid));
    return vhca_cmd_exec_at(d, VHCA_CMD_ADD_GID, &in, sizeof(in), NULL,
                            where);
}

uint8_t vhca_cmd_del_gid_at(VhcaTestDev *d, uint16_t index,
                            const char *where)
{
    struct vhca_cmd_gid_in in = {
        .index = cpu_to_le16(index),
        .port = 1,
    };

    return vhca_cmd_exec_at(d, VHCA_CMD_DEL_GID, &in, sizeof(in), NULL,
                            where);
}

uint8_t vhca_cmd_set_mtu_at(VhcaTestDev *d, uint32_t mtu, const char *where)
{
    struct vhca_cmd_mtu_in in = { .mtu = cpu_to_le32(mtu) };

    return vhca_cmd_exec_at(d, VHCA_CMD_SET_MTU, &in, sizeof(in), NULL,
                            where);
}

uint8_t vhca_cmd_set_mac_at(VhcaTestDev *d, const uint8_t mac[6],
                            const char *where)
{
    struct vhca_cmd_mac_in in = { 0 };

    memcpy(in.mac, mac, sizeof(in.mac));
    return vhca_cmd_exec_at(d, VHCA_CMD_SET_MAC, &in, sizeof(in), NULL,
                            where);
}

uint8_t vhca_cmd_query_port_at(VhcaTestDev *d, uint8_t port,
                               struct vhca_port_attr *attr,
                               const char *where)
{
    struct vhca_cmd_port_in in = { .port = port };
    struct vhca_port_attr out;
    uint8_t status;

    status = vhca_cmd_exec_at(d, VHCA_CMD_QUERY_PORT, &in, sizeof(in), &out,
                              where);
    if (attr) {
        *attr = out;
        attr->gid_tbl_len = le16_to_cpu(out.gid_tbl_len);
        attr->eth_mtu = le32_to_cpu(out.eth_mtu);
    }
    return status;
}

uint8_t vhca_cmd_query_device_at(VhcaTestDev *d,
                                 struct vhca_device_attr *attr,
                                 const char *where)
{
    uint64_t buf = guest_alloc(&d->alloc, sizeof(*attr));
    struct vhca_cmd_dma_in in = {
        .addr = cpu_to_le64(buf),
        .len = cpu_to_le32(sizeof(*attr)),
    };
    uint8_t status;

    qtest_memset(d->qts, buf, 0, sizeof(*attr));
    status = vhca_cmd_exec_at(d, VHCA_CMD_QUERY_DEVICE, &in, sizeof(in),
                              NULL, where);
    qtest_memread(d->qts, buf, attr, sizeof(*attr));
    guest_free(&d->alloc, buf);

    attr->fw_version = le64_to_cpu(attr->fw_version);
    attr->sys_image_guid = le64_to_cpu(attr->sys_image_guid);
    attr->node_guid = le64_to_cpu(attr->node_guid);
    attr->max_mr_size = le64_to_cpu(attr->max_mr_size);
    attr->page_size_cap = le64_to_cpu(attr->page_size_cap);
    /* vendor_id .. cap_flags: a run of 32-bit fields. */
    for (uint32_t *p = &attr->vendor_id; p <= &attr->cap_flags; p++) {
        *p = le32_to_cpu(*p);
    }
    return status;
}

uint8_t vhca_cmd_alloc_uctx_at(VhcaTestDev *d, uint32_t *db_page,
                               const char *where)
{
    struct vhca_cmd_uctx_out out;
    uint8_t status;

    status = vhca_cmd_exec_at(d, VHCA_CMD_ALLOC_UCTX, NULL, 0, &out, where);
    if (db_page) {
        *db_page = le32_to_cpu(out.db_page);
    }
    return status;
}

uint8_t vhca_cmd_dealloc_uctx_at(VhcaTestDev *d, uint32_t db_page,
                                 const char *where)
{
    struct vhca_cmd_uctx_in in = { .db_page = cpu_to_le32(db_page) };

    return vhca_cmd_exec_at(d, VHCA_CMD_DEALLOC_UCTX, &in, sizeof(in), NULL,
                            where);
}

uint8_t vhca_eq_owner(VhcaTestDev *d, uint32_t idx)
{
    return ((idx >> d->aeq.log_size) & 1) ^ 1;
}

bool vhca_eq_peek(VhcaTestDev *d, struct vhca_eqe *eqe)
{
    uint32_t slot = d->aeq.ci & ((1u << d->aeq.log_size) - 1);
    struct vhca_eqe e;

    qtest_memread(d->qts, d->aeq.addr + slot * sizeof(e), &e, sizeof(e));
    if ((e.owner & 1) != vhca_eq_owner(d, d->aeq.ci)) {
        return false;
    }
    if (eqe) {
        *eqe = e;
    }
    return true;
}

void vhca_eq_next_at(VhcaTestDev *d, struct vhca_eqe *eqe, const char *where)
{
    VHCA_WAIT_UNTIL_AT(d, vhca_eq_peek(d, eqe), "async event queue entry",
                       where);
    d->aeq.ci++;
}

void vhca_async_event_wait_at(VhcaTestDev *d, struct vhca_eqe *eqe,
                              const char *where)
{
    if (d->stashed_events && d->stashed_events->len) {
        *eqe = g_array_index(d->stashed_events, struct vhca_eqe, 0);
        g_array_remove_index(d->stashed_events, 0);
        return;
    }
    vhca_eq_next_at(d, eqe, where);
    vhca_eq_ack(d, true);
}

void vhca_eq_ack(VhcaTestDev *d, bool arm)
{
    vhca_wr(d, VHCA_REG_AEQ_DB,
            (d->aeq.ci & VHCA_EQ_DB_CI_MASK) | (arm ? VHCA_EQ_DB_ARM : 0));
}

/* ---- host introspection ---------------------------------------------- */

/* The text x-query-vhca returns, with @id if not NULL. */
char *vhca_query_text_quiet(VhcaTestDev *d, const char *id)
{
    QDict *rsp;
    char *text;

    if (id) {
        rsp = qtest_qmp(d->qts, "{ 'execute': 'x-query-vhca', "
                        "'arguments': { 'id': %s } }", id);
    } else {
        rsp = qtest_qmp(d->qts, "{ 'execute': 'x-query-vhca' }");
    }
    g_assert_nonnull(rsp);
    if (!qdict_haskey(rsp, "return")) {
        g_error("x-query-vhca failed: %s",
                qdict_get_str(qdict_get_qdict(rsp, "error"), "desc"));
    }
    text = g_strdup(qdict_get_str(qdict_get_qdict(rsp, "return"),
                                  "human-readable-text"));
    qobject_unref(rsp);
    return text;
}

char *vhca_query_text(VhcaTestDev *d, const char *id)
{
    char *text = vhca_query_text_quiet(d, id);

    g_test_message("x-query-vhca %s:", id ? id : "(all)");
    g_test_message("%s", text);
    return text;
}

/* ---- MSI-X ----------------------------------------------------------- */

bool vhca_msix_fired_at(VhcaTestDev *d, uint16_t v, const char *where)
{
    uint64_t addr = d->msi_addr + 4 * v;
    uint32_t data;

    g_assert_cmpuint(v, <, d->vectors);
    data = qtest_readl(d->qts, addr);
    if (!data) {
        return false;
    }
    VHCA_CHECK_EQ(where, "MSI-X message data", data, VHCA_TEST_MSI_DATA(v));
    qtest_writel(d->qts, addr, 0);
    return true;
}

void vhca_msix_wait_at(VhcaTestDev *d, uint16_t v, const char *where)
{
    g_autofree char *what = g_strdup_printf("MSI-X vector %u", v);

    VHCA_WAIT_UNTIL_AT(d, vhca_msix_fired_at(d, v, where), what, where);
}

/* ---- Ethernet rings --------------------------------------------------- */

void vhca_eth_setup_at(VhcaTestDev *d, unsigned tx_log, unsigned rx_log,
                       uint16_t rx_buf_len, uint32_t eth_ctrl,
                       const char *where)
{
    unsigned tx_n = 1u << tx_log, rx_n = 1u << rx_log, i;

    memset(&d->tx, 0, sizeof(d->tx));
    memset(&d->rx, 0, sizeof(d->rx));
    d->tx.log_size = tx_log;
    d->tx.addr = guest_alloc(&d->alloc, tx_n * sizeof(struct vhca_eth_desc));
    qtest_memset(d->qts, d->tx.addr, 0, tx_n * sizeof(struct vhca_eth_desc));
    d->rx.log_size = rx_log;
    d->rx.addr = guest_alloc(&d->alloc, rx_n * sizeof(struct vhca_eth_desc));
    qtest_memset(d->qts, d->rx.addr, 0, rx_n * sizeof(struct vhca_eth_desc));

    g_free(d->tx_bufs);
    g_free(d->rx_bufs);
    g_free(d->rx_buf_len);
    d->tx_bufs = g_new(uint64_t, tx_n);
    for (i = 0; i < tx_n; i++) {
        d->tx_bufs[i] = guest_alloc(&d->alloc, VHCA_TEST_TX_BUF_LEN);
    }
    d->rx_bufs = g_new(uint64_t, rx_n);
    d->rx_buf_len = g_new(uint16_t, rx_n);
    for (i = 0; i < rx_n; i++) {
        d->rx_bufs[i] = guest_alloc(&d->alloc, rx_buf_len);
        d->rx_buf_len[i] = rx_buf_len;
    }

    vhca_wr_base(d, VHCA_REG_TX_BASE_LO, d->tx.addr);
    vhca_wr(d, VHCA_REG_TX_LOG_SIZE, tx_log);
    vhca_wr_base(d, VHCA_REG_RX_BASE_LO, d->rx.addr);
    vhca_wr(d, VHCA_REG_RX_LOG_SIZE, rx_log);
    vhca_wr(d, VHCA_REG_ETH_CTRL, eth_ctrl);
    VHCA_CHECK_EQ(where, "ETH_CTRL after enabling",
                  vhca_rd(d, VHCA_REG_ETH_CTRL), eth_ctrl);
    VHCA_CHECK_EQ(where, "TX_CI after enabling", vhca_rd(d, VHCA_REG_TX_CI), 0);
    VHCA_CHECK_EQ(where, "RX_CI after enabling", vhca_rd(d, VHCA_REG_RX_CI), 0);
}

static uint64_t vhca_desc_addr(VhcaRing *r, uint32_t idx)
{
    return r->addr + (idx & ((1u << r->log_size) - 1)) *
        sizeof(struct vhca_eth_desc);
}

void vhca_tx_post_desc(VhcaTestDev *d, uint64_t addr, uint16_t len)
{
    struct vhca_eth_desc desc = { 0 };

    desc.addr = cpu_to_le64(addr);
    desc.len = cpu_to_le16(len);
    qtest_memwrite(d->qts, vhca_desc_addr(&d->tx, d->tx.pi),
                   &desc, sizeof(desc));
    d->tx.pi++;
    vhca_wr(d, VHCA_REG_TX_PI, d->tx.pi);
}

void vhca_tx_post(VhcaTestDev *d, const void *frame, size_t len)
{
    uint32_t slot = d->tx.pi & ((1u << d->tx.log_size) - 1);

    g_assert_cmpuint(len, <=, VHCA_TEST_TX_BUF_LEN);
    qtest_memwrite(d->qts, d->tx_bufs[slot], frame, len);
    vhca_tx_post_desc(d, d->tx_bufs[slot], len);
}

uint16_t vhca_tx_complete_at(VhcaTestDev *d, const char *where)
{
    struct vhca_eth_desc desc;

    VHCA_WAIT_UNTIL_AT(d, (int32_t)(vhca_rd(d, VHCA_REG_TX_CI) -
                                    d->tx.ci) > 0,
                       "TX_CI to advance", where);
    qtest_memread(d->qts, vhca_desc_addr(&d->tx, d->tx.ci),
                  &desc, sizeof(desc));
    d->tx.ci++;
    VHCA_CHECK_EQ(where, "TX descriptor DONE flag",
                  le16_to_cpu(desc.flags) & VHCA_ETH_DESC_DONE,
                  VHCA_ETH_DESC_DONE);
    return le16_to_cpu(desc.flags);
}

uint16_t vhca_tx_frame_at(VhcaTestDev *d, const void *frame, size_t len,
                          const char *where)
{
    vhca_tx_post(d, frame, len);
    return vhca_tx_complete_at(d, where);
}

void vhca_rx_post_desc(VhcaTestDev *d, uint64_t addr, uint16_t len)
{
    struct vhca_eth_desc desc = { 0 };

    desc.addr = cpu_to_le64(addr);
    desc.len = cpu_to_le16(len);
    qtest_memwrite(d->qts, vhca_desc_addr(&d->rx, d->rx.pi),
                   &desc, sizeof(desc));
    d->rx.pi++;
    vhca_wr(d, VHCA_REG_RX_PI, d->rx.pi);
}

void vhca_rx_post(VhcaTestDev *d, unsigned n)
{
    unsigned i;

    g_assert_cmpuint(d->rx.pi - d->rx.ci + n, <=, 1u << d->rx.log_size);
    for (i = 0; i < n; i++) {
        uint32_t slot = d->rx.pi & ((1u << d->rx.log_size) - 1);
        struct vhca_eth_desc desc = { 0 };

        qtest_memset(d->qts, d->rx_bufs[slot], 0, d->rx_buf_len[slot]);
        desc.addr = cpu_to_le64(d->rx_bufs[slot]);
        desc.len = cpu_to_le16(d->rx_buf_len[slot]);
        qtest_memwrite(d->qts, vhca_desc_addr(&d->rx, d->rx.pi),
                       &desc, sizeof(desc));
        d->rx.pi++;
    }
    vhca_wr(d, VHCA_REG_RX_PI, d->rx.pi);
}

size_t vhca_rx_receive_at(VhcaTestDev *d, void *buf, size_t cap,
                          const char *where)
{
    uint32_t slot = d->rx.ci & ((1u << d->rx.log_size) - 1);
    struct vhca_eth_desc desc;
    size_t len;

    VHCA_WAIT_UNTIL_AT(d, (int32_t)(vhca_rd(d, VHCA_REG_RX_CI) -
                                    d->rx.ci) > 0,
                       "RX_CI to advance", where);
    qtest_memread(d->qts, vhca_desc_addr(&d->rx, d->rx.ci),
                  &desc, sizeof(desc));
    d->rx.ci++;
    VHCA_CHECK_EQ(where, "RX descriptor flags", le16_to_cpu(desc.flags),
                  VHCA_ETH_DESC_DONE);
    VHCA_CHECK_EQ(where, "RX descriptor addr", le64_to_cpu(desc.addr),
                  d->rx_bufs[slot]);
    len = le16_to_cpu(desc.len);
    if (len > d->rx_buf_len[slot]) {
        g_error("%s: RX descriptor len %zu exceeds its buffer (%u)",
                where, len, d->rx_buf_len[slot]);
    }
    qtest_memread(d->qts, d->rx_bufs[slot], buf, MIN(len, cap));
    return len;
}

/* ---- the wire (netdev socket) ----------------------------------------- */

static void vhca_wire_write_all(int fd, const void *buf, size_t len)
{
    const uint8_t *p = buf;

    while (len) {
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

        if (n < 0 && errno == EINTR) {
            continue;
        }
        g_assert_cmpint(n, >, 0);
        p += n;
        len -= n;
    }
}

void vhca_wire_send(VhcaTestDev *d, const void *frame, size_t len)
{
    uint32_t be_len = cpu_to_be32(len);

    g_assert_cmpint(d->sock, >=, 0);
    vhca_wire_write_all(d->sock, &be_len, sizeof(be_len));
    vhca_wire_write_all(d->sock, frame, len);
}

static void vhca_wire_read_all(int fd, void *buf, size_t len, gint64 deadline,
                               const char *where)
{
    uint8_t *p = buf;

    while (len) {
        struct pollfd pfd = { .fd = fd, .events = POLLIN };
        gint64 left_ms = (deadline - g_get_monotonic_time()) / 1000;
        ssize_t n;
        int r;

        if (left_ms <= 0) {
            g_error("%s: timed out waiting for a frame from the device",
                    where);
        }
        r = poll(&pfd, 1, left_ms);
        if (r < 0 && errno == EINTR) {
            continue;
        }
        g_assert_cmpint(r, >=, 0);
        if (r == 0) {
            continue;
        }
        n = recv(fd, p, len, 0);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            g_error("%s: netdev socket closed or failed", where);
        }
        p += n;
        len -= n;
    }
}

size_t vhca_wire_recv_at(VhcaTestDev *d, void *buf, size_t cap,
                         const char *where)
{
    gint64 deadline = g_get_monotonic_time() +
        VHCA_TEST_TIMEOUT_S * G_TIME_SPAN_SECOND;
    uint32_t be_len;
    size_t len;

    g_assert_cmpint(d->sock, >=, 0);
    vhca_wire_read_all(d->sock, &be_len, sizeof(be_len), deadline, where);
    len = be32_to_cpu(be_len);
    if (len > cap) {
        g_error("%s: the device sent a %zu-byte frame, expected <= %zu",
                where, len, cap);
    }
    vhca_wire_read_all(d->sock, buf, len, deadline, where);
    return len;
}

bool vhca_wire_idle(VhcaTestDev *d)
{
    uint8_t byte;
    ssize_t n;

    g_assert_cmpint(d->sock, >=, 0);
    n = recv(d->sock, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n < 0) {
        g_assert_true(errno == EAGAIN || errno == EWOULDBLOCK);
        return true;
    }
    return false;
}

void vhca_set_link(VhcaTestDev *d, bool up)
{
    qtest_qmp_assert_success(d->qts,
                             "{ 'execute': 'set_link', 'arguments': "
                             "{ 'name': %s, 'up': %i } }",
                             VHCA_TEST_NETDEV_ID, up);
}
