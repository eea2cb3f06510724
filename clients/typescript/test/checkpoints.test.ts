// The checkpoint tools through the official MCP TypeScript SDK (and the
// client's own HTTP calls): off unless the policy allows them, listed and
// usable with it, undo to a checkpoint and to before a call, bounded by the
// snapshot quota, journaled.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import { Client as MCPClient } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ErrorCode, McpError } from "@modelcontextprotocol/sdk/types.js";

import * as vfsd from "../src/index.js";
import { Daemon, newID } from "./daemon.js";

/** An MCP client session with the vfsd session `id`'s endpoint, over TCP with its token. */
async function connect(d: Daemon, id: string, token: string): Promise<MCPClient> {
  const transport = new StreamableHTTPClientTransport(new URL(`http://${d.addr}/v1/sessions/${id}/mcp`), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
  const mcp = new MCPClient({ name: "vfsd-ts-test", version: "0.1.0" });
  await mcp.connect(transport);
  return mcp;
}

type Content = { type: string; text?: string }[];

/** The structured receipt of an MCP tool result (or its first text block, parsed). */
function receipt(res: Awaited<ReturnType<MCPClient["callTool"]>>): Record<string, unknown> {
  if (res.structuredContent) return res.structuredContent as Record<string, unknown>;
  const text = (res.content as Content).find((c) => c.type === "text")?.text ?? "{}";
  return JSON.parse(text) as Record<string, unknown>;
}

describe("checkpoint tools over MCP", () => {
  let d: Daemon;
  before(async () => { d = await Daemon.start(); });
  after(async () => { await d?.stop(); });

  test("refused without the policy's consent", async () => {
    const s = newID("tsoff");
    const created = await d.client.createSession({ id: s });
    const mcp = await connect(d, s, created.token);
    try {
      const names = (await mcp.listTools()).tools.map((t) => t.name);
      assert.ok(names.includes("write_file"));
      assert.ok(!names.includes("checkpoint") && !names.includes("undo_to"), names.join(","));
      // Not registered on the session's MCP server: MCP's own answer for a
      // tool it does not offer (invalid params), as for any unknown tool.
      await assert.rejects(mcp.callTool({ name: "checkpoint", arguments: { label: "x" } }),
        (e: unknown) => e instanceof McpError && e.code === ErrorCode.InvalidParams && /unknown tool "checkpoint"/.test(e.message));
      // Over HTTP, the tool answers forbidden, saying what allows it.
      const agent = d.tcp(created.token);
      const res = await agent.call(s, "checkpoint", { label: "x" });
      assert.equal(res.errorCode, "forbidden");
      assert.match(String(res.failure?.summary_text), /checkpoints is true/);
      assert.equal((await d.client.sessionSnapshots(s)).length, 0, "no snapshot taken");
    } finally {
      await mcp.close();
      await d.client.closeSession(s, { purge: true });
    }
  });

  test("checkpoint, list, diff, undo; quota; journal", async () => {
    const s = newID("tson");
    const created = await d.client.createSession({ id: s, policy: { base: "default", checkpoints: true }, quota: { max_snapshots: 2 } });
    const mcp = await connect(d, s, created.token);
    try {
      const names = (await mcp.listTools()).tools.map((t) => t.name);
      for (const n of ["checkpoint", "list_checkpoints", "diff_since", "undo_to"]) assert.ok(names.includes(n), n);
      const desc = (await mcp.listTools()).tools.find((t) => t.name === "undo_to")?.description ?? "";
      assert.ok(desc.length > 80, "a description written for a model");

      const call = async (name: string, args: Record<string, unknown>) => {
        const res = await mcp.callTool({ name, arguments: args });
        assert.notEqual(res.isError, true, `${name}: ${JSON.stringify(res.content)}`);
        return receipt(res);
      };
      await call("write_file", { path: "a.txt", content: "one\n" });
      const cp = (await call("checkpoint", { label: "a.txt written" })).checkpoint as { id: string };
      await call("write_file", { path: "a.txt", content: "broken\n" });
      await call("write_file", { path: "b.txt", content: "b\n" });

      const list = (await call("list_checkpoints", {})).checkpoints as { label: string }[];
      assert.deepEqual(list.map((c) => c.label), ["a.txt written"]);
      const diff = await call("diff_since", { checkpoint: cp.id.slice(0, 12) });
      assert.deepEqual([diff.added, diff.modified], [1, 1]);
      assert.match(String(diff.diff), /\+broken/);

      const undo = await call("undo_to", { checkpoint: cp.id.slice(0, 12) });
      assert.match(String(undo.summary_text), /back at checkpoint/);
      assert.equal((await call("read_file", { path: "a.txt" })).inline_text, "one\n");
      assert.equal((await call("exists", { path: "b.txt" })).exists, false);

      // Undo to before a call.
      await call("write_file", { path: "c.txt", content: "c\n" });
      const calls = (await d.client.calls(s, { limit: 1000 })).calls;
      const last = calls[calls.length - 1];
      assert.equal(last.tool, "write_file");
      await call("undo_to", { before_call: last.n });
      assert.equal((await call("exists", { path: "c.txt" })).exists, false);

      // An operator's snapshot is no checkpoint; the quota (2: the
      // checkpoint and the operator's) holds.
      const snap = await d.client.createSnapshot(s, { label: "operator's" });
      const notCp = await mcp.callTool({ name: "undo_to", arguments: { checkpoint: snap.id.slice(0, 12) } });
      assert.equal(notCp.isError, true);
      assert.equal(receipt(notCp).error_code, "not_found");
      const over = await mcp.callTool({ name: "checkpoint", arguments: { label: "one more" } });
      assert.equal(over.isError, true);
      assert.equal(receipt(over).error_code, "too_large");

      // Journaled: every use in the call log, the undos in the history.
      const tools = (await d.client.calls(s, { limit: 1000 })).calls.map((c) => c.tool);
      for (const n of ["checkpoint", "list_checkpoints", "diff_since", "undo_to"]) assert.ok(tools.includes(n), n);
      const log = await d.client.logAll(s);
      assert.ok(log.entries.some((e) => e.tool === "undo_to" && e.seq > (e.seq_before ?? 0) && (e.paths ?? []).length > 0));

      // The same tools through the client's HTTP calls, with the session's token.
      const agent = d.tcp(created.token);
      const viaHTTP = await agent.call(s, "list_checkpoints", {});
      assert.equal(viaHTTP.check().receipt.checkpoints?.length, 1);
    } finally {
      await mcp.close();
      await d.client.closeSession(s, { purge: true });
    }
  });
});
