// The types are the OpenAPI description's: the tool map and the error classes cover it.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import path from "node:path";
import { test } from "node:test";

import * as vfsd from "../src/index.js";
import { repo } from "./daemon.js";

test("the tool map and the error codes are the description's", () => {
  const spec = JSON.parse(readFileSync(path.join(repo, "api", "openapi.json"), "utf8"));
  const tools = spec["x-vfsd-tools"] as Record<string, { params: { $ref: string }; receipt: { $ref: string } }>;
  assert.deepEqual([...vfsd.VFSD_TOOLS].sort(), Object.keys(tools).sort());
  // The map's types are named as the description names them.
  const src = readFileSync(path.join(repo, "clients", "typescript", "src", "tools.ts"), "utf8");
  for (const [name, t] of Object.entries(tools)) {
    const p = t.params.$ref.split("/").pop();
    const r = t.receipt.$ref.split("/").pop();
    assert.ok(src.includes(`${name}: { params: T.${p}; receipt: T.${r} }`), `tools.ts: ${name} -> ${p}, ${r}`);
  }
  const ec = spec.components.schemas.ErrorCode;
  for (const code of ec.enum as string[]) {
    const e = vfsd.errorFor(code, "m", ec["x-vfsd-status"][code]);
    assert.notEqual(e.constructor, vfsd.APIError, `no error class for ${code}`);
    assert.equal(e.code, code);
    assert.ok(e instanceof vfsd.APIError && e instanceof vfsd.VfsdError);
  }
  assert.equal(vfsd.errorFor("a_code_from_the_future", "m").constructor, vfsd.APIError);
});
