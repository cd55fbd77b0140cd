#!/usr/bin/env python3
"""An agent loop with a scripted model, in Python: the twin of examples/c/agent_loop.c.

The harness gives the "model" the workspace's tools and instructions, then runs each tool
call the model makes and prints the call and its result. The model is a file of tool calls
(examples/scripted_session.txt: a tool name, a space, the arguments as JSON, one call per
line), so it runs anywhere without an API key, and it prints exactly the transcript the C
harness prints for the same file:

    agent_loop.py [SCRIPT] [CONFIG_JSON]

CONFIG_JSON defaults to $AGENTSBX_CONFIG, then {"backend":"ns"}.

A real model instead of the script (not used by the tests):

    OPENAI_BASE_URL=https://api.openai.com/v1 OPENAI_API_KEY=... [OPENAI_MODEL=gpt-4o-mini] \\
        agent_loop.py --openai ["TASK"] [CONFIG_JSON]

drives an OpenAI-compatible /chat/completions endpoint with the workspace's tools in the
function-calling format, printing the same kind of transcript until the model stops calling
tools (or MAX_TURNS replies).
"""

from __future__ import annotations

import json
import os
import sys
import urllib.request
from pathlib import Path
from typing import Any, BinaryIO, Optional

REPO = Path(__file__).resolve().parents[2]
try:
    import agentsbx
except ImportError:  # run from a checkout without installing the binding
    sys.path.append(str(REPO / "bindings" / "python"))
    import agentsbx

SESSION = "demo"
DEFAULT_CONFIG = '{"backend":"ns"}'
DEFAULT_SCRIPT = REPO / "examples" / "scripted_session.txt"
DEFAULT_TASK = ("Write a shell script project/greet.sh that greets its first argument, "
                "run it with the argument 'sandbox', and tell me what it printed.")
MAX_TURNS = 20


class Transcript:
    """Runs tool calls and prints each as the C harness does:
    ">>> NAME ARGS", "<<< ok|error", the output, a blank line."""

    def __init__(self, ws: agentsbx.Workspace, out: BinaryIO) -> None:
        self.ws, self.out = ws, out
        self.calls = self.errors = 0

    def call(self, name: str, args: str) -> Optional[dict[str, Any]]:
        """The result, or None when the library itself failed (reported on stderr)."""
        self.calls += 1
        self.write(f">>> {name} {args}\n")
        try:
            result = self.ws.tool_call(name, args, session_id=SESSION)
        except agentsbx.AgentSbxError as e:
            print(f"agent_loop: {name}: {e.message}", file=sys.stderr)
            return None
        self.errors += not result["ok"]
        # The C harness prints the output with printf("%s"), which stops at a NUL byte.
        output = result["output"].split("\0", 1)[0]
        newline = "\n" if output and not output.endswith("\n") else ""
        self.write(f"<<< {'ok' if result['ok'] else 'error'}\n{output}{newline}\n")
        return result

    def summary(self) -> None:
        self.write(f"session: {self.calls} tool calls, {self.errors} errors\n")

    def write(self, text: str) -> None:
        # Bytes, so the transcript is the same whatever the locale's encoding.
        self.out.write(text.encode("utf-8", "surrogateescape"))
        self.out.flush()


def script_calls(path: str) -> list[tuple[str, str]]:
    """(name, args) per line of the script; blank lines and # comments skipped. The args are
    kept verbatim (the transcript shows them as written)."""
    calls = []
    with open(path, encoding="utf-8", errors="surrogateescape", newline="") as f:
        for line in f:
            line = line.rstrip("\n") if line.endswith("\n") else line
            if not line or line.startswith("#"):
                continue
            name, _, args = line.partition(" ")
            calls.append((name, args if " " in line else "{}"))
    return calls


def run_script(transcript: Transcript, calls: list[tuple[str, str]]) -> int:
    for name, args in calls:
        if transcript.call(name, args) is None:
            return 1
    return 0


def chat(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
    """One /chat/completions request; the assistant's message."""
    request = urllib.request.Request(
        os.environ["OPENAI_BASE_URL"].rstrip("/") + "/chat/completions",
        data=json.dumps({"model": os.environ.get("OPENAI_MODEL", "gpt-4o-mini"),
                         "messages": messages, "tools": tools}).encode(),
        headers={"Content-Type": "application/json",
                 "Authorization": f"Bearer {os.environ['OPENAI_API_KEY']}"})
    with urllib.request.urlopen(request, timeout=300) as response:
        return json.load(response)["choices"][0]["message"]  # type: ignore[no-any-return]


def openai_tools(ws: agentsbx.Workspace) -> list[dict[str, Any]]:
    """The workspace's tools in the OpenAI function-calling format."""
    return [{"type": "function",
             "function": {"name": t["name"], "description": t["description"],
                          "parameters": t["input_schema"]}}
            for t in ws.tools()]


def run_model(transcript: Transcript, task: str) -> int:
    """The loop a real harness runs: the model asks for tools until it answers in text."""
    tools = openai_tools(transcript.ws)
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": transcript.ws.instructions()},
        {"role": "user", "content": task}]
    for _ in range(MAX_TURNS):
        reply = chat(messages, tools)
        messages.append(reply)
        if not reply.get("tool_calls"):
            transcript.write(f"{reply.get('content') or ''}\n\n")
            return 0
        for call in reply["tool_calls"]:
            result = transcript.call(call["function"]["name"], call["function"]["arguments"])
            if result is None:
                return 1
            messages.append({"role": "tool", "tool_call_id": call["id"],
                             "content": result["output"]})
    print(f"agent_loop: the model still calls tools after {MAX_TURNS} replies", file=sys.stderr)
    return 1


def main(argv: list[str]) -> int:
    use_model = "--openai" in argv
    args = [a for a in argv[1:] if a != "--openai"]
    config = args[1] if len(args) > 1 else os.environ.get("AGENTSBX_CONFIG", DEFAULT_CONFIG)
    calls: list[tuple[str, str]] = []
    if not use_model:
        script = args[0] if args else str(DEFAULT_SCRIPT)
        try:
            calls = script_calls(script)
        except OSError as e:
            print(f"{script}: {e.strerror}", file=sys.stderr)
            return 2
    try:
        ws = agentsbx.Workspace(config)
    except agentsbx.AgentSbxError as e:
        print(f"agent_loop: {e.message}", file=sys.stderr)
        return 1
    except agentsbx.LibraryNotFoundError as e:
        print(f"agent_loop: {e}", file=sys.stderr)
        return 1
    transcript = Transcript(ws, sys.stdout.buffer)
    rc = 0
    try:
        ws.tools()  # what a real harness hands the model with its first request
    except agentsbx.AgentSbxError as e:
        print(f"agent_loop: {e.message}", file=sys.stderr)
        rc = 1
    if rc == 0:
        rc = run_model(transcript, args[0] if args else DEFAULT_TASK) if use_model \
            else run_script(transcript, calls)
    transcript.summary()
    try:
        ws.close()
    except agentsbx.AgentSbxError:
        rc = rc or 1
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv))
