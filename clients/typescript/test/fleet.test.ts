// The fleet: two daemons on one bucket — daemons, the fleet's snapshots and
// short IDs, refs, hand-off, takeover, and the FencedError.

import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, describe, test } from "node:test";

import * as vfsd from "../src/index.js";
import { Daemon, need, newID, s3URL, sleep } from "./daemon.js";

const lease = ["--lease", "2s", "--max-clock-skew", "300ms"];

/** Snapshot the session and push it: its head in the fleet. */
async function pushHead(c: vfsd.Client, id: string): Promise<vfsd.Snapshot> {
  const snap = await c.createSnapshot(id, { label: "head" });
  await c.pushSnapshot(snap.id);
  assert.equal((await c.session(id)).owner?.head, snap.id, "the push moved the session's head");
  return snap;
}

async function read(c: vfsd.Client, id: string, path: string): Promise<string> {
  return (await c.call(id, "read_file", { path })).check().receipt.inline_text ?? "";
}

describe("fleet", () => {
  const url = s3URL("tsfleet-" + randomUUID().slice(0, 8));
  let a: Daemon | undefined;
  let b: Daemon | undefined;
  before(async () => {
    if (!url) return;
    a = await Daemon.start(["--remote", url, ...lease, "--name", "ts-a"]);
    b = await Daemon.start(["--remote", url, ...lease, "--name", "ts-b"]);
  });
  after(async () => {
    try {
      await b?.stop();
    } finally {
      await a?.stop();
    }
  });

  test("daemons", async (t) => {
    if (!need(t, url !== undefined, "an S3-compatible server (VFSD_S3_TEST_URL, as the Go tests take it)")) return;
    const dl = await a!.client.daemons();
    assert.equal(dl.self, "ts-a");
    const names = new Map(dl.daemons.map((m) => [m.name, m]));
    assert.ok(names.has("ts-a") && names.has("ts-b"), [...names.keys()].join(","));
    assert.equal(names.get("ts-a")?.self, true);
    assert.ok(names.get("ts-b")?.alive);
  });

  test("the fleet's snapshots, short IDs and refs", async (t) => {
    if (!need(t, url !== undefined, "an S3-compatible server")) return;
    const ca = a!.client, cb = b!.client;
    const s = newID("tsv");
    await ca.createSession({ id: s });
    (await ca.call(s, "write_file", { path: "README", content: "from A\n" })).check();
    const snap = await pushHead(ca, s);

    const listed = await cb.snapshotList();
    assert.equal(listed.fleet_error, undefined);
    const theirs = listed.snapshots.find((x) => x.id === snap.id);
    assert.equal(theirs?.daemon, "ts-a");
    assert.equal(theirs?.remote, true);
    assert.ok(!(await cb.snapshots({ local: true })).some((x) => x.id === snap.id), "local lists B's own only");
    assert.equal((await cb.snapshot(snap.id.slice(0, 10))).id, snap.id, "B resolves A's short ID");

    const name = `ts/${s}/main`;
    const ref = await ca.setRef(name, snap.id.slice(0, 10));
    assert.deepEqual([ref.name, ref.snapshot, ref.by], [name, snap.id, "ts-a"]);
    assert.equal((await cb.ref(name)).snapshot, snap.id);
    assert.ok((await cb.refs()).refs.some((r) => r.name === name));
    await cb.createSession({ id: s + "-ref", from_ref: name });
    assert.equal(await read(cb, s + "-ref", "README"), "from A\n");

    (await ca.call(s, "write_file", { path: "README", content: "second\n" })).check();
    const snap2 = await pushHead(ca, s);
    await assert.rejects(cb.setRef(name, snap2.id, { expect: "0".repeat(64) }), vfsd.ConflictError);
    const moved = await cb.setRef(name, snap2.id, { expect: snap.id });
    assert.deepEqual([moved.snapshot, moved.seq, moved.by], [snap2.id, ref.seq + 1, "ts-b"]);
    await assert.rejects(cb.setRef(name, snap.id, { expectAbsent: true }), vfsd.ConflictError);
    assert.equal((await cb.setRef(name + "-new", snap.id, { expectAbsent: true })).snapshot, snap.id);

    // A snapshot a ref holds is kept in the bucket.
    await assert.rejects(ca.deleteSnapshot(snap.id), (e: unknown) => e instanceof vfsd.ConflictError && e.message.includes(name + "-new"));
    await cb.deleteRef(name + "-new");
    await assert.rejects(ca.ref(name + "-new"), vfsd.NotFoundError);
    await ca.deleteRef(name);
    await cb.closeSession(s + "-ref", { purge: true });
    await ca.closeSession(s);
  });

  test("a ref that follows a session's head", async (t) => {
    if (!need(t, url !== undefined, "an S3-compatible server")) return;
    const s = newID("tsk");
    const name = `ts/${s}/head`;
    await a!.client.createSession({ id: s, keep_ref: name });
    (await a!.client.call(s, "write_file", { path: "f", content: "1" })).check();
    const head = await pushHead(a!.client, s);
    assert.equal((await b!.client.ref(name)).snapshot, head.id);
    assert.equal((await a!.client.updateSession(s, { keepRef: "-" })).id, s);
    (await a!.client.call(s, "write_file", { path: "f", content: "2" })).check();
    await pushHead(a!.client, s);
    assert.equal((await b!.client.ref(name)).snapshot, head.id, "stopped following");
    assert.throws(() => a!.client.updateSession(s, {}), TypeError);
    await a!.client.closeSession(s);
  });

  test("hand-off, and the sender fenced", async (t) => {
    if (!need(t, url !== undefined, "an S3-compatible server")) return;
    const ca = a!.client, cb = b!.client;
    const s = newID("tsm");
    await ca.createSession({ id: s });
    (await ca.call(s, "write_file", { path: "f", content: "moved\n" })).check();
    await assert.rejects(ca.moveSession(s, "ts-nobody"), (e: unknown) => e instanceof vfsd.NotFoundError && e.message.includes("vfsd daemon list"));
    const rep = await ca.moveSession(s, "ts-b");
    assert.deepEqual([rep.session, rep.from, rep.to], [s, "ts-a", "ts-b"]);
    assert.ok(rep.epoch >= 2);
    assert.equal(await read(cb, s, "f"), "moved\n");
    assert.equal((await cb.session(s)).owner?.daemon, "ts-b");
    await assert.rejects(ca.call(s, "write_file", { path: "f", content: "lost?\n" }),
      (e: unknown) => e instanceof vfsd.FencedError && e.code === "fenced" && e.status === 409 && e.message.includes("ts-b"));
    await assert.rejects(ca.createSnapshot(s), vfsd.FencedError);
    assert.equal(await read(cb, s, "f"), "moved\n");
    await cb.closeSession(s);
  });

  test("takeover of a dead owner", async (t) => {
    if (!need(t, url !== undefined, "an S3-compatible server")) return;
    const s = newID("tsd");
    await assert.rejects(a!.client.takeSession("ts-never-created"), vfsd.NotFoundError);
    const c = await Daemon.start(["--remote", url!, ...lease, "--name", "ts-c"]);
    try {
      await c.client.createSession({ id: s });
      (await c.client.call(s, "write_file", { path: "f", content: "pushed before the crash\n" })).check();
      await pushHead(c.client, s);
      await assert.rejects(a!.client.takeSession(s), (e: unknown) => e instanceof vfsd.ConflictError && e.message.includes("ts-c"));
    } finally {
      await c.kill();
    }
    let taken: vfsd.Session | undefined;
    for (const end = Date.now() + 30_000; !taken; ) {
      try {
        taken = await a!.client.takeSession(s);
      } catch (e) {
        // The dead owner's lease (2 s, plus the skew) has not ended yet.
        if (!(e instanceof vfsd.ConflictError) || Date.now() > end) throw e;
        await sleep(300);
      }
    }
    assert.equal(taken.owner?.daemon, "ts-a");
    assert.ok((taken.owner?.epoch ?? 0) >= 2);
    assert.equal(await read(a!.client, s, "f"), "pushed before the crash\n");
    await a!.client.closeSession(s);
  });
});
