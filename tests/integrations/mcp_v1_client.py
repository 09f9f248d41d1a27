"""Plays MCP calls with the MCP SDK 1.x client (run with a venv that has mcp 1.x: OpenEnv's); prints JSON.

    python mcp_v1_client.py URL CALLS_JSON

``CALLS_JSON`` is a list of ``[name, arguments]``; they are made in order until a result says the conversation
ended. Prints the negotiated protocol version, the session id the server gave (None when it keeps no session), the
tool names, and each result's error flag.
"""

from __future__ import annotations

import json
import sys

import anyio
from mcp import ClientSession
from mcp.client.streamable_http import streamablehttp_client


async def main(url: str, calls: list[list]) -> None:
    async with streamablehttp_client(url) as (read, write, session_id):
        async with ClientSession(read, write) as session:
            opened = await session.initialize()
            tools = [t.name for t in (await session.list_tools()).tools]
            errors = []
            for name, arguments in calls:
                result = await session.call_tool(name, arguments)
                errors.append(result.isError)
                if "(The conversation has ended.)" in result.content[0].text:
                    break
            print(json.dumps({"version": opened.protocolVersion, "session_id": session_id(), "tools": tools,
                              "errors": errors}))


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], json.loads(sys.argv[2]))
