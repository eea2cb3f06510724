// The daemon: health, metrics, MCP, the review page's login, unknown routes, reaching it (or not), the remote.

import assert from "node:assert/strict";
import path from "node:path";
import { randomUUID } from "node:crypto";
import { after, before, describe, test } from "node:test";

import * as vfsd from "../src/index.js";
import { Daemon, freePort, need, newID, s3URL } from "./daemon.js";

describe("daemon", () => {
  let d: Daemon;
  before(async () => { d = await Daemon.start(); });
  after(async () => { await d?.stop(); });

  test("health and metrics", async () => {
    const h = await d.client.health();
    assert.equal(h.status, "ok");
    assert.equal(h.private?.data_dir, d.data);
    const m = await d.client.metrics();
    assert.match(m, /vfsd_sessions_open/);
    await assert.rejects(d.tcp("").metrics(), vfsd.UnauthorizedError);
  });

  test("mcp", async () => {
    const c = d.client;
    const s = newID();
    await c.createSession({ id: s });
    const tl = await c.mcp(s, "tools/list");
    const tools = (tl.result as { tools: { name: string }[] }).tools;
    assert.ok(tools.some((t) => t.name === "read_file"));
    (await c.call(s, "write_file", { path: "m.txt", content: "over mcp\n" })).check();
    const r = await c.mcp(s, "tools/call", { name: "read_file", arguments: { path: "m.txt" } }, { requestId: 7 });
    assert.equal(r.id, 7);
    assert.equal((r.result as { structuredContent: { inline_text: string } }).structuredContent.inline_text, "over mcp\n");
    const minimal = await c.mcp(s, "tools/list", undefined, { profile: "minimal" });
    assert.ok((minimal.result as { tools: unknown[] }).tools.length < tools.length);
    await assert.rejects(c.mcp("no-such-session", "tools/list"), vfsd.NotFoundError);
    await assert.rejects(c.request("GET", `/v1/sessions/${s}/mcp`), (e: unknown) => e instanceof vfsd.MethodNotAllowedError && e.status === 405);
    await c.closeSession(s);
  });

  test("the review page's login", async () => {
    const s = newID();
    const out = await d.client.createSession({ id: s });
    try {
      const admin = await d.client.uiLogin();
      assert.match(admin.path, /^\/ui\/login\?code=/);
      assert.match(admin.host, /\.localhost$/);
      assert.equal(admin.session, undefined);
      const mine = await d.tcp(out.token).uiLogin();
      assert.equal(mine.session, s);
      assert.notEqual(mine.host, admin.host);
      await assert.rejects(d.tcp(out.token).uiLogin({ session: "someone-else" }), vfsd.ForbiddenError);
    } finally {
      await d.client.closeSession(s, { purge: true });
    }
  });

  test("unknown routes", async () => {
    await assert.rejects(d.client.request("GET", "/v1/nothing-here"), (e: unknown) => e instanceof vfsd.NotFoundError && e.message.includes("/v1"));
    await assert.rejects(d.client.request("PUT", "/v1/sessions"), vfsd.MethodNotAllowedError);
  });

  test("unreachable, fromEnv, timeouts", async () => {
    await assert.rejects(new vfsd.Client({ socket: "/nonexistent/vfsd.sock", timeoutMs: 2000 }).health(),
      (e: unknown) => e instanceof vfsd.UnreachableError && e.message.includes("/nonexistent/vfsd.sock"));
    await assert.rejects(new vfsd.Client({ addr: `127.0.0.1:${await freePort()}`, timeoutMs: 2000 }).health(), vfsd.UnreachableError);
    assert.throws(() => new vfsd.Client({}), /socket or TCP address/);
    assert.equal(vfsd.Client.fromEnv({ VFSD_ADDR: d.addr, VFSD_TOKEN: d.token }).where, `http://${d.addr}`);
    assert.ok(Array.isArray(await vfsd.Client.fromEnv({ VFSD_ADDR: d.addr, VFSD_TOKEN: d.token }).sessions()));
    assert.equal((await vfsd.Client.fromEnv({ VFSD_SOCKET: d.socket }).health()).private?.socket, d.socket);
    assert.equal(vfsd.Client.fromEnv({ XDG_RUNTIME_DIR: path.dirname(d.socket) }).where, `the socket ${d.socket}`);
    // A call that cannot finish in time: a wait on an event stream's first byte is not one, a big upload is.
    const s = newID();
    await d.client.createSession({ id: s });
    const slow = new vfsd.Client({ socket: d.socket, timeoutMs: 1 });
    await assert.rejects(slow.putBlob(Buffer.alloc(8 << 20)), vfsd.TimeoutError);
    await d.client.closeSession(s);
  });

  test("without a remote", async () => {
    const c = d.client;
    const st = await c.remoteStatus();
    assert.equal(st.url, undefined);
    assert.deepEqual(st.pending, []);
    await assert.rejects(c.remoteGC(), (e: unknown) => e instanceof vfsd.UnavailableError && e.status === 503);
    const s = newID();
    await c.createSession({ id: s });
    const snap = await c.createSnapshot(s);
    await assert.rejects(c.pushSnapshot(snap.id), vfsd.UnavailableError);
    await c.closeSession(s, { purge: true });
  });

  test("with a remote", async (t) => {
    const url = s3URL("tsclient-" + randomUUID().slice(0, 8));
    if (!need(t, url !== undefined, "an S3-compatible server (VFSD_S3_TEST_URL, as the Go tests take it)")) return;
    const r = await Daemon.start(["--remote", url!]);
    try {
      const c = r.client;
      const s = newID();
      await c.createSession({ id: s });
      (await c.call(s, "write_file", { path: "a.txt", content: "to the bucket\n" })).check();
      const snap = await c.createSnapshot(s);
      const rep = await c.pushSnapshot(snap.id);
      assert.equal(rep.snapshot, snap.id);
      assert.ok(rep.blobs >= 1);
      const st = await c.remoteStatus();
      assert.ok(st.url && st.uploaded >= 1);
      const gc = await c.remoteGC();
      assert.ok(gc.snapshots >= 1 && gc.grace_s > 0);
      await c.closeSession(s, { purge: true });
    } finally {
      await r.stop();
    }
  });
});
