"""The official Python SDK client (`mcp` from PyPI) against a resume-gate server.

Run by `tests/tests/python_client.rs` with MCP_URL set. Prints a closing
`N passed, N failed` line and exits non-zero on any failure.
"""

import asyncio
import os
import sys
import traceback
from urllib.parse import urlparse

from mcp.client import Client

from cutting_proxy import CuttingProxy

URL = os.environ["MCP_URL"]


async def journal() -> list[str]:
    """The journal as the server's `journal` tool reports it, over a session of its own."""
    async with Client(URL, mode="legacy") as client:
        result = await client.call_tool("journal", {})
    return result.structured_content["lines"]


async def with_proxy():
    u = urlparse(URL)
    proxy = CuttingProxy(u.hostname, u.port)
    port = await proxy.start()
    return proxy, f"http://localhost:{port}{u.path}"


async def a_probing_client_lists_the_tools_in_the_era_the_server_speaks():
    proxy, url = await with_proxy()
    async with Client(url, mode="auto") as client:
        tools = await client.list_tools()
        names = {t.name for t in tools.tools}
        assert {"append", "journal", "countdown"} <= names, names
    posts = [r for r in proxy.requests if r.startswith("POST")]
    probes = [r for r in posts if "2026-07-28" in r]
    assert probes, "the client probed the stateless revision first"
    # The project's hosts and the Python SDK's own server speak that revision, and then every
    # POST stays in it; the TypeScript SDK 1.32 server refuses it and the client falls back to
    # `initialize`.
    fell_back = any("2025-11-25" in r or "initialize" in r for r in posts)
    assert fell_back or len(probes) == len(posts), posts
    await proxy.close()


async def a_countdown_cut_mid_stream_resumes_with_every_event_once():
    proxy, url = await with_proxy()
    seen: list[float] = []

    async def on_progress(progress, total, message):
        seen.append(progress)

    async with Client(url, mode="legacy") as client:
        proxy.cut_when_server_sends(b'"progress":3')
        result = await client.call_tool(
            "countdown", {"n": 6, "interval_ms": 100}, read_timeout_seconds=20, progress_callback=on_progress
        )
    assert proxy.cuts == 1, "the connection was cut"
    assert proxy.resumes(), "the client resumed with GET + Last-Event-ID"
    assert seen == [1, 2, 3, 4, 5, 6], seen
    assert result.content[0].text == "done", result
    await proxy.close()


async def append_cut_before_its_result_runs_exactly_once():
    proxy, url = await with_proxy()
    before = len(await journal())
    async with Client(url, mode="legacy") as client:
        proxy.cut_when_server_sends(b'"structuredContent"')
        result = await client.call_tool("append", {"text": "py-once"}, read_timeout_seconds=20)
    assert proxy.cuts == 1
    assert proxy.resumes(), "the result came on a GET resume"
    after = await journal()
    assert len(after) == before + 1, after
    assert after[-1] == "py-once"
    assert result.structured_content["lines"] == before + 1, result
    await proxy.close()


async def main() -> int:
    tests = [
        a_probing_client_lists_the_tools_in_the_era_the_server_speaks,
        a_countdown_cut_mid_stream_resumes_with_every_event_once,
        append_cut_before_its_result_runs_exactly_once,
    ]
    passed = failed = 0
    for t in tests:
        try:
            await asyncio.wait_for(t(), timeout=60)
            passed += 1
            print(f"ok   {t.__name__}")
        except BaseException:
            failed += 1
            print(f"FAIL {t.__name__}")
            traceback.print_exc()
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
