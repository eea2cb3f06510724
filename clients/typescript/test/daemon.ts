// A real `vfsd serve` for the tests: its own data directory, Unix socket,
// TCP port and a host directory it may stage (--allow-root).

import { spawn, type ChildProcess } from "node:child_process";
import { mkdirSync, mkdtempSync, openSync, closeSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { randomUUID } from "node:crypto";
import type { TestContext } from "node:test";

import { Client, TimeoutError, UnreachableError } from "../src/index.js";

const pkg = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");
export const repo = path.resolve(pkg, "..", "..");
export const vfsdBin = process.env.VFSD_BIN ?? path.join(pkg, ".vfsd-test-bin", "vfsd");
export const strict = process.env.VFSD_CLIENT_TESTS_STRICT === "1";

/** Skip the test unless ok — or, in CI (VFSD_CLIENT_TESTS_STRICT=1), fail: nothing is skipped silently there. */
export function need(t: TestContext, ok: boolean, why: string): boolean {
  if (ok) return true;
  if (strict) throw new Error(`needed in CI (VFSD_CLIENT_TESTS_STRICT=1): ${why}`);
  t.skip(why);
  return false;
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.on("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const a = s.address();
      s.close(() => resolve(typeof a === "object" && a ? a.port : 0));
    });
  });
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A wait that does not keep the process alive (a fallback deadline). */
const deadline = (ms: number) => new Promise<void>((r) => setTimeout(r, ms).unref());

export function newID(prefix = "ts"): string {
  return `${prefix}-${randomUUID().slice(0, 12)}`;
}

export class Daemon {
  readonly dir: string;
  readonly data: string;
  readonly host: string;
  readonly socket: string;
  addr = "";
  token = "";
  client!: Client;
  private proc?: ChildProcess;

  constructor() {
    // Unix socket paths are short (108 bytes): a directory under /tmp.
    this.dir = mkdtempSync("/tmp/vfsd-ts-");
    this.data = path.join(this.dir, "data");
    this.host = path.join(this.dir, "host");
    mkdirSync(this.host);
    this.socket = path.join(this.dir, "vfsd.sock");
  }

  static async start(extra: string[] = []): Promise<Daemon> {
    const d = new Daemon();
    await d.run(extra);
    return d;
  }

  private async run(extra: string[]): Promise<void> {
    this.addr = `127.0.0.1:${await freePort()}`;
    const log = openSync(path.join(this.dir, "daemon.log"), "w");
    this.proc = spawn(vfsdBin, ["serve", "--data-dir", this.data, "--socket", this.socket, "--listen", this.addr,
      "--allow-root", this.host, "--log-level", "warn", ...extra], { stdio: ["ignore", log, log] });
    closeSync(log);
    this.client = new Client({ socket: this.socket, timeoutMs: 30_000 });
    const deadline = Date.now() + 30_000;
    for (;;) {
      if (this.proc.exitCode !== null) throw new Error(`vfsd serve exited with ${this.proc.exitCode}:\n${this.logs()}`);
      try {
        await this.client.health({ timeoutMs: 2000 });
        break;
      } catch (e) {
        if (!(e instanceof UnreachableError || e instanceof TimeoutError)) throw e;
        if (Date.now() > deadline) {
          await this.stop();
          throw new Error(`vfsd serve did not answer within 30 s:\n${this.logs()}`);
        }
        await sleep(50);
      }
    }
    this.token = readFileSync(path.join(this.data, "token"), "utf8").trim();
  }

  logs(): string {
    try {
      return readFileSync(path.join(this.dir, "daemon.log"), "utf8").slice(-4000);
    } catch {
      return "";
    }
  }

  /** A client over TCP with token (default: the admin token). */
  tcp(token?: string): Client {
    return new Client({ addr: this.addr, token: token ?? this.token, timeoutMs: 30_000 });
  }

  /** A fresh host folder beneath the allowed root. */
  hostTree(): string {
    const d = path.join(this.host, randomUUID().slice(0, 8));
    mkdirSync(path.join(d, "src"), { recursive: true });
    writeFileSync(path.join(d, "src", "main.ts"), "console.log('hello');\n");
    writeFileSync(path.join(d, "src", "util.ts"), "export const X = 1;\n");
    writeFileSync(path.join(d, "build.log"), "noise\n");
    writeFileSync(path.join(d, "README.md"), "# App\n");
    return d;
  }

  /**
   * Kill the daemon with SIGKILL, as a crash would, and remove its
   * directory (only for daemons whose sessions mount nothing: a killed
   * daemon leaves its FUSE mounts behind).
   */
  async kill(): Promise<void> {
    const p = this.proc;
    if (p && p.exitCode === null && p.signalCode === null) {
      const exited = new Promise<void>((r) => p.once("exit", () => r()));
      p.kill("SIGKILL");
      await Promise.race([exited, deadline(10_000)]);
    }
    rmSync(this.dir, { recursive: true, force: true });
  }

  /**
   * Stop the daemon; throw if it did not exit cleanly (a crash, or a data
   * race the race detector reported, when VFSD_BIN is built with -race as
   * CI builds it).
   */
  async stop(): Promise<void> {
    const p = this.proc;
    let stopped = true;
    if (p && p.exitCode === null && p.signalCode === null) {
      const exited = new Promise<void>((r) => p.once("exit", () => r()));
      p.kill("SIGTERM");
      stopped = await Promise.race([exited.then(() => true), deadline(20_000).then(() => false)]);
      if (!stopped) {
        p.kill("SIGKILL");
        await Promise.race([exited, deadline(10_000)]);
      }
    }
    const logs = this.logs();
    rmSync(this.dir, { recursive: true, force: true });
    if (p && (!stopped || p.exitCode !== 0)) {
      throw new Error(`vfsd serve exited with ${p.exitCode ?? p.signalCode}${stopped ? "" : " (killed: it did not stop on SIGTERM)"}:\n${logs}`);
    }
  }
}

/** VFSD_S3_TEST_URL with a prefix of its own under the bucket. */
export function s3URL(prefix: string): string | undefined {
  const base = process.env.VFSD_S3_TEST_URL;
  if (!base) return undefined;
  const u = new URL(base);
  u.pathname = (u.pathname.replace(/\/$/, "") + "/" + prefix);
  return u.toString();
}
