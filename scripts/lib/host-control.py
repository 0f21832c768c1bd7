#!/usr/bin/python3
"""Relay QMP commands from guest tests to the VM's own QMP monitor (run-vm.sh starts it).

The guest writes one QMP command per line to its third serial port (/dev/ttyS2, chardev
socket GUEST_SOCK here); each gets back QMP's reply ("return" or "error") as one line.
Guest tests use it to inject device faults (qom-set gmemN inject ...), which only the
host can. Usage: host-control.py GUEST_SOCK QMP_SOCK (both made by QEMU; waits for them).
"""
import json
import socket
import sys
import time


def connect(path, timeout=120):
    deadline = time.monotonic() + timeout
    while True:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.connect(path)
            return s
        except OSError:
            s.close()
            if time.monotonic() > deadline:
                sys.exit(f"host-control: {path} never accepted a connection; did QEMU start?")
            time.sleep(0.2)


def qmp_reply(f):
    """The next line that answers a command (events are skipped)."""
    while True:
        line = f.readline()
        if not line:
            return None
        msg = json.loads(line)
        if "return" in msg or "error" in msg:
            return msg


def main():
    guest_path, qmp_path = sys.argv[1:3]
    qmp = connect(qmp_path).makefile("rw")
    json.loads(qmp.readline())     # greeting
    qmp.write('{"execute": "qmp_capabilities"}\n')
    qmp.flush()
    qmp_reply(qmp)
    guest = connect(guest_path).makefile("rw", newline="\n")
    for line in guest:
        line = line.strip()
        if not line:
            continue
        try:
            json.loads(line)
        except ValueError as e:
            reply = {"error": {"class": "GenericError", "desc": f"host-control: not JSON: {e}"}}
        else:
            qmp.write(line + "\n")
            qmp.flush()
            reply = qmp_reply(qmp)
            if reply is None:
                return
        guest.write(json.dumps(reply) + "\n")
        guest.flush()


if __name__ == "__main__":
    main()
