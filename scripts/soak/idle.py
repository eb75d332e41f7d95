"""Idle and slow connections for scripts/soak.sh: COUNT connections held open against each
port until DEADLINE (seconds since the epoch), a third of them slowloris-style (a byte every
few seconds, never a whole request), from 16 addresses of their own (127.0.2.1-16), as
attackers would come from other hosts than the clients. A connection the server closes is counted and opened
again, so the servers face the same number for the whole soak. Loopback only. Prints one
line of counts when done."""

import selectors
import socket
import sys
import time


def main() -> None:
    host, deadline, count = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
    ports = [int(p) for p in sys.argv[4:]]
    assert host.startswith("127."), "loopback only"
    sel = selectors.DefaultSelector()
    opened = closed_by_server = failed = 0
    drip = {}

    def open_one(port: int, slow: bool) -> None:
        nonlocal opened, failed
        s = socket.socket()
        s.setblocking(False)
        try:
            s.bind((f"127.0.2.{1 + opened % 16}", 0))
            s.connect_ex((host, port))
        except OSError:
            failed += 1
            s.close()
            return
        sel.register(s, selectors.EVENT_READ, (port, slow))
        opened += 1
        if slow:
            drip[s] = time.monotonic()

    for i in range(count):
        open_one(ports[i % len(ports)], slow=(i % 3 == 0))
    while time.time() < deadline:
        for key, _ in sel.select(timeout=0.5):
            s, (port, slow) = key.fileobj, key.data
            try:
                data = s.recv(4096)
            except OSError:
                data = b""
            if not data:
                sel.unregister(s)
                drip.pop(s, None)
                s.close()
                closed_by_server += 1
                open_one(port, slow)
        now = time.monotonic()
        for s, last in list(drip.items()):
            if now - last >= 3.0:
                try:
                    s.send(b"G")
                except OSError:
                    pass
                drip[s] = now
    for key in list(sel.get_map().values()):
        key.fileobj.close()
    print(f"idle: opened {opened}, closed by the servers {closed_by_server}, failed {failed}")


if __name__ == "__main__":
    main()
