#!/usr/bin/env python3
"""Host side of the rxe guest control channel (guest side: scripts/rxe/guest-agent.sh).

Runs one shell command in a guest through a QEMU virtio-serial port exposed as a UNIX socket,
streams the command's output to stdout and exits with the command's exit status.

    guestctl.py SOCKET [--timeout SECONDS] -- COMMAND...
    guestctl.py SOCKET --wait SECONDS          # until the agent answers (exit 0) or not (1)

Exit status: the command's; 124 when the host gave up waiting (the guest kills the command
itself after --timeout), 125 when the socket cannot be reached or the protocol breaks.
"""
import base64
import os
import socket
import sys
import time


def connect(path, deadline):
    # No socket file: that guest was never started (or is gone); do not wait for it.
    if not os.path.exists(path):
        return None
    while True:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.connect(path)
            return s
        except OSError:
            s.close()
            if time.monotonic() >= deadline:
                return None
            time.sleep(0.2)


def run(path, command, timeout, out):
    """Returns the command's exit status (124 on host timeout, 125 on channel failure)."""
    # The guest kills the command after `timeout`; the host waits a little longer for the marker.
    deadline = time.monotonic() + timeout + 15
    s = connect(path, deadline)
    if s is None:
        out.write(f"guestctl: cannot connect to {path}\n".encode())
        return 125
    ident = f"{os.getpid()}x{time.monotonic_ns() & 0xFFFFFF:x}"
    b64 = base64.b64encode(command.encode()).decode()
    s.sendall(f"MRCMD {ident} {int(timeout)} {b64}\n".encode())
    start = f"@@MR-START {ident}\n".encode()
    done = f"\n@@MR-DONE {ident} ".encode()
    buf = b""
    started = False
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return 124
            s.settimeout(left)
            try:
                chunk = s.recv(65536)
            except socket.timeout:
                return 124
            if not chunk:
                out.write(b"guestctl: channel closed\n")
                return 125
            buf += chunk
            if not started:
                i = buf.find(start)
                if i < 0:
                    buf = buf[-len(start):]  # late output of an abandoned request
                    continue
                buf = buf[i + len(start):]
                started = True
            i = buf.find(done)
            if i >= 0:
                tail = buf[i + len(done):]
                if b"\n" not in tail:
                    continue
                out.write(buf[:i])
                out.flush()
                return int(tail.split(b"\n", 1)[0])
            # Keep enough to recognise a marker split across reads.
            keep = len(done) + 8
            if len(buf) > keep:
                out.write(buf[:-keep])
                out.flush()
                buf = buf[-keep:]
    finally:
        s.close()


def main(argv):
    if len(argv) < 3:
        sys.stderr.write(__doc__)
        return 2
    path = argv[1]
    args = argv[2:]
    out = sys.stdout.buffer
    if args[0] == "--wait":
        deadline = time.monotonic() + float(args[1])
        while time.monotonic() < deadline:
            left = max(1, int(deadline - time.monotonic()))
            if run(path, "true", min(left, 10), open(os.devnull, "wb")) == 0:
                return 0
            time.sleep(0.5)
        return 1
    timeout = 120
    if args[0] == "--timeout":
        timeout = int(args[1])
        args = args[2:]
    if args and args[0] == "--":
        args = args[1:]
    if not args:
        sys.stderr.write("guestctl: no command\n")
        return 2
    return run(path, " ".join(args), timeout, out)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
