// Host folders: apply (dry run, real, conflicts) and mounts.

import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from "node:fs";
import { execFileSync } from "node:child_process";
import path from "node:path";
import { after, before, describe, test } from "node:test";

import * as vfsd from "../src/index.js";
import { Daemon, need, newID } from "./daemon.js";

function onPath(cmd: string): boolean {
  try {
    execFileSync("sh", ["-c", `command -v ${cmd}`], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

describe("host", () => {
  let d: Daemon;
  before(async () => { d = await Daemon.start(); });
  after(async () => { await d?.stop(); });

  test("apply", async () => {
    const c = d.client;
    const s = newID();
    const tree = d.hostTree();
    await c.createSession({ id: s, mounts: [vfsd.folder(tree, "/")] });
    try {
      (await c.call(s, "edit_file", { path: "src/main.ts", old_string: "hello", new_string: "hi" })).check();
      (await c.call(s, "write_file", { path: "README.md", content: "# Mine\n" })).check();
      writeFileSync(path.join(tree, "README.md"), "# Theirs\n");
      const dry = await c.apply(s, { dryRun: true });
      assert.equal(dry.dry_run, true);
      assert.deepEqual(dry.applied.map((x) => x.path), ["/src/main.ts"]);
      assert.equal(readFileSync(path.join(tree, "src", "main.ts"), "utf8"), "console.log('hello');\n");
      const rep = await c.apply(s);
      assert.deepEqual(rep.applied.map((x) => x.path), ["/src/main.ts"]);
      assert.deepEqual(rep.conflicts.map((x) => x.path), ["/README.md"]);
      assert.ok(rep.import_snapshot);
      assert.equal(readFileSync(path.join(tree, "src", "main.ts"), "utf8"), "console.log('hi');\n");
      assert.equal(readFileSync(path.join(tree, "README.md"), "utf8"), "# Theirs\n");
    } finally {
      await c.closeSession(s, { purge: true });
    }
    const empty = newID();
    await c.createSession({ id: empty });
    await assert.rejects(c.apply(empty), vfsd.ConflictError);
    await c.closeSession(empty);
  });

  test("mount", async (t) => {
    if (!need(t, existsSync("/dev/fuse") && onPath("fusermount3"), "FUSE (/dev/fuse, fusermount3)")) return;
    const c = d.client;
    const s = newID();
    await c.createSession({ id: s });
    (await c.call(s, "write_file", { path: "seen.txt", content: "through the mount\n" })).check();
    const dir = mkdtempSync("/tmp/vfsd-ts-mnt-");
    try {
      const m = await c.mount(s, { dir, read_only: true });
      assert.equal(m.dir, dir);
      assert.equal(m.read_only, true);
      assert.equal((await c.session(s)).fuse_mounts?.[0]?.dir, dir);
      assert.equal(readFileSync(path.join(dir, "seen.txt"), "utf8"), "through the mount\n");
      await assert.rejects(c.mount(s, { dir }), vfsd.ConflictError);
      await c.unmount(s, dir);
      assert.deepEqual(readdirSync(dir), []);
      assert.equal((await c.session(s)).fuse_mounts, undefined);
    } finally {
      await c.unmount(s).catch(() => undefined);
      rmdirSync(dir);
      await c.closeSession(s, { purge: true });
    }
    await assert.rejects(c.mount(newID(), { dir: "relative" }), vfsd.NotFoundError);
  });
});
