// History: the log, rewind (to a call, a position, a time, a snapshot; undone), rebase.

import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import path from "node:path";
import { after, before, describe, test } from "node:test";

import * as vfsd from "../src/index.js";
import { Daemon, newID } from "./daemon.js";

describe("history", () => {
  let d: Daemon;
  before(async () => { d = await Daemon.start(); });
  after(async () => { await d?.stop(); });

  test("log and rewind", async () => {
    const c = d.client;
    const s = newID();
    await c.createSession({ id: s });
    (await c.call(s, "write_file", { path: "a.txt", content: "1\n" })).check();
    const snap = await c.createSnapshot(s, { label: "one file" });
    (await c.call(s, "write_file", { path: "b.txt", content: "2\n" })).check();
    (await c.call(s, "edit_file", { path: "a.txt", old_string: "1", new_string: "one" })).check();

    const log = await c.log(s, { patch: true });
    const calls = log.entries.filter((e) => e.kind === "call");
    assert.deepEqual(calls.map((e) => e.tool), ["write_file", "write_file", "edit_file"]);
    assert.deepEqual(calls[2]?.paths, ["a.txt"]);
    assert.match(calls[2]?.diff ?? "", /\+one/);
    assert.equal(log.seq, (await c.session(s)).seq);
    assert.deepEqual((await c.log(s, { offset: 1, limit: 1 })).entries[0], (await c.logAll(s)).entries[1]);

    const back = await c.rewind(s, { call: 3 });
    assert.equal(back.to, calls[2]?.seq_before);
    assert.equal((await c.call(s, "read_file", { path: "a.txt" })).receipt.inline_text, "1\n");
    await c.rewind(s, { seq: back.from });
    assert.equal((await c.call(s, "read_file", { path: "a.txt" })).receipt.inline_text, "one\n");
    await c.rewind(s, { snapshot: snap.id });
    assert.equal((await c.call(s, "exists", { path: "b.txt" })).receipt.exists, false);
    await c.rewind(s, { time: new Date() });
    await assert.rejects(c.rewind(s, {}), vfsd.InvalidInputError);
    await assert.rejects(c.rewind(s, { call: 999 }), vfsd.NotFoundError);
    await c.closeSession(s, { purge: true });
  });

  test("rebase", async () => {
    const c = d.client;
    const s = newID();
    const tree = d.hostTree();
    await c.createSession({ id: s, mounts: [vfsd.folder(tree, "/")] });
    try {
      (await c.call(s, "write_file", { path: "session-only.txt", content: "s\n" })).check();
      writeFileSync(path.join(tree, "host-only.txt"), "h\n");
      const dry = await c.rebase(s, { dryRun: true });
      assert.equal(dry.dry_run, true);
      assert.deepEqual(dry.taken, ["host-only.txt"]);
      assert.deepEqual(dry.kept, ["session-only.txt"]);
      const real = await c.rebase(s);
      assert.equal(real.taken_count, 1);
      assert.notEqual(real.import_snapshot, real.previous_import);
      assert.equal((await c.call(s, "read_file", { path: "host-only.txt" })).receipt.inline_text, "h\n");
    } finally {
      await c.closeSession(s, { purge: true });
    }
    const empty = newID();
    await c.createSession({ id: empty });
    await assert.rejects(c.rebase(empty), (e: unknown) => e instanceof vfsd.ConflictError && e.status === 409);
    await c.closeSession(empty);
  });
});
