"""The Python MCP SDK's own Streamable HTTP server (`mcp` 2.3.0, `MCPServer.run("streamable-http")`,
uvicorn) serving the tools the end-to-end benchmark calls, with host-example's semantics:
`countdown {n, interval_ms}` (n progress notifications, then "done") and `test_simple_text`.

The package ships no event store (its example store lives in the SDK's repository only), so this
server runs without one, as the SDK serves by default: no resumability.

    python benches/python/py_sdk_server.py --port 9001
"""

import argparse
import asyncio
import logging

from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("py-sdk reference server", log_level="WARNING")


@server.tool(description='Sends n progress notifications, one every interval_ms, then returns "done"')
async def countdown(n: int, ctx: Context, interval_ms: int = 100) -> str:
    if not 0 <= n <= 10_000 or not 0 <= interval_ms <= 60_000:
        raise ValueError("n must be 0..10000 and interval_ms 0..60000")
    for i in range(1, n + 1):
        await asyncio.sleep(interval_ms / 1000)
        await ctx.report_progress(i, n)
    return "done"


@server.tool(description="Returns simple text content")
async def test_simple_text() -> str:
    return "This is a simple text response for testing."


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    logging.getLogger("uvicorn.access").disabled = True
    server.run("streamable-http", host="127.0.0.1", port=args.port)
