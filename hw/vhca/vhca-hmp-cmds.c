/*
 * QEMU vhca: "info vhca [id]", the HMP face of x-query-vhca.  Built
 * whether or not the device is (the QMP side has a stub).
 *
 * Copyright (c) 2025 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "monitor/hmp.h"
#include "monitor/monitor.h"
#include "qapi/error.h"
#include "qapi/qapi-commands-machine.h"
#include "qobject/qdict.h"

void hmp_info_vhca(Monitor *mon, const QDict *qdict)
{
    const char *id = qdict_get_try_str(qdict, "id");
    Error *err = NULL;
    g_autoptr(HumanReadableText) info = qmp_x_query_vhca(id, &err);

    if (hmp_handle_error(mon, err)) {
        return;
    }
    monitor_puts(mon, info->human_readable_text);
}
