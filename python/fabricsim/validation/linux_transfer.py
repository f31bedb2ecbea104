"""Sized TCP transfers with exact completion times (run inside lab namespaces; standard library only).

iperf3 ends a sized test (``-n``) when the client has *written* its bytes,
so its receiver counts stop short of the size and its times miss the data
still in flight. This tool measures what a job completion time needs: the
receiver timestamps the first and the last byte (``CLOCK_MONOTONIC``, one
clock for every namespace of the machine), and the sender reports its start
and its TCP_INFO (retransmissions, cwnd, RTT) once every byte is
acknowledged::

    python linux_transfer.py server PORT                 # one connection; prints JSON when it closes
    python linux_transfer.py client ADDR PORT BYTES CC [START_AT]
                                         # connects at monotonic time START_AT, sends BYTES,
                                         # prints JSON when the server has everything

It is run by path (``Lab.transfers``), so it imports nothing from fabricsim.
"""

from __future__ import annotations

import json
import socket
import struct
import sys
import time

CHUNK = 1 << 20
#: Offsets in ``struct tcp_info`` (include/uapi/linux/tcp.h): u32 fields.
TCP_INFO_FIELDS = {"rtt_us": 68, "snd_cwnd": 80, "total_retrans": 100}


def server(port: int) -> dict:
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("0.0.0.0", port))
    listener.listen(1)
    print("listening", file=sys.stderr, flush=True)
    conn, _ = listener.accept()
    buffer = bytearray(CHUNK)
    received = 0
    first = last = None
    while True:
        count = conn.recv_into(buffer)
        if not count:
            break
        last = time.monotonic()
        if first is None:
            first = last
        received += count
    conn.sendall(b"k")
    conn.close()
    listener.close()
    return {"bytes": received, "first_byte_s": first, "last_byte_s": last}


def client(address: str, port: int, size: int, cc: str, start_at: float = 0.0) -> dict:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if cc:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, cc.encode())
    payload = memoryview(bytes(CHUNK))
    while time.monotonic() < start_at:
        time.sleep(min(0.01, max(0.0, start_at - time.monotonic())))
    start = time.monotonic()
    sock.connect((address, port))
    left = size
    while left > 0:
        sent = sock.send(payload[: min(CHUNK, left)])
        left -= sent
    written = time.monotonic()
    sock.shutdown(socket.SHUT_WR)
    sock.recv(1)  # the server answers once it has read everything
    done = time.monotonic()
    info = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 104)
    fields = {name: struct.unpack_from("I", info, offset)[0] for name, offset in TCP_INFO_FIELDS.items()}
    sock.close()
    return {
        "bytes": size,
        "start_at_s": start_at,
        "start_s": start,
        "written_s": written,
        "acknowledged_s": done,
        **fields,
    }


def main(argv: list) -> int:
    if argv[:1] == ["server"]:
        result = server(int(argv[1]))
    elif argv[:1] == ["client"]:
        cc = argv[4] if len(argv) > 4 else ""
        result = client(argv[1], int(argv[2]), int(argv[3]), cc, float(argv[5]) if len(argv) > 5 else 0.0)
    else:
        print(__doc__, file=sys.stderr)
        return 2
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
