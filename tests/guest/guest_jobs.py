"""Programs running in the background in a fabric's guests while the host
does something to the fabric (migrates a guest, takes a snapshot): start
them, know that they are under way, and collect how they ended.

Used by tests/guest/test_migration.py and test_nvme_rdma.py (issue 30).
"""


class Job:
    """A command running in the background in guest index of fabric: its
    output in /tmp/NAME.log, its exit status in /tmp/NAME.status once it
    ends.  The guest is looked up by index on every call, as a migration
    gives it a new QEMU."""

    def __init__(self, fabric, index, name, command):
        self.fabric, self.index, self.name = fabric, index, name
        self.guest.run("rm -f /tmp/%s.status; (%s > /tmp/%s.log 2>&1; "
                       "echo $? > /tmp/%s.status) > /dev/null 2>&1 & "
                       "echo $! > /tmp/%s.pid"
                       % (name, command, name, name, name))

    @property
    def guest(self):
        return self.fabric[self.index]

    def wait_for(self, test, timeout=60):
        """Wait until the shell test holds (the program is listening, or
        under way); fail if the program ended first."""
        self.guest.run(
            "for i in $(seq %d); do %s && exit 0; [ -e /tmp/%s.status ] && "
            "break; sleep 0.1; done; cat /tmp/%s.log; exit 1"
            % (timeout * 10, test, self.name, self.name), 2 * timeout + 30)

    def running(self):
        status, _ = self.guest.exec("[ ! -e /tmp/%s.status ]" % self.name)
        return status == 0

    def output(self):
        return self.guest.run("cat /tmp/%s.log" % self.name)

    def stop(self):
        """Stop the program (the child of the job's subshell)."""
        self.guest.run("pkill -P $(cat /tmp/%s.pid); true" % self.name)

    def finish(self, timeout=300):
        """Wait (bounded) for the program to end: (status, output).  One
        that has not ended in time is stopped and counts as failed."""
        status, _ = self.guest.exec(
            "for i in $(seq %d); do [ -e /tmp/%s.status ] && exit 0; "
            "sleep 0.1; done; pkill -P $(cat /tmp/%s.pid); exit 1"
            % (timeout * 10, self.name, self.name), 2 * timeout + 30)
        out = self.output()
        if status != 0:
            return -1, out + "\n(did not end within %d s)" % timeout
        return int(self.guest.run("cat /tmp/%s.status" % self.name)), out


def start_pairs(fabric, pairs):
    """Start client/server program pairs, each a tuple (name, server,
    client, server_cmd, client_cmd, ready, started): every server_cmd in
    its guest (server) first, then, once each listens (ready, a shell
    test), every client_cmd; returns their (server job, client job) once
    each client's output shows it under way (started, a shell test in
    which %(log)s is the client's log).  Starting all the servers before
    any client keeps the pairs' runs together, so that one event can fall
    in the middle of all of them.  The programs write through stdbuf -oL,
    so their lines reach the logs as they print them."""
    servers = [Job(fabric, server, name + "-server", "stdbuf -oL " + cmd)
               for name, server, _, cmd, _, _, _ in pairs]
    for job, pair in zip(servers, pairs):
        job.wait_for(pair[5])
    clients = [Job(fabric, client, name, "stdbuf -oL " + cmd)
               for name, _, client, _, cmd, _, _ in pairs]
    for job, pair in zip(clients, pairs):
        job.wait_for(pair[6] % {"log": "/tmp/%s.log" % job.name})
    return list(zip(servers, clients))


def start_pair(fabric, name, server, client, server_cmd, client_cmd, ready,
               started):
    """One pair of start_pairs(): (server job, client job)."""
    return start_pairs(fabric, [(name, server, client, server_cmd,
                                 client_cmd, ready, started)])[0]


def finish_all(test, jobs, timeout=300):
    """Assert that every job ends with status 0; their outputs by name."""
    outs = {}
    for job in jobs:
        status, outs[job.name] = job.finish(timeout)
        test.assertEqual(status, 0, "%s (guest%d) failed:\n%s"
                         % (job.name, job.index, outs[job.name][-3000:]))
    return outs


def migrate(test, fabric, index, jobs):
    """Migrate guest index while every job runs (each must still be
    running once the guest has moved: the migration happened in the
    middle of it); query-migrate's answer."""
    old_pid = fabric[index].pid
    info = fabric.migrate(index)
    test.assertNotEqual(fabric[index].pid, old_pid)
    print("guest%d migrated in %s ms, downtime %s ms"
          % (index, info.get("total-time"), info.get("downtime")))
    for job in jobs:
        test.assertTrue(job.running(), "%s ended before the migration did: "
                        "make it run longer" % job.name)
    return info
