// Blobs: upload bytes and streams, download whole and in ranges, use as write_file content; who may read.

import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { Readable } from "node:stream";
import { after, before, describe, test } from "node:test";

import * as vfsd from "../src/index.js";
import { Daemon, newID } from "./daemon.js";

describe("blobs", () => {
  let d: Daemon;
  before(async () => { d = await Daemon.start(); });
  after(async () => { await d?.stop(); });

  test("upload, download, use", async () => {
    const c = d.client;
    const s = newID();
    await c.createSession({ id: s });
    const data = randomBytes(300_000);
    const b = await c.putBlob(data);
    assert.match(b.blob_ref, /^blake3:[0-9a-f]{64}$/);
    assert.equal(b.size_bytes, data.length);
    assert.ok((await c.getBlob(b.blob_ref)).equals(data));
    assert.ok((await c.getBlob(b.blob_ref, { offset: 10, length: 5 })).equals(data.subarray(10, 15)));
    assert.ok((await c.getBlob(b.blob_ref.slice("blake3:".length), { offset: 299_990 })).equals(data.subarray(299_990)));
    const streamed = await c.putBlob(Readable.from([Buffer.from("stre"), Buffer.from("amed")]));
    assert.equal(streamed.size_bytes, 8);
    assert.equal((await c.getBlob(streamed.blob_ref)).toString(), "streamed");
    assert.equal((await c.putBlob("text")).size_bytes, 4);

    (await c.call(s, "write_file", { path: "big.bin", blob_ref: b.blob_ref })).check();
    const r = await c.call(s, "read_file", { path: "big.bin", offset_bytes: 0, max_bytes: data.length });
    assert.equal(r.receipt.blob?.size_bytes, data.length);
    assert.ok((await c.getBlob(r.receipt.blob?.blob_ref ?? "")).equals(data));
    await assert.rejects(c.getBlob("not-a-ref"), vfsd.InvalidInputError);
    await assert.rejects(c.getBlob("blake3:" + "0".repeat(64)), vfsd.NotFoundError);
    await c.closeSession(s, { purge: true });
  });

  test("a session token reads its own blobs and the admin's", async () => {
    const a = newID();
    const b = a + "-o";
    const ta = await d.client.createSession({ id: a });
    const tb = await d.client.createSession({ id: b });
    try {
      const mine = d.tcp(ta.token);
      const theirs = d.tcp(tb.token);
      const ref = (await mine.putBlob("secret of a")).blob_ref;
      assert.equal((await mine.getBlob(ref)).toString(), "secret of a");
      await assert.rejects(theirs.getBlob(ref), vfsd.NotFoundError);
      const shared = (await d.tcp().putBlob("from the admin")).blob_ref;
      assert.equal((await theirs.getBlob(shared)).toString(), "from the admin");
    } finally {
      await d.client.closeSession(a, { purge: true });
      await d.client.closeSession(b, { purge: true });
    }
  });
});
