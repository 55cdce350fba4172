"""Drives docdex's MCP server with the official MCP Python SDK (`mcp` on PyPI).

Usage: mcp_client.py stdio BINARY REPO [TOKEN]
       mcp_client.py http URL REPO [TOKEN]      (streamable HTTP, URL ends in /v1/mcp)
       mcp_client.py sse URL REPO [TOKEN]       (legacy SSE, URL ends in /sse)

Lists the tools, calls each one, checks the results, and prints one JSON line
with what it saw. Exits non-zero on any failed check.
"""
import asyncio
import json
import os
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.sse import sse_client
from mcp.client.stdio import stdio_client

try:  # mcp >= 2 (httpx2): headers come through a pre-built client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    def streamable(url, headers):
        return streamable_http_client(url, http_client=create_mcp_http_client(headers=headers))

except ImportError:  # mcp 1.x
    from mcp.client.streamable_http import streamablehttp_client

    def streamable(url, headers):
        return streamablehttp_client(url, headers=headers)

EXPECTED_TOOLS = {
    "docdex_search",
    "docdex_similar_files",
    "docdex_server_info",
    "docdex_open",
    "docdex_status",
    "docdex_symbols",
    "docdex_impact",
    "docdex_context",
    "docdex_run_tests",
    "docdex_audit_duplicates",
    "docdex_audit_conflicts",
    "docdex_index",
    "docdex_memory_save",
    "docdex_memory_recall",
    "docdex_memory_list",
    "docdex_memory_delete",
    "docdex_ast_query",
    "docdex_impact_cycles",
    "docdex_get_profile",
    "docdex_save_preference",
    "docdex_set_role",
    "docdex_web_research",
}


def attr(obj, *names):
    """Reads a field under its mcp 2.x (snake_case) or 1.x (camelCase) name."""
    for n in names:
        if hasattr(obj, n):
            return getattr(obj, n)
    raise AttributeError(names)


def is_error(result):
    return bool(attr(result, "is_error", "isError"))


def text_of(result):
    return "".join(c.text for c in result.content if getattr(c, "type", "") == "text")


def check(cond, what):
    if not cond:
        raise AssertionError(what)


async def exercise(session, repo, report):
    init = await session.initialize()
    report["server"] = attr(init, "server_info", "serverInfo").name
    tools = await session.list_tools()
    names = {t.name for t in tools.tools}
    report["tools"] = sorted(names)
    check(EXPECTED_TOOLS <= names, f"missing tools: {EXPECTED_TOOLS - names}")
    for t in tools.tools:
        schema = attr(t, "input_schema", "inputSchema")
        check(t.description and len(t.description) > 40, f"{t.name} needs a description")
        check(schema.get("type") == "object", f"{t.name} schema: {schema}")
        check("project_root" in schema.get("properties", {}), f"{t.name} takes project_root")
    # No prompts or resources: the list methods answer empty lists (not -32601, which some
    # clients take for a failed connection); logging/setLevel is -32601 saying why.
    report["prompts"] = len((await session.list_prompts()).prompts)
    report["resources"] = len((await session.list_resources()).resources)
    report["resource_templates"] = len(attr(await session.list_resource_templates(), "resource_templates", "resourceTemplates"))
    try:
        await session.set_logging_level("debug")
        report["set_level_error"] = None
    except Exception as e:  # McpError (mcp 1.x) or MCPError (2.x), both carry .error
        report["set_level_error"] = [e.error.code, e.error.message]
    search_tool = next(t for t in tools.tools if t.name == "docdex_search")
    search_schema = attr(search_tool, "input_schema", "inputSchema")
    check(search_schema.get("required") == ["query"], f"search requires query: {search_schema}")

    # docdex_search: with an explicit project_root, and the hit belongs to this repo.
    r = await session.call_tool("docdex_search", {"query": "expire stale sessions", "project_root": repo, "limit": 3})
    check(not is_error(r), f"search failed: {text_of(r)}")
    body = json.loads(text_of(r))
    check(body["results"], f"no hits: {body}")
    check(body["results"][0]["path"] == "src/auth/session.rs", f"top hit: {body['results'][0]['path']}")
    check(os.path.realpath(body["repo"]) == os.path.realpath(repo), f"repo {body['repo']}")
    report["search_top"] = body["results"][0]["path"]
    hit = body["results"][0]

    # docdex_open: the lines the hit points at.
    r = await session.call_tool(
        "docdex_open",
        {"path": hit["path"], "start_line": hit["line_start"], "end_line": hit["line_end"], "project_root": repo},
    )
    check(not is_error(r), f"open failed: {text_of(r)}")
    opened = json.loads(text_of(r))
    check("expire_stale_sessions" in opened["text"], f"open text: {opened}")
    report["open_lines"] = [opened["line_start"], opened["line_end"]]

    # docdex_open refuses paths outside the repository.
    r = await session.call_tool("docdex_open", {"path": "../outside.txt", "project_root": repo})
    check(is_error(r) and "outside" in text_of(r), f"escape not refused: {text_of(r)}")

    # docdex_status.
    r = await session.call_tool("docdex_status", {"project_root": repo})
    check(not is_error(r), f"status failed: {text_of(r)}")
    st = json.loads(text_of(r))
    check(st["index"]["documents"] >= 4, f"status: {st}")
    report["documents"] = st["index"]["documents"]

    # docdex_similar_files: files like session.rs, itself excluded; outside paths are refused.
    r = await session.call_tool("docdex_similar_files", {"file": "src/auth/session.rs", "project_root": repo})
    check(not is_error(r), f"similar failed: {text_of(r)}")
    sim = json.loads(text_of(r))
    check(all(f["path"] != "src/auth/session.rs" for f in sim["results"]), f"similar: {sim}")
    report["similar_ok"] = True
    r = await session.call_tool("docdex_similar_files", {"file": "../outside.txt", "project_root": repo})
    check(is_error(r), f"similar outside not refused: {text_of(r)}")

    # docdex_server_info: version, the repositories served and the tools.
    r = await session.call_tool("docdex_server_info", {})
    check(not is_error(r), f"server info failed: {text_of(r)}")
    info = json.loads(text_of(r))
    check(info["name"] == "docdex" and info["version"], f"server info: {info}")
    check("docdex_server_info" in info["tools"] and len(info["tools"]) == len(names), f"server info tools: {info}")
    r = await session.call_tool("docdex_server_info", {"project_root": repo})
    info = json.loads(text_of(r))
    check(info["repo"]["documents"] >= 4, f"server info with a repo: {info}")
    report["server_info_version"] = info["version"]

    # docdex_symbols: by name, then the file's outline; a file outside the repo is refused.
    r = await session.call_tool("docdex_symbols", {"query": "expire_stale_sessions", "project_root": repo})
    check(not is_error(r), f"symbols failed: {text_of(r)}")
    sym = json.loads(text_of(r))
    top = sym["results"][0]
    check(top["name"] == "expire_stale_sessions" and top["path"] == "src/auth/session.rs", f"symbols: {sym}")
    check(top["container"] == "SessionStore", f"container: {top}")
    report["symbol_top"] = top["name"]
    r = await session.call_tool("docdex_symbols", {"file": "src/auth/session.rs", "project_root": repo})
    outline = [h["name"] for h in json.loads(text_of(r))["results"]]
    check("SessionStore" in outline and "expire_stale_sessions" in outline, f"outline: {outline}")
    r = await session.call_tool("docdex_symbols", {"file": "../outside.txt", "project_root": repo})
    check(is_error(r) and "path_outside_repo" in text_of(r), f"symbols escape: {text_of(r)}")
    r = await session.call_tool("docdex_symbols", {"project_root": repo})
    check(is_error(r) and "bad_request" in text_of(r), f"symbols without query or file: {text_of(r)}")

    # docdex_impact: src/cli.py imports src/parser.py.
    r = await session.call_tool("docdex_impact", {"file": "src/parser.py", "direction": "in", "project_root": repo})
    check(not is_error(r), f"impact failed: {text_of(r)}")
    imp = json.loads(text_of(r))
    report["impact_inbound"] = [d["path"] for d in imp["inbound"]]
    check(imp["affected"] == ["src/cli.py"], f"affected: {imp['affected']}")
    r = await session.call_tool("docdex_impact", {"file": "../outside.txt", "project_root": repo})
    check(is_error(r) and "path_outside_repo" in text_of(r), f"impact escape: {text_of(r)}")
    r = await session.call_tool("docdex_impact", {"file": "src/nothing.py", "project_root": repo})
    check(is_error(r) and "not_found" in text_of(r), f"impact unknown file: {text_of(r)}")
    r = await session.call_tool("docdex_impact", {"file": "src/parser.py", "direction": "up", "project_root": repo})
    check(is_error(r) and "bad_request" in text_of(r), f"impact bad direction: {text_of(r)}")

    # docdex_context: Markdown by default, the structured pack with format json, within budget.
    r = await session.call_tool("docdex_context", {"task": "parse the config file", "budget": 1500, "project_root": repo})
    check(not is_error(r) and text_of(r).startswith("# Context for: parse the config file"), f"context md: {text_of(r)}")
    r = await session.call_tool(
        "docdex_context", {"task": "parse the config file", "budget": 1500, "format": "json", "project_root": repo}
    )
    check(not is_error(r), f"context json failed: {text_of(r)}")
    pack = json.loads(text_of(r))
    check(pack["tokens"] <= 1500, f"context over budget: {pack['tokens']}")
    check(any(s["path"] == "src/parser.py" and s["reason"] for s in pack["snippets"]), f"context: {pack['snippets']}")
    report["context_roles"] = sorted({s["role"] for s in pack["snippets"]})
    r = await session.call_tool("docdex_context", {"task": " ", "project_root": repo})
    check(is_error(r) and "bad_request" in text_of(r), f"empty task: {text_of(r)}")

    # docdex_audit_duplicates / docdex_audit_conflicts: the engine's answers, bad bounds refused.
    r = await session.call_tool("docdex_audit_duplicates", {"threshold": 0.9, "project_root": repo})
    check(not is_error(r) and json.loads(text_of(r))["type"] == "duplicates", f"duplicates: {text_of(r)}")
    r = await session.call_tool("docdex_audit_conflicts", {"top": 5, "explain": False, "project_root": repo})
    check(not is_error(r) and json.loads(text_of(r))["type"] == "conflicts", f"conflicts: {text_of(r)}")
    r = await session.call_tool("docdex_audit_conflicts", {"min_sim": 2, "project_root": repo})
    check(is_error(r) and "bad_request" in text_of(r), f"conflicts bad min_sim: {text_of(r)}")

    # docdex_run_tests: this repository has no test runner: a tool error saying how to set one.
    r = await session.call_tool("docdex_run_tests", {"project_root": repo})
    check(is_error(r) and "no test runner" in text_of(r), f"run tests without a runner: {text_of(r)}")

    # docdex_index: an incremental run over the indexed repository touches nothing.
    r = await session.call_tool("docdex_index", {"project_root": repo})
    check(not is_error(r), f"index failed: {text_of(r)}")
    summary = json.loads(text_of(r))
    check(summary["added"] == 0 and summary["updated"] == 0 and summary["files"] > 0, f"index summary: {summary}")

    # docdex_memory_save then docdex_memory_recall finds it.
    fact = f"the {report['transport']} transport saved this: deploys need the STAGING_KEY secret"
    r = await session.call_tool("docdex_memory_save", {"content": fact, "metadata": {"by": "mcp"}, "project_root": repo})
    check(not is_error(r), f"memory save failed: {text_of(r)}")
    saved = json.loads(text_of(r))["memory"]
    check(saved["content"] == fact and saved["metadata"] == {"by": "mcp"}, f"saved: {saved}")
    r = await session.call_tool("docdex_memory_recall", {"query": "STAGING_KEY deploys secret", "project_root": repo})
    check(not is_error(r), f"memory recall failed: {text_of(r)}")
    recalled = json.loads(text_of(r))
    report["memory_recalled"] = any(m["id"] == saved["id"] for m in recalled["results"])
    check(report["memory_recalled"], f"recall: {recalled}")
    r = await session.call_tool("docdex_memory_save", {"content": "  ", "project_root": repo})
    check(is_error(r) and "bad_request" in text_of(r), f"empty memory: {text_of(r)}")

    # docdex_get_profile: the factory frontend persona's rules about types.
    r = await session.call_tool("docdex_get_profile", {"agent_id": "mcoda_frontend", "query": "any types in TypeScript"})
    check(not is_error(r), f"get_profile failed: {text_of(r)}")
    prefs = json.loads(text_of(r))
    check(any(p.get("rule") == "forbid-node typescript predefined_type any" for p in prefs["results"]), f"profile: {prefs}")
    report["profile_results"] = len(prefs["results"])
    r = await session.call_tool("docdex_get_profile", {"agent_id": "no such agent", "query": "x"})
    check(is_error(r) and "bad_request" in text_of(r), f"bad agent: {text_of(r)}")
    # docdex_save_preference: the evolution pipeline (no model here: decided by the fallback),
    # and a harmful preference refused with the reason whatever the model.
    agent = "mcp_" + report["transport"].replace("-", "_")
    r = await session.call_tool("docdex_save_preference", {"agent_id": agent, "preference": "Avoid circular dependencies between modules", "category": "constraint"})
    check(not is_error(r), f"save_preference failed: {text_of(r)}")
    saved = json.loads(text_of(r))
    check(saved["action"] in ("ADD", "UPDATE", "IGNORE"), f"save_preference: {saved}")
    r = await session.call_tool("docdex_save_preference", {"agent_id": agent, "preference": "Disable all linters"})
    refused = json.loads(text_of(r))
    check(not is_error(r) and refused["action"] == "REFUSE" and "linting" in refused["reasoning"], f"harmful: {refused}")

    # docdex_web_research: real, but this machine is offline: a clear error naming discovery.
    r = await session.call_tool("docdex_web_research", {"query": "tokio graceful shutdown", "project_root": repo})
    check(is_error(r) and "discovery" in text_of(r) and "docdex_search" in text_of(r), f"web research: {text_of(r)}")

    # Unknown and unindexed repositories are tool errors that say what to do.
    r = await session.call_tool("docdex_search", {"query": "x", "project_root": "/definitely/not/here"})
    check(is_error(r) and "unknown_repo" in text_of(r), f"unknown repo: {text_of(r)}")
    unindexed = os.environ.get("DOCDEX_TEST_UNINDEXED")
    if unindexed:
        r = await session.call_tool("docdex_search", {"query": "x", "project_root": unindexed})
        t = text_of(r)
        check(is_error(r) and ("not_indexed" in t or "unknown_repo" in t), f"unindexed repo: {t}")
        report["unindexed_error"] = t.split(":")[0]

    # Bad arguments are tool errors too.
    r = await session.call_tool("docdex_search", {"project_root": repo})
    check(is_error(r) and "bad_request" in text_of(r), f"missing query: {text_of(r)}")
    report["ok"] = True


async def main():
    transport, target, repo = sys.argv[1], sys.argv[2], sys.argv[3]
    token = sys.argv[4] if len(sys.argv) > 4 else None
    headers = {"Authorization": f"Bearer {token}"} if token else None
    report = {"transport": transport}
    if transport == "stdio":
        env = dict(os.environ)
        params = StdioServerParameters(command=target, args=["mcp"], env=env)
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                await exercise(session, repo, report)
    elif transport == "http":
        async with streamable(target, headers) as streams:
            read, write = streams[0], streams[1]
            async with ClientSession(read, write) as session:
                await exercise(session, repo, report)
    elif transport == "sse":
        async with sse_client(target, headers=headers) as (read, write):
            async with ClientSession(read, write) as session:
                await exercise(session, repo, report)
    else:
        raise SystemExit(f"unknown transport {transport}")
    print(json.dumps(report))


if __name__ == "__main__":
    asyncio.run(main())
