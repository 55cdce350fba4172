"""An MCP client as agents configure it: the official SDK's stdio_client with its default
environment (HOME, PATH, ... but not DOCDEX_HOME). argv: docdex, repo, then docdex's own args
before `mcp`. Prints {"search": text, "state_dir": ...} as JSON."""
import asyncio
import json
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


async def main():
    docdex, repo, pre = sys.argv[1], sys.argv[2], sys.argv[3:]
    params = StdioServerParameters(command=docdex, args=pre + ["mcp", "--repo", repo])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            found = await session.call_tool("docdex_search", {"query": "zebra7"})
            status = await session.call_tool("docdex_status", {})
            st = json.loads(status.content[0].text) if not getattr(status, "is_error", getattr(status, "isError", False)) else {}
            print(json.dumps({
                "search": found.content[0].text,
                "search_error": bool(getattr(found, "is_error", getattr(found, "isError", False))),
                "state_dir": (st.get("index") or {}).get("state_dir"),
                "status": status.content[0].text,
            }))


asyncio.run(main())
