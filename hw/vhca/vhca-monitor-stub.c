/*
 * QEMU vhca: x-query-vhca in a QEMU built without the device - there is
 * no vhca device to show.
 *
 * Copyright (c) 2025 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qapi/qapi-commands-machine.h"
#include "qapi/type-helpers.h"

HumanReadableText *qmp_x_query_vhca(const char *id, Error **errp)
{
    g_autoptr(GString) buf = g_string_new("");

    if (id) {
        error_set(errp, ERROR_CLASS_DEVICE_NOT_FOUND,
                  "Device '%s' is not a vhca device", id);
        return NULL;
    }
    return human_readable_text_from_str(buf);
}
