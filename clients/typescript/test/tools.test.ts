// Tools: the list in each profile, typed receipts of every vfsd tool, failures as receipts, the call log.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import * as vfsd from "../src/index.js";
import { Daemon, newID } from "./daemon.js";

describe("tools", () => {
  let d: Daemon;
  let s: string;
  before(async () => {
    d = await Daemon.start();
  });
  after(async () => { await d?.stop(); });

  const fresh = async () => {
    s = newID();
    await d.client.createSession({ id: s });
    return s;
  };

  test("tool lists", async () => {
    const c = d.client;
    await fresh();
    const tl = await c.tools(s);
    assert.equal(tl.profile, "anthropic");
    assert.equal(tl.contract, "vfsd");
    const names = (tl.tools as { name: string }[]).map((t) => t.name);
    assert.ok(names.includes("read_file") && names.every((n) => (vfsd.VFSD_TOOLS as readonly string[]).includes(n)));
    assert.equal(((await c.tools(s, { profile: "openai" })).tools as { type: string }[])[0]?.type, "function");
    await assert.rejects(c.tools(s, { profile: "nope" as vfsd.Profile }), vfsd.InvalidInputError);
  });

  test("every vfsd tool returns its receipt", async () => {
    const c = d.client;
    await fresh();
    const w = (await c.call(s, "write_file", { path: "src/a.ts", content: "function f() {\n  return 1;\n}\n" })).check();
    assert.ok(w.ok && w.status === "ok" && w.contract === "vfsd");
    assert.equal(w.receipt.created, true);
    assert.equal(w.receipt.size_bytes, 29);
    const r = await c.call(s, "read_file", { path: "src/a.ts" });
    assert.equal(r.receipt.total_lines, 3);
    assert.ok(r.receipt.inline_text?.startsWith("function f"));
    const e = await c.call(s, "edit_file", { path: "src/a.ts", old_string: "return 1", new_string: "return 2" });
    assert.equal(e.receipt.replacements, 1);
    assert.match(e.receipt.diff, /\+  return 2;/);
    const g = await c.call(s, "grep", { pattern: "return", path: "src" });
    assert.equal(g.receipt.matches?.[0]?.line, 2);
    assert.deepEqual((await c.call(s, "glob", { pattern: "**/*.ts" })).receipt.paths, ["src/a.ts"]);
    assert.deepEqual((await c.call(s, "list_directory", { path: "src" })).receipt.entries?.map((x) => x.path), ["src/a.ts"]);
    assert.equal((await c.call(s, "stat", { path: "src/a.ts" })).receipt.kind, "file");
    assert.equal((await c.call(s, "exists", { path: "src/a.ts" })).receipt.exists, true);
    assert.equal((await c.call(s, "mkdir", { path: "docs/x" })).receipt.created, true);
    const mv = await c.call(s, "rename", { from: "src/a.ts", to: "src/b.ts" });
    assert.equal(mv.receipt.to, "src/b.ts");
    const p = await c.call(s, "apply_patch", { patch: "*** Begin Patch\n*** Add File: docs/x/n.md\n+note\n*** End Patch\n" });
    assert.equal(p.receipt.ops.add, 1);
    const del = await c.call(s, "delete_file", { path: "docs", recursive: true });
    assert.equal(del.receipt.removed, 3);
  });

  test("a refusal is a receipt", async () => {
    const c = d.client;
    await fresh();
    const r = await c.call(s, "read_file", { path: "missing.txt" });
    assert.equal(r.ok, false);
    assert.equal(r.status, "not_found");
    assert.equal(r.errorCode, "not_found");
    assert.match(r.failure?.summary_text ?? "", /does not exist/);
    assert.throws(() => r.check(), (e: unknown) => e instanceof vfsd.ToolError && e.code === "not_found" && e.tool === "read_file");
    assert.equal((await c.call(s, "no_such_tool", {})).errorCode, "unknown_tool");
  });

  test("text and contract", async () => {
    const c = d.client;
    await fresh();
    (await c.call(s, "write_file", { path: "t.txt", content: "one\ntwo\n" })).check();
    const r = await c.call(s, "read_file", { path: "t.txt" }, { text: true });
    assert.match(r.text ?? "", /two/);
    assert.equal(r.receipt.inline_text, "one\ntwo\n");
    assert.ok((await c.call(s, "exists", { path: "t.txt" }, { contract: "vfsd" })).ok);
    await assert.rejects(c.call(s, "exists", { path: "t.txt" }, { contract: "x07" }), (e: unknown) => e instanceof vfsd.InvalidInputError && e.message.includes("x07"));
  });

  test("the call log pages", async () => {
    const c = d.client;
    await fresh();
    for (let i = 0; i < 5; i++) (await c.call(s, "write_file", { path: `f${i}.txt`, content: String(i) })).check();
    const page = await c.calls(s, { limit: 2 });
    assert.deepEqual(page.calls.map((x) => x.n), [1, 2]);
    assert.equal(page.next, 2);
    const rest = await c.calls(s, { since: page.next });
    assert.deepEqual(rest.calls.map((x) => x.n), [3, 4, 5]);
    assert.equal(rest.next, undefined);
    assert.equal(rest.calls[0]?.tool, "write_file");
    assert.equal(rest.calls[0]?.transport, "http");
  });
});
