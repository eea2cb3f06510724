// The event stream: changes as they happen, and the end when the session closes.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import * as vfsd from "../src/index.js";
import { Daemon, newID } from "./daemon.js";

describe("events", () => {
  let d: Daemon;
  before(async () => { d = await Daemon.start(); });
  after(async () => { await d?.stop(); });

  test("changes, then closed", async () => {
    const c = d.client;
    const s = newID();
    await c.createSession({ id: s });
    const stream = await c.events(s, { timeoutMs: 20_000 });
    try {
      (await c.call(s, "write_file", { path: "a.txt", content: "x" })).check();
      const ev = await stream.next();
      assert.equal(ev?.name, "change");
      assert.equal(ev?.change?.op, "write");
      assert.deepEqual(ev?.change?.paths, ["a.txt"]);
      assert.equal(ev?.id, String(ev?.change?.seq));
      const snap = await c.createSnapshot(s);
      for await (const e of stream) {
        if (e.name === "change" && e.change?.op === "snapshotted") {
          assert.equal(e.change.snapshot, snap.id);
          break;
        }
      }
      setTimeout(() => void c.closeSession(s, { purge: true }), 200);
      let last: vfsd.StreamEvent | undefined;
      for (;;) {
        const e = await stream.next();
        if (!e) break;
        last = e;
      }
      assert.equal(last?.name, "closed");
      assert.ok(last?.data.reason);
      assert.equal(await stream.next(), undefined);
    } finally {
      stream.close();
    }
  });

  test("a wait times out; an unknown session is not found", async () => {
    const c = d.client;
    const s = newID();
    await c.createSession({ id: s });
    const stream = await c.events(s, { timeoutMs: 500 });
    await assert.rejects(stream.next(), vfsd.TimeoutError);
    stream.close();
    await assert.rejects(c.events("no-such-session"), vfsd.NotFoundError);
    await c.closeSession(s);
  });
});
