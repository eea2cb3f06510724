// Sessions: create (empty, from folders with globs, with progress), list, get, update, fork, reset, close; tokens.

import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import path from "node:path";
import { after, before, describe, test } from "node:test";

import * as vfsd from "../src/index.js";
import { Daemon, newID } from "./daemon.js";

describe("sessions", () => {
  let d: Daemon;
  before(async () => { d = await Daemon.start(); });
  after(async () => { await d?.stop(); });

  test("create empty, get, list, update, close", async () => {
    const c = d.client;
    const id = newID();
    const out = await c.createSession({ id, profile: "openai", ttl: "1h", label: "an empty one" });
    assert.equal(out.session.id, id);
    assert.equal(out.session.profile, "openai");
    assert.equal(out.session.contract, "vfsd");
    assert.equal(out.session.label, "an empty one");
    assert.match(out.token, /^vfsd_sess_/);
    assert.equal(out.import, undefined);
    assert.equal((await c.session(id)).uid, out.session.uid);
    assert.ok((await c.sessions()).some((s) => s.id === id));
    assert.ok((await c.session(id)).expires_at);
    assert.equal((await c.updateSession(id, "never")).expires_at, undefined);
    await c.closeSession(id);
    await assert.rejects(c.session(id), (e: unknown) =>
      e instanceof vfsd.NotFoundError && e.code === "not_found" && e.status === 404 && e.message.includes(id));
  });

  test("create from a folder with globs, with progress", async () => {
    const c = d.client;
    const id = newID();
    const tree = d.hostTree();
    const seen: vfsd.Progress[] = [];
    const out = await c.createSession({
      id, mounts: [vfsd.folder(tree, "/app", { include: ["**/*.ts", "*.md"], exclude: ["src/util.ts"] })],
      progress: (p) => seen.push(p),
    });
    try {
      assert.equal(out.session.reset_restages, true);
      assert.equal(out.import?.files, 2);
      assert.equal(out.import?.mounts[0]?.mount_path, "/app");
      assert.ok(seen.length > 0 && seen.every((p) => p.phase === "scan" || p.phase === "import"));
      const g = await c.call(id, "glob", { pattern: "**" });
      assert.deepEqual([...(g.receipt.paths ?? [])].sort(), ["app/README.md", "app/src/main.ts"]);
    } finally {
      await c.closeSession(id, { purge: true });
    }
  });

  test("errors carry the stable code", async () => {
    const c = d.client;
    const id = newID();
    await c.createSession({ id });
    try {
      await assert.rejects(c.createSession({ id }), (e: unknown) => e instanceof vfsd.AlreadyExistsError && e.status === 409);
      await assert.rejects(c.createSession({ ttl: "soon" }), vfsd.InvalidInputError);
      await assert.rejects(c.createSession({ mounts: [vfsd.folder("/etc")] }), (e: unknown) => e instanceof vfsd.APIError && e.code === "forbidden");
      await assert.rejects(c.createSession({ mounts: [vfsd.folder(d.host, undefined, { include: ["[unclosed"] })] }), vfsd.InvalidPatternError);
      await assert.rejects(c.createSession({ base: "ffffffff" }), vfsd.NotFoundError);
      await assert.rejects(c.createSession({ policy: { base: "default", read_rots: ["src"] } as vfsd.Policy }),
        (e: unknown) => e instanceof vfsd.InvalidInputError && e.message.includes("read_rots"));
    } finally {
      await c.closeSession(id, { purge: true });
    }
  });

  test("policy object and quota", async () => {
    const c = d.client;
    const id = newID();
    const out = await c.createSession({ id, policy: { base: "default", name: "src-only", write_roots: ["src"] }, quota: { max_files: 50 } });
    try {
      assert.equal(out.session.policy, "src-only");
      assert.deepEqual((out.session.effective_policy as vfsd.Policy).write_roots, ["src"]);
      assert.equal(out.session.quota?.max_files, 50);
      const r = await c.call(id, "write_file", { path: "elsewhere.txt", content: "x" });
      assert.equal(r.ok, false);
      assert.equal(r.status, "forbidden");
      assert.ok((await c.call(id, "write_file", { path: "src/in.txt", content: "x" })).ok);
    } finally {
      await c.closeSession(id, { purge: true });
    }
  });

  test("fork and reset", async () => {
    const c = d.client;
    const id = newID();
    const tree = d.hostTree();
    await c.createSession({ id, mounts: [vfsd.folder(tree, "/")] });
    const forkID = id + "-f";
    try {
      (await c.call(id, "write_file", { path: "new.txt", content: "mine\n" })).check();
      const fork = await c.forkSession(id, { id: forkID, label: "try something" });
      assert.equal(fork.session.fork_of, id);
      assert.equal((await c.call(forkID, "read_file", { path: "new.txt" })).receipt.inline_text, "mine\n");
      writeFileSync(path.join(tree, "README.md"), "# App, changed\n");
      const seen: vfsd.Progress[] = [];
      const reset = await c.resetSession(id, { progress: (p) => seen.push(p) });
      assert.ok(reset.import && seen.length > 0);
      assert.equal((await c.call(id, "exists", { path: "new.txt" })).receipt.exists, false);
      assert.equal((await c.call(id, "read_file", { path: "README.md" })).receipt.inline_text, "# App, changed\n");
      assert.equal((await c.resetSession(id)).session.id, id);
    } finally {
      await c.closeSession(forkID, { purge: true });
      await c.closeSession(id, { purge: true });
    }
  });

  test("session tokens: their own session, forks within the budget, nothing else", async () => {
    const id = newID();
    const other = id + "-o";
    const out = await d.client.createSession({ id, policy: { base: "default", caps: { max_forks: 1 } } });
    await d.client.createSession({ id: other });
    try {
      const me = d.tcp(out.token);
      assert.equal((await me.session(id)).id, id);
      await assert.rejects(me.session(other), (e: unknown) => e instanceof vfsd.ForbiddenError && e.status === 403);
      await assert.rejects(me.sessions(), vfsd.ForbiddenError);
      await assert.rejects(me.apply(id), vfsd.ForbiddenError);
      await assert.rejects(me.forkSession(id, { id: "mine" }), vfsd.ForbiddenError);
      const fork = await me.forkSession(id);
      await assert.rejects(me.forkSession(id), (e: unknown) => e instanceof vfsd.LimitExceededError && e.code === "limit_exceeded");
      await d.client.closeSession(fork.session.id);

      const anonymous = d.tcp("");
      assert.equal((await anonymous.health()).status, "ok");
      assert.equal((await anonymous.health()).private, undefined);
      await assert.rejects(anonymous.session(id), (e: unknown) => e instanceof vfsd.UnauthorizedError && e.status === 401);
      await assert.rejects(d.tcp("vfsd_sess_forged").session(id), vfsd.UnauthorizedError);
      assert.ok((await d.tcp().health()).private);
      assert.equal((await d.tcp().withToken(out.token).session(id)).id, id);
      assert.ok(Array.isArray(await d.client.withToken("ignored").sessions())); // the socket is the admin
    } finally {
      await d.client.closeSession(id, { purge: true });
      await d.client.closeSession(other, { purge: true });
    }
  });

  test("contract state", async () => {
    const c = d.client;
    const id = newID();
    await c.createSession({ id });
    const w = id + "-wi";
    await c.createSession({ id: w, contract: "weakincentives" });
    try {
      await assert.rejects(c.contractState(id), vfsd.NotFoundError);
      (await c.call(w, "write_file", { path: { segments: ["a.md"] }, content: "a" })).check();
      const st = (await c.contractState(w)) as vfsd.WeakincentivesState;
      assert.deepEqual(st.files.map((f) => f.path.segments), [["a.md"]]);
    } finally {
      await c.closeSession(id, { purge: true });
      await c.closeSession(w);
    }
  });
});
