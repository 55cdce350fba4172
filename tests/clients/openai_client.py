"""Drives docdex's OpenAI-compatible chat endpoint with the official `openai` client.

Usage: openai_client.py BASE_URL REPO [TOKEN]   (BASE_URL like http://127.0.0.1:3210/v1)

Runs one non-streaming and one streaming completion naming the repository through the
`x-docdex-repo` header, checks the OpenAI shapes (and that the stream ends), and prints
one JSON line. Exits non-zero on any failed check. Used by the Rust test
`mcp_clients::openai_client_chat_completions` once the waterfall chat serves the endpoint.
"""
import json
import sys

from openai import OpenAI


def main():
    base, repo = sys.argv[1], sys.argv[2]
    token = sys.argv[3] if len(sys.argv) > 3 else "unused"
    client = OpenAI(base_url=base, api_key=token, default_headers={"x-docdex-repo": repo})
    messages = [{"role": "user", "content": "where are stale sessions expired?"}]

    full = client.chat.completions.create(model="fake-chat", messages=messages)
    text = full.choices[0].message.content or ""
    assert full.object == "chat.completion", full
    assert text.startswith("FAKE ANSWER"), text
    trace = (full.model_extra or {}).get("docdex")
    assert trace is not None, "the waterfall trace is in the `docdex` extension field"

    pieces = []
    finish = None
    for chunk in client.chat.completions.create(model="fake-chat", messages=messages, stream=True):
        assert chunk.object == "chat.completion.chunk", chunk
        if chunk.choices:
            pieces.append(chunk.choices[0].delta.content or "")
            finish = chunk.choices[0].finish_reason or finish
    streamed = "".join(pieces)
    assert streamed.startswith("FAKE ANSWER"), streamed
    assert finish == "stop", finish
    print(json.dumps({"ok": True, "answer": text, "streamed": streamed}))


if __name__ == "__main__":
    main()
