"""A real MCP server on the official Python SDK (``mcp`` 2.x) with the resume-gate adapter,
serving host-example's tools at http://127.0.0.1:PORT/mcp: ``append {text}`` (one line to the
journal file; not idempotent), ``journal {from, limit}``, ``countdown {n, interval_ms}`` (n
progress notifications, then "done"), ``test_simple_text``, and ``test_reconnection`` (closes its
SSE stream mid-call; the result arrives on the resume).

    hosts/python/example --port 9001 [--journal journal.txt]   # installs on first run
    hosts/python/example --port 9001 --store sdk   # the SDK examples' event store, no gate
    hosts/python/example --port 9001 --retention-ms 300   # how long a cut stream stays resumable

Prints ``listening PORT`` once it serves.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import socket
from pathlib import Path
from typing import Any

import mcp_types as types
import uvicorn
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError

from resume_gate import Gate
from resume_gate.reference_store import InMemoryEventStore
from resume_gate.sdk import gated_streamable_http_app

MAX_APPEND_BYTES = 64 * 1024
MAX_JOURNAL_LINES = 1000
PAGE_LINES = 100
PAGE_BYTES = 256 * 1024


def _integer(maximum: int, minimum: int = 0) -> dict[str, Any]:
    return {"type": "integer", "minimum": minimum, "maximum": maximum}


TOOLS = [
    types.Tool(
        name="append",
        description="Appends a line to the journal and returns the new line count (not idempotent)",
        input_schema={"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
    ),
    types.Tool(
        name="journal",
        description="Returns a page of the journal's lines (at most 100 lines or 256 KiB) and where the next starts",
        input_schema={"type": "object", "properties": {"from": {"type": "integer", "minimum": 0}, "limit": _integer(PAGE_LINES, 1)}},
    ),
    types.Tool(
        name="countdown",
        description='Sends n progress notifications, one every interval_ms, then returns "done"',
        input_schema={"type": "object", "properties": {"n": _integer(10_000), "interval_ms": _integer(60_000)}, "required": ["n"]},
    ),
    types.Tool(name="test_simple_text", description="Returns simple text content", input_schema={"type": "object", "properties": {}}),
    types.Tool(
        name="test_reconnection",
        description="Closes its SSE stream mid-call; the result arrives on the client's GET resume",
        input_schema={"type": "object", "properties": {}},
    ),
]


def _count(value: Any, maximum: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= maximum


def _text(s: str, **extra: Any) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=s)], **extra)


class Journal:
    def __init__(self, path: Path):
        self.path = path

    def lines(self) -> list[str]:
        try:
            return self.path.read_text().splitlines()
        except FileNotFoundError:
            return []

    def append(self, line: str) -> int:
        count = len(self.lines())
        if count >= MAX_JOURNAL_LINES:
            raise ValueError(f"the journal is full ({MAX_JOURNAL_LINES} lines)")
        with self.path.open("a") as f:
            f.write(line + "\n")
        return count + 1


def make_server(journal: Journal) -> Server[Any]:
    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=TOOLS)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        a = params.arguments or {}

        def bad(why: str) -> MCPError:
            return MCPError(types.INVALID_PARAMS, f"{params.name}: {why}")

        match params.name:
            case "append":
                text = a.get("text")
                if not isinstance(text, str):
                    raise bad("`text` must be a string")
                if len(text.encode()) > MAX_APPEND_BYTES or "\n" in text or "\r" in text:
                    raise bad("`text` must be one line of at most 64 KiB")
                try:
                    count = journal.append(text)
                except ValueError as e:
                    return _text(str(e), is_error=True)
                return _text(str(count), structured_content={"lines": count})
            case "journal":
                start, limit = a.get("from", 0), a.get("limit", PAGE_LINES)
                if not _count(start, 2**53):
                    raise bad("`from` must be a non-negative integer")
                if not _count(limit, PAGE_LINES) or limit < 1:
                    raise bad("`limit` must be an integer from 1 to 100")
                everything = journal.lines()
                page = everything[start : start + limit]
                size, keep = 0, 0
                for line in page:
                    size += len(line.encode())
                    if size > PAGE_BYTES:
                        break
                    keep += 1
                lines = page[: min(max(keep, 1), len(page))]
                end = start + len(lines)
                following = end if end < len(everything) else None
                content = {"lines": lines, "from": start, "total": len(everything), "next": following}
                return _text("\n".join(lines), structured_content=content)
            case "countdown":
                n, interval = a.get("n"), a.get("interval_ms", 100)
                if not _count(n, 10_000):
                    raise bad("`n` must be an integer from 0 to 10000")
                if not _count(interval, 60_000):
                    raise bad("`interval_ms` must be an integer from 0 to 60000")
                for i in range(1, n + 1):
                    await asyncio.sleep(interval / 1000)
                    await ctx.session.report_progress(i, n)
                return _text("done")
            case "test_simple_text":
                return _text("This is a simple text response for testing.")
            case "test_reconnection":
                await asyncio.sleep(0.1)
                if ctx.close_sse_stream is not None:
                    await ctx.close_sse_stream()
                await asyncio.sleep(0.3)
                return _text("Reconnection test completed successfully")
        raise MCPError(types.INVALID_PARAMS, f"unknown tool: {params.name}")

    return Server("resume-gate python example", version="0.1.0", on_list_tools=list_tools, on_call_tool=call_tool)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=9001)
    parser.add_argument("--journal", type=Path, default=Path("journal.txt"))
    parser.add_argument("--store", choices=["gate", "sdk"], default="gate")
    parser.add_argument("--retention-ms", type=int, help="how long a cut stream stays resumable")
    args = parser.parse_args()

    server = make_server(Journal(args.journal))
    if args.store == "gate":
        config = {} if args.retention_ms is None else {"retention_ms": args.retention_ms}
        app = gated_streamable_http_app(server, Gate(**config))
    else:
        app = server.streamable_http_app(event_store=InMemoryEventStore(), retry_interval=1000)

    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", args.port))
    print(f"listening {sock.getsockname()[1]}", flush=True)
    logging.getLogger("uvicorn.access").disabled = True
    config = uvicorn.Config(app, log_level="warning")
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    main()
