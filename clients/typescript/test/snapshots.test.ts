// Snapshots: create (with progress), list, get, restore, fork, delete; diffs; garbage collection; quota.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import * as vfsd from "../src/index.js";
import { Daemon, newID } from "./daemon.js";

describe("snapshots", () => {
  let d: Daemon;
  before(async () => { d = await Daemon.start(); });
  after(async () => { await d?.stop(); });

  test("snapshot, restore, fork, delete", async () => {
    const c = d.client;
    const s = newID();
    await c.createSession({ id: s });
    (await c.call(s, "write_file", { path: "a.txt", content: "before\n" })).check();
    const seen: vfsd.Progress[] = [];
    const snap = await c.createSnapshot(s, { label: "before", progress: (p) => seen.push(p) });
    assert.equal(snap.label, "before");
    assert.equal(snap.session, s);
    assert.equal(snap.id.length, 64);
    assert.ok(seen.every((p) => p.phase === "seal"));
    (await c.call(s, "write_file", { path: "a.txt", content: "after\n" })).check();

    assert.deepEqual((await c.sessionSnapshots(s)).map((x) => x.id), [snap.id]);
    assert.ok((await c.snapshots({ session: s })).some((x) => x.id === snap.id));
    assert.ok((await c.snapshots()).some((x) => x.id === snap.id));
    assert.equal((await c.snapshot(snap.id.slice(0, 12))).id, snap.id);

    assert.equal((await c.restore(s, snap.id.slice(0, 8))).last_snapshot, snap.id);
    assert.equal((await c.call(s, "read_file", { path: "a.txt" })).receipt.inline_text, "before\n");

    const fork = await c.forkSnapshot(snap.id, { ttl: "10m" });
    try {
      assert.equal(fork.session.base, snap.id);
      await assert.rejects(c.deleteSnapshot(snap.id), vfsd.ConflictError);
    } finally {
      await c.closeSession(fork.session.id, { purge: true });
    }
    const other = await c.createSnapshot(s, { label: "second" });
    assert.deepEqual((await c.deleteSnapshot(other.id, { session: s })).deleted, [other.id]);
    await assert.rejects(c.snapshot(other.id), vfsd.NotFoundError);
    await c.closeSession(s, { purge: true });
  });

  test("diffs", async () => {
    const c = d.client;
    const s = newID();
    await c.createSession({ id: s });
    (await c.call(s, "write_file", { path: "a.txt", content: "hello\n" })).check();
    const snap = await c.createSnapshot(s);
    (await c.call(s, "edit_file", { path: "a.txt", old_string: "hello", new_string: "hi" })).check();
    (await c.call(s, "write_file", { path: "b.txt", content: "new\n" })).check();
    const df = await c.sessionDiff(s, { from: snap.id, text: true });
    assert.deepEqual([df.added, df.modified, df.deleted], [1, 1, 0]);
    const a = df.entries.find((e) => e.path === "a.txt");
    assert.equal(a?.change, "modified");
    assert.match(a?.text ?? "", /\+hi/);
    assert.equal((await c.sessionDiff(s)).added, 2);
    assert.match(await c.sessionDiffText(s, { from: snap.id }), /^diff --git a\/a.txt b\/a.txt/);
    assert.deepEqual((await c.diff(snap.id, `session:${s}`)).entries.map((e) => e.path), ["a.txt", "b.txt"]);
    assert.match(await c.diffText(snap.id, `session:${s}`), /\+new/);
    await assert.rejects(c.sessionDiff(s, { from: "nowhere-like-this" }), vfsd.NotFoundError);
    await c.closeSession(s, { purge: true });
  });

  test("gc and the snapshot quota", async () => {
    const c = d.client;
    const s = newID();
    await c.createSession({ id: s, quota: { max_snapshots: 1 } });
    await c.createSnapshot(s);
    await assert.rejects(c.createSnapshot(s), (e: unknown) => e instanceof vfsd.TooLargeError && e.status === 413);
    await c.closeSession(s, { purge: true });
    const rep = await c.gc();
    assert.ok(rep.duration_ms >= 0 && rep.deleted_bytes >= 0);
  });
});
