#!/usr/bin/env python3
"""Resident memory of a server under oversized request ids, as the issue that bounded them saw it.

    cargo build --release -p host-example
    benches/oversized_ids.py target/release/host-example [--sessions 8 --pings 64 --id-mib 2]

Starts the server on a free port, opens `--sessions` sessions and sends each `--pings` `ping`s
whose string id is `--id-mib` MiB (8 x 64 x 2 MiB = 1 GiB), over kept-alive connections; then
prints the server's resident memory (VmRSS) before and after, what the replies looked like,
and whether a fresh session still gets its call answered. Standard library only.
"""

import argparse
import http.client
import json
import socket
import subprocess
import sys
import time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


def post(conn, body, session=None):
    headers = dict(HEADERS)
    if session:
        headers["Mcp-Session-Id"] = session
        headers["MCP-Protocol-Version"] = "2025-11-25"
    conn.request("POST", "/mcp", body=body, headers=headers)
    resp = conn.getresponse()
    return resp.status, resp.getheader("mcp-session-id"), resp.read()


def initialize(conn):
    body = json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "rss", "version": "1"}}})
    status, session, _ = post(conn, body)
    assert status == 200 and session, status
    return session


def main():
    p = argparse.ArgumentParser()
    p.add_argument("server")
    p.add_argument("--sessions", type=int, default=8)
    p.add_argument("--pings", type=int, default=64)
    p.add_argument("--id-mib", type=int, default=2)
    args = p.parse_args()
    port = free_port()
    server = subprocess.Popen([args.server, "--port", str(port)], stderr=subprocess.DEVNULL)
    try:
        for _ in range(200):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
                break
            except OSError:
                time.sleep(0.05)
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        initialize(conn)
        before = rss_kib(server.pid)
        huge = "i" * (args.id_mib << 20)
        statuses, longest = {}, 0
        started = time.time()
        for _ in range(args.sessions):
            session = initialize(conn)
            for _ in range(args.pings):
                body = json.dumps({"jsonrpc": "2.0", "id": huge, "method": "ping"})
                status, _, reply = post(conn, body, session)
                statuses[status] = statuses.get(status, 0) + 1
                longest = max(longest, len(reply))
        elapsed = time.time() - started
        after = rss_kib(server.pid)
        session = initialize(conn)
        ping = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"})
        status, _, reply = post(conn, ping, session)
        sent = args.sessions * args.pings * args.id_mib
        print(f"sent {sent} MiB of ids in {args.sessions * args.pings} pings ({elapsed:.1f} s): replies {statuses}, "
              f"longest reply {longest} bytes")
        print(f"resident memory: {before / 1024:.1f} MiB before, {after / 1024:.1f} MiB after "
              f"({(after - before) / 1024:+.1f} MiB)")
        print(f"a fresh session's ping afterwards: {status} {reply[:120]!r}")
        return 0 if status == 200 and set(statuses) == {400} else 1
    finally:
        server.terminate()
        server.wait()


if __name__ == "__main__":
    sys.exit(main())
