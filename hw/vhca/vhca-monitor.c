/*
 * QEMU vhca: the x-query-vhca QMP command ("info vhca" in HMP), which
 * shows the state of vhca devices as text (docs/user-guide.rst).
 *
 * It runs in the main loop with the BQL held, like every MMIO access and
 * bottom half of the device, so it sees the engine between two of its
 * calls.  It only reads: the guest keeps running.
 *
 * Copyright (c) 2025 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qapi/qapi-commands-machine.h"
#include "qapi/type-helpers.h"
#include "hw/qdev-core.h"

#include "vhca.h"

static void vhca_monitor_line(void *opaque, const char *line)
{
    GString *buf = opaque;

    g_string_append_printf(buf, "  %s\n", line);
}

static void vhca_monitor_dump(VhcaState *s, GString *buf)
{
    DeviceState *dev = DEVICE(s);
    PCIDevice *pdev = PCI_DEVICE(s);
    NetClientState *nc = qemu_get_queue(s->nic);
    g_autofree char *path = object_get_canonical_path(OBJECT(s));

    g_string_append_printf(buf, "%s: %s pci %02x:%02x.%x netdev %s\n",
                           dev->id ? dev->id : "-", path,
                           pci_dev_bus_num(pdev), PCI_SLOT(pdev->devfn),
                           PCI_FUNC(pdev->devfn),
                           nc->peer ? nc->peer->name : "-");
    g_string_append_printf(buf, "  doorbell-queue queued %" PRIu64
                           " full %" PRIu64 "\n", s->doorbells_queued,
                           s->doorbells_queue_full);
    g_string_append_printf(buf, "  reentry deferred %" PRIu64
                           " refused %" PRIu64 "\n", s->nested_deferred,
                           s->nested_refused);
    /* Run by another device's aio_poll inside the engine: see vhca.c. */
    if (s->engine_busy) {
        g_string_append(buf, "  engine busy: its state is not shown, "
                        "ask again\n");
        return;
    }
    vhca_core_dump(&s->core, vhca_monitor_line, buf);
}

/* A realized vhca device, or NULL. */
static VhcaState *vhca_monitor_cast(Object *obj)
{
    VhcaState *s = (VhcaState *)object_dynamic_cast(obj, TYPE_VHCA);

    return s && DEVICE(s)->realized ? s : NULL;
}

static int vhca_monitor_foreach(Object *obj, void *opaque)
{
    VhcaState *s = vhca_monitor_cast(obj);

    if (s) {
        vhca_monitor_dump(s, opaque);
    }
    return 0;
}

HumanReadableText *qmp_x_query_vhca(const char *id, Error **errp)
{
    g_autoptr(GString) buf = g_string_new("");

    if (id) {
        /* An ID, or a QOM path, as device_del takes them. */
        Object *obj = object_resolve_path_at(
            machine_get_container("peripheral"), id);
        VhcaState *s = obj ? vhca_monitor_cast(obj) : NULL;

        if (!s) {
            error_set(errp, ERROR_CLASS_DEVICE_NOT_FOUND,
                      "Device '%s' is not a vhca device", id);
            return NULL;
        }
        vhca_monitor_dump(s, buf);
    } else {
        object_child_foreach_recursive(object_get_root(),
                                       vhca_monitor_foreach, buf);
    }
    return human_readable_text_from_str(buf);
}
