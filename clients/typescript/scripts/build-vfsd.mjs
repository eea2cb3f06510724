// Builds the vfsd binary the tests run (into .vfsd-test-bin/, ignored by
// git), unless VFSD_BIN names one.
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import path from "node:path";

if (process.env.VFSD_BIN) {
  if (!existsSync(process.env.VFSD_BIN)) {
    console.error(`VFSD_BIN=${process.env.VFSD_BIN} does not exist`);
    process.exit(1);
  }
  process.exit(0);
}
const pkg = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const repo = path.resolve(pkg, "..", "..");
const out = path.join(pkg, ".vfsd-test-bin", "vfsd");
const go = existsSync("/usr/local/go/bin/go") ? "/usr/local/go/bin/go" : "go";
execFileSync(go, ["build", "-o", out, "./cmd/vfsd"], { cwd: repo, stdio: "inherit", timeout: 900_000 });
