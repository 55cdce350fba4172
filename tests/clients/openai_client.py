"""Drives docdex's OpenAI-compatible chat endpoint with the official `openai` client.

Usage: openai_client.py BASE_URL REPO [TOKEN]   (BASE_URL like http://127.0.0.1:3210/v1)

Runs one non-streaming and one streaming completion naming the repository through the
`x-docdex-repo` header, checks the OpenAI shapes, the `docdex` extension field (session,
sources, waterfall trace), that the stream ends, that a second turn continues the session
(`docdex.session_id` in `extra_body`), and that errors surface as the client's own
exceptions. Prints one JSON line; exits non-zero on any failed check. Used by the Rust test
`mcp_clients::openai_client_chat_completions`.
"""
import json
import os
import sys

import openai
from openai import OpenAI


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def main():
    base, repo = sys.argv[1], sys.argv[2]
    token = sys.argv[3] if len(sys.argv) > 3 else "unused"
    client = OpenAI(
        base_url=base,
        api_key=token,
        default_headers={"x-docdex-repo": repo, "x-docdex-agent-id": "openai-py"},
        max_retries=0,
    )
    question = "where are stale sessions expired?"
    messages = [{"role": "user", "content": question}]

    models = [m.id for m in client.models.list()]
    check(models[0] == "docdex" and "fake-chat:latest" in models, f"models: {models}")

    full = client.chat.completions.create(model="fake-chat", messages=messages)
    text = full.choices[0].message.content or ""
    check(full.object == "chat.completion", full)
    check(text.startswith(f'FAKE ANSWER to "{question}"'), text)
    check("src/auth/session.rs" in text, f"the retrieved source reached the model: {text}")
    check(full.choices[0].finish_reason == "stop", full.choices[0].finish_reason)
    check(full.usage is not None and full.usage.prompt_tokens > 0, full.usage)
    ext = (full.model_extra or {}).get("docdex")
    check(ext is not None, "the waterfall trace is in the `docdex` extension field")
    steps = [s["name"] for s in ext["trace"]["steps"]]
    check("code_index" in steps and "gate" in steps, f"trace steps: {steps}")
    check(ext["trace"]["agent_id"] == "openai-py", ext["trace"].get("agent_id"))
    check(any(s.get("path") == "src/auth/session.rs" for s in ext["sources"]), ext["sources"])
    check(os.path.realpath(ext["repo"]) == os.path.realpath(repo), ext["repo"])
    session = ext["session_id"]

    pieces = []
    finish = None
    final_ext = None
    chunks = 0
    stream = client.chat.completions.create(
        model="fake-chat",
        messages=messages,
        stream=True,
        extra_body={"docdex": {"session_id": session, "force_web": True}},
    )
    for chunk in stream:
        chunks += 1
        check(chunk.object == "chat.completion.chunk", chunk)
        if chunk.choices:
            pieces.append(chunk.choices[0].delta.content or "")
            finish = chunk.choices[0].finish_reason or finish
        extra = (chunk.model_extra or {}).get("docdex")
        if extra is not None:
            final_ext = extra
    streamed = "".join(pieces)
    check(chunks >= 3, f"streamed in pieces: {chunks} chunks")
    check(streamed.startswith(f'FAKE ANSWER to "{question}"'), streamed)
    check(finish == "stop", finish)
    check(final_ext is not None, "the final chunk carries the `docdex` extension")
    check(final_ext["session_id"] == session and final_ext["turn"] == 2, "the second turn continued the session")
    check(final_ext["trace"]["gate"]["web_policy"] == "force", final_ext["trace"]["gate"])

    # Errors are the client's exceptions, with the contract's code in the body.
    try:
        client.chat.completions.create(model="fake-chat", messages=[{"role": "assistant", "content": "hi"}])
        raise AssertionError("a conversation without a user message was accepted")
    except openai.BadRequestError as e:
        check(e.status_code == 400 and e.body["code"] == "bad_request", e.body)
    try:
        client.chat.completions.create(model="no-such-model", messages=messages, stream=True)
        raise AssertionError("a missing model was accepted")
    except openai.NotFoundError as e:
        check(e.status_code == 404 and e.body["code"] == "model_not_found", e.body)
        check(e.code == "model_not_found" and e.param == "model" and e.type == "invalid_request_error", e.body)

    # Sampling fields reach the model (the Rust side checks Ollama's options); a tool call
    # forced by tool_choice is refused, since docdex calls no tools.
    tuned = client.chat.completions.create(
        model="fake-chat", messages=messages, top_p=0.5, presence_penalty=1.0, frequency_penalty=0.5
    )
    check(tuned.choices[0].finish_reason == "stop", tuned)
    weather = {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}
    try:
        client.chat.completions.create(model="fake-chat", messages=messages, tools=[weather], tool_choice="required")
        raise AssertionError("a forced tool call was answered with plain text")
    except openai.BadRequestError as e:
        check(e.status_code == 400 and "calls no tools" in e.body["message"], e.body)
    print(json.dumps({"ok": True, "answer": text, "streamed": streamed, "session": session, "chunks": chunks}))


if __name__ == "__main__":
    main()
