#!/usr/bin/env python3
"""An orchestrator in weakincentives' style, with vfsd holding the workspace.

weakincentives' VfsToolsSection gives an agent a session-scoped virtual
filesystem, preloaded from HostMounts, that the orchestrator snapshots and
restores. Here the filesystem lives in the vfsd daemon instead of a temporary
directory: the orchestrator

1. creates a session under the ``weakincentives`` contract, the HostMounts
   given as its contract options (the daemon stages them, and replays them
   on reset, as the document says);
2. hands the contract's tools, in the model provider's format, and its
   prompt section to the model loop;
3. snapshots the session before every turn, checks the turn's outcome
   against the VirtualFileSystem (the contract's state: weakincentives'
   ``select_latest(session, VirtualFileSystem)``), and restores the
   snapshot when the turn broke a rule;
4. closes the session, which drops its snapshots ("they disappear when the
   session ends").

The model is scripted (ScriptedModel) so that the example runs anywhere;
replace ``ScriptedModel.respond`` with a call to your provider (the tool list
is Anthropic's format; pass ``--profile openai`` for OpenAI's).

    vfsd serve --allow-root ~/work &          # ~/work/docs/*.md is what the agent sees
    python3 weakincentives_orchestrator.py --docs docs/
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

import vfsd


@dataclass
class ToolUse:
    """A tool call the model asks for (Anthropic's tool_use block)."""

    id: str
    name: str
    input: Dict[str, Any]


@dataclass
class ScriptedModel:
    """Stands in for the model: each turn, the tool calls it would make.

    Turn 2 misbehaves — it deletes the mounted documentation — so that the
    orchestrator has something to undo.
    """

    turns: List[List[ToolUse]] = field(default_factory=lambda: [
        [ToolUse("t1", "list_directory", {"path": {"segments": ["docs"]}}),
         ToolUse("t2", "read_file", {"path": {"segments": ["docs", "guide.md"]}}),
         ToolUse("t3", "write_file", {"path": {"segments": ["notes", "summary.md"]},
                                      "content": "# Summary\n\nThe guide explains setup.\n"})],
        [ToolUse("t4", "delete_file", {"path": {"segments": ["docs"]}}),
         ToolUse("t5", "write_file", {"path": {"segments": ["notes", "summary.md"]},
                                      "content": "nothing to summarise\n", "mode": "overwrite"})],
        [ToolUse("t6", "write_file", {"path": {"segments": ["notes", "summary.md"]},
                                      "content": "\nReviewed: the guide is complete.\n", "mode": "append"}),
         ToolUse("t7", "read_file", {"path": {"segments": ["missing.md"]}})],
    ])

    def respond(self, system: str, tools: Any, messages: List[Dict[str, Any]]) -> List[ToolUse]:
        """The tool calls of the next turn ([] when the model is done)."""
        turn = sum(1 for m in messages if m["role"] == "assistant")
        return self.turns[turn] if turn < len(self.turns) else []


def files_of(state: Dict[str, Any]) -> Dict[str, int]:
    """The VirtualFileSystem's files: path -> version."""
    return {"/".join(f["path"]["segments"]): f["version"] for f in state["files"]}


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--docs", default="docs/", help="HostMount host_path: a folder beneath the daemon's --allow-root")
    ap.add_argument("--profile", default="anthropic", help="the provider format of the tool list")
    args = ap.parse_args(argv)

    client = vfsd.Client.from_env()  # VFSD_SOCKET, or VFSD_ADDR and VFSD_TOKEN
    # The section's HostMounts, as weakincentives declares them.
    mounts = [{"host_path": args.docs, "mount_path": {"segments": ["docs"]}, "include_glob": ["*.md"]}]
    created = client.create_session(contract="weakincentives", contract_options={"mounts": mounts}, ttl="1h",
                                    label="weakincentives orchestrator example")
    sid = created["session"]["id"]
    print(f"session {sid} ({created['session']['contract']}, policy {created['session']['policy']})")
    try:
        listing = client.tools(sid, profile=args.profile)
        system = "You keep notes on the documentation.\n\n" + listing["prompt"]
        model = ScriptedModel()
        messages: List[Dict[str, Any]] = [{"role": "user", "content": "Summarise the guide into notes/summary.md."}]
        restored = 0
        for turn in range(1, 10):
            calls = model.respond(system, listing["tools"], messages)
            if not calls:
                break
            # A checkpoint before the turn: a copy-on-write snapshot, O(changes).
            snap = client.create_snapshot(sid, label=f"before turn {turn}")
            messages.append({"role": "assistant", "content": [
                {"type": "tool_use", "id": c.id, "name": c.name, "input": c.input} for c in calls]})
            results = []
            for c in calls:
                r = client.call(sid, c.name, c.input, contract="weakincentives", text=True)
                # A ToolValidationError is a result for the model, not an exception.
                print(f"  turn {turn}: {c.name} -> {r.status}")
                results.append({"type": "tool_result", "tool_use_id": c.id, "is_error": r.is_error,
                                "content": r.text or json.dumps(r.receipt)})
            messages.append({"role": "user", "content": results})

            # Review the turn against the VirtualFileSystem: the mounted
            # documentation must survive every turn.
            state = client.contract_state(sid)
            if "docs/guide.md" not in files_of(state):
                client.restore(sid, snap["id"])
                restored += 1
                print(f"  turn {turn} deleted the documentation: restored snapshot {snap['id'][:12]}")
                messages.append({"role": "user", "content": "That turn was undone: keep docs/ intact."})

        final = files_of(client.contract_state(sid))
        print("final files:", json.dumps(final, sort_keys=True))
        summary = client.call(sid, "read_file", {"path": {"segments": ["notes", "summary.md"]}}).check()
        print("notes/summary.md:", json.dumps(summary.receipt["content"]))
        print(f"turns undone: {restored}; calls journaled: {client.session(sid).get('calls', 0)}")
        ok = restored == 1 and "docs/guide.md" in final and "complete" in summary.receipt["content"]
        return 0 if ok else 1
    finally:
        # weakincentives' snapshots "disappear when the session ends": the
        # contract purges them on close.
        client.close_session(sid)


if __name__ == "__main__":
    sys.exit(main())
