#!/usr/bin/python3
"""A remote shell between the guests of one fabric, for Open MPI's launcher.

Open MPI (PRRTE) starts its daemon, prted, on every other host through
ssh; the guests have no ssh.  This is the smallest stand-in, with ssh's
interface as PRRTE calls it (plm_ssh_agent):

    vhca_rsh.py serve [--port P]       # in every guest but the first
    vhca_rsh.py HOST COMMAND...        # run COMMAND (joined by spaces,
                                       # through bash, as ssh does) on HOST

The client relays the command's output (stdout and stderr together) and
exits with its status, or 255 when it cannot reach the server (ssh's
code for a connection failure).  There is no authentication: it is for
the private fabric of scripts/vhca_fabric.py only (192.0.2.0/24,
docs/user-guide.rst, "Middleware"), started for one run by
scripts/vhca_mpirun.py.

Runs inside a guest (python3 only, no other module).
"""

import os
import socket
import struct
import subprocess
import sys
import threading

PORT = 7022
# Frames server -> client: b"O" + u32 length + output bytes, then one
# b"X" + u32 exit status.  Client -> server: one line, the command.
OUTPUT, EXIT = b"O", b"X"


def recv_exact(sock, n):
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise EOFError("connection closed")
        buf += chunk
    return buf


def serve_one(conn):
    with conn:
        line = b""
        while not line.endswith(b"\n"):
            chunk = conn.recv(4096)
            if not chunk:
                return
            line += chunk
        proc = subprocess.Popen(["bash", "-c", line.decode().rstrip("\n")],
                                stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT)
        try:
            for data in iter(lambda: proc.stdout.read1(65536), b""):
                conn.sendall(OUTPUT + struct.pack("!I", len(data)) + data)
        except OSError:
            # The client went away (killed, as ssh would be): so does
            # the command.
            proc.kill()
        status = proc.wait()
        try:
            conn.sendall(EXIT + struct.pack("!I", status & 0xff))
        except OSError:
            pass


def serve(port):
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("0.0.0.0", port))
    srv.listen(16)
    while True:
        conn, _ = srv.accept()
        threading.Thread(target=serve_one, args=(conn,), daemon=True).start()


def run(host, command):
    try:
        sock = socket.create_connection((host, PORT), timeout=30)
    except OSError as e:
        print("vhca_rsh: %s: %s" % (host, e), file=sys.stderr)
        return 255
    sock.settimeout(None)
    with sock:
        sock.sendall(command.encode() + b"\n")
        out = sys.stdout.buffer
        try:
            while True:
                kind = recv_exact(sock, 1)
                value = struct.unpack("!I", recv_exact(sock, 4))[0]
                if kind == EXIT:
                    return value
                out.write(recv_exact(sock, value))
                out.flush()
        except EOFError:
            print("vhca_rsh: %s closed the connection" % host,
                  file=sys.stderr)
            return 255


def main(argv):
    if argv[:1] == ["serve"]:
        port = int(argv[2]) if argv[1:2] == ["--port"] else PORT
        serve(port)
        return 0
    # ssh options PRRTE may put before the host (-x: no X11) mean
    # nothing here.
    while argv and argv[0].startswith("-"):
        argv = argv[1:]
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    return run(argv[0], " ".join(argv[1:]))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
