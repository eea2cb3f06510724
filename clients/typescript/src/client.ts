// The client: one method per route of the vfsd HTTP API.

import type { IncomingMessage } from "node:http";
import { Readable } from "node:stream";
import { createInterface } from "node:readline";

import { errorFor, ProtocolError, TimeoutError, ToolError } from "./errors.js";
import type * as T from "./schema.js";
import type { VfsdToolName, VfsdTools } from "./tools.js";
import { defaultSocket, seg, Transport, type Query, type Where } from "./transport.js";

/** Receives a long operation's progress (imports, a snapshot's sealing). */
export type ProgressCallback = (p: T.Progress) => void;

export interface ClientOptions {
  /** The daemon's Unix socket: every request is the admin's. */
  socket?: string;
  /** The daemon's TCP address (host:port or an http(s):// URL), with `token`. */
  addr?: string;
  /** Bearer token over TCP: the admin token, or a session's token (that session only). */
  token?: string;
  /** Milliseconds each call may take (default 60 000); every method takes its own too. */
  timeoutMs?: number;
}

export interface CallOptions {
  /** Milliseconds this call may take. */
  timeoutMs?: number;
}

/** The body of a session creation, as the client takes it. */
export type CreateSessionOptions = T.CreateSessionRequest & CallOptions & { progress?: ProgressCallback };
/** The body of a fork (a session creation's without mounts, base and fork). */
export type ForkOptions = Omit<T.CreateSessionRequest, "mounts" | "base" | "fork"> & CallOptions;

/**
 * The outcome of a tool call. `receipt` is the result's body exactly as the
 * daemon sent it: for the vfsd contract the tool's receipt, typed per tool;
 * under another contract the object its document gives. A failed call is
 * not an exception: `ok` is false, `status` the failure's class, `failure`
 * the failure receipt (vfsd contract). `check()` throws ToolError instead.
 */
export class ToolCall<R = Record<string, unknown>> {
  constructor(
    readonly tool: string,
    /** The status word or error code (the Vfsd-Tool-Status header). */
    readonly status: string,
    /** Whether the call failed, as the session's contract says. */
    readonly isError: boolean,
    /** The session's contract. */
    readonly contract: string,
    readonly receipt: R,
    /** The receipt's rendering for a model (`{ text: true }`). */
    readonly text?: string,
  ) {}

  get ok(): boolean {
    return !this.isError;
  }

  /** The receipt as a failure receipt, when the call failed. */
  get failure(): T.FailureReceipt | undefined {
    return this.isError ? (this.receipt as unknown as T.FailureReceipt) : undefined;
  }

  /** The failure's code: the receipt's error_code, else the status. */
  get errorCode(): string {
    if (!this.isError) return "";
    const r = this.receipt as { error_code?: unknown };
    return typeof r?.error_code === "string" && r.error_code ? r.error_code : this.status;
  }

  /** This call, or a thrown ToolError when it failed. */
  check(): this {
    if (this.isError) {
      const r = (this.receipt ?? {}) as Record<string, unknown>;
      const summary = String(r.summary_text ?? r.message ?? r.error ?? "");
      throw new ToolError(this.tool, this.status, this.errorCode, summary, this.receipt);
    }
    return this;
  }
}

/** One server-sent event: `change` (data: Event), `lost` or `closed`. */
export interface StreamEvent {
  name: "change" | "lost" | "closed" | (string & {});
  data: Record<string, unknown>;
  id?: string;
  /** The change, for a `change` event. */
  change?: T.Event;
}

/**
 * A session's event stream: `for await (const ev of stream)`, or
 * `next(timeoutMs)`. It starts from the present (no replay) and ends after
 * a `closed` event. Close it when done.
 */
export class EventStream implements AsyncIterable<StreamEvent> {
  private readonly lines: AsyncIterator<string>;
  private pending?: Promise<IteratorResult<string>>;
  private done = false;

  constructor(private readonly res: IncomingMessage, private readonly timeoutMs: number) {
    this.lines = createInterface({ input: res, crlfDelay: Infinity })[Symbol.asyncIterator]();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<StreamEvent> {
    for (;;) {
      const ev = await this.next();
      if (!ev) return;
      yield ev;
    }
  }

  private line(timeoutMs: number): Promise<IteratorResult<string>> {
    // A line read that timed out is still pending: the next read takes it.
    this.pending ??= this.lines.next();
    const p = this.pending;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new TimeoutError(`no event from vfsd within ${timeoutMs} ms`)), timeoutMs);
    });
    return Promise.race([p, timeout]).then((r) => {
      this.pending = undefined;
      return r;
    }).finally(() => clearTimeout(timer));
  }

  /** The next event; undefined when the stream has ended. Rejects with TimeoutError when none came in time. */
  async next(timeoutMs = this.timeoutMs): Promise<StreamEvent | undefined> {
    if (this.done) return undefined;
    let name = "";
    let id: string | undefined;
    const data: string[] = [];
    for (;;) {
      const r = await this.line(timeoutMs);
      if (r.done) {
        this.close();
        return undefined;
      }
      const line = r.value;
      if (line === "") {
        if (!name && data.length === 0) continue; // a comment or a retry block
        let parsed: Record<string, unknown> = {};
        const text = data.join("\n");
        try {
          if (text) parsed = JSON.parse(text) as Record<string, unknown>;
        } catch {
          throw new ProtocolError(`events: data that is not JSON: ${text.slice(0, 200)}`);
        }
        const ev: StreamEvent = { name: name || "message", data: parsed, id };
        if (ev.name === "change") ev.change = parsed as unknown as T.Event;
        if (ev.name === "closed") this.close();
        return ev;
      }
      if (line.startsWith(":")) continue;
      const i = line.indexOf(":");
      const key = i < 0 ? line : line.slice(0, i);
      let value = i < 0 ? "" : line.slice(i + 1);
      if (value.startsWith(" ")) value = value.slice(1);
      if (key === "event") name = value;
      else if (key === "data") data.push(value);
      else if (key === "id") id = value;
    }
  }

  close(): void {
    this.done = true;
    this.res.destroy();
  }
}

function json<X>(body: Buffer): X {
  try {
    return JSON.parse(body.toString("utf8")) as X;
  } catch {
    throw new ProtocolError(`the daemon's answer is not JSON: ${body.toString("utf8").slice(0, 200)}`);
  }
}

function dropUndefined<X extends object>(o: X): X {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as X;
}

/**
 * A client of one vfsd daemon, over its Unix socket (every request the
 * admin's) or over TCP with a bearer token.
 *
 * ```ts
 * const c = new Client({ socket: "/run/user/1000/vfsd.sock" });
 * const c = new Client({ addr: "127.0.0.1:7070", token: process.env.VFSD_TOKEN });
 * const c = Client.fromEnv();   // VFSD_ADDR + VFSD_TOKEN, else VFSD_SOCKET, else the default socket
 * ```
 *
 * API failures reject with APIError subclasses carrying the stable code; a
 * daemon that cannot be reached, with UnreachableError; every call has a
 * timeout (TimeoutError).
 */
export class Client {
  private readonly t: Transport;

  constructor(opts: ClientOptions) {
    const where: Where = { socket: opts.socket, addr: opts.addr, token: opts.token, timeoutMs: opts.timeoutMs ?? 60_000 };
    this.t = new Transport(where);
  }

  /** The daemon the vfsd CLI would talk to: VFSD_ADDR (with VFSD_TOKEN), else VFSD_SOCKET, else the default socket. */
  static fromEnv(env: NodeJS.ProcessEnv = process.env, timeoutMs?: number): Client {
    if (env.VFSD_ADDR) return new Client({ addr: env.VFSD_ADDR, token: env.VFSD_TOKEN, timeoutMs });
    return new Client({ socket: env.VFSD_SOCKET || defaultSocket(env), timeoutMs });
  }

  /** A client of the same daemon presenting another token (a session's). Over the socket every request is the admin's. */
  withToken(token: string | undefined): Client {
    const o = this.t.opts;
    return new Client({ socket: o.socket, addr: o.socket ? undefined : this.t.where, token, timeoutMs: o.timeoutMs });
  }

  /** Where the daemon is: the socket, or the TCP origin. */
  get where(): string {
    return this.t.where;
  }

  // -- plumbing --

  private async do<X>(method: string, path: string, o: { query?: Query; body?: unknown; timeoutMs?: number } = {}): Promise<X> {
    const body = o.body === undefined ? undefined : Buffer.from(JSON.stringify(o.body), "utf8");
    const a = await this.t.request(method, path, { query: o.query, body, timeoutMs: o.timeoutMs });
    return json<X>(a.body);
  }

  private async none(method: string, path: string, o: { query?: Query; timeoutMs?: number } = {}): Promise<void> {
    await this.t.request(method, path, o);
  }

  private async text(path: string, query: Query, timeoutMs?: number): Promise<string> {
    const a = await this.t.request("GET", path, { query, timeoutMs, headers: { Accept: "*/*" } });
    return a.body.toString("utf8");
  }

  private async progress<X>(path: string, body: unknown, cb: ProgressCallback, timeoutMs?: number): Promise<X> {
    const res = await this.t.request("POST", path, {
      query: { progress: true },
      body: body === undefined ? undefined : Buffer.from(JSON.stringify(body), "utf8"),
      headers: { Accept: "application/x-ndjson" },
      timeoutMs,
      stream: true,
    });
    const ms = timeoutMs ?? this.t.opts.timeoutMs;
    res.setTimeout(ms, () => res.destroy(new TimeoutError(`POST ${path}: no progress from vfsd within ${ms} ms`)));
    try {
      for await (const raw of createInterface({ input: res, crlfDelay: Infinity })) {
        if (!raw.trim()) continue;
        let line: T.ProgressLine;
        try {
          line = JSON.parse(raw) as T.ProgressLine;
        } catch {
          throw new ProtocolError(`POST ${path}: a progress line that is not JSON: ${raw.slice(0, 200)}`);
        }
        if (line.error) throw errorFor(line.error.code, line.error.message, line.status ?? 0);
        if (line.result !== undefined) return line.result as X;
        if (line.progress) cb(line.progress);
      }
    } finally {
      res.destroy();
    }
    throw new ProtocolError(`POST ${path}: the daemon ended the progress stream without a result (did it stop?)`);
  }

  // -- daemon --

  /** Check that the daemon answers (GET /healthz). */
  health(o: CallOptions = {}): Promise<T.Health> {
    return this.do("GET", "/healthz", o);
  }

  /** The daemon's metrics, Prometheus text format (GET /metrics; admin). */
  metrics(o: CallOptions = {}): Promise<string> {
    return this.text("/metrics", {}, o.timeoutMs);
  }

  // -- sessions --

  /**
   * Create a session (POST /v1/sessions; admin). At most one of `mounts`
   * (host folders: see folder()), `base` (a snapshot), `from_ref` (a ref of
   * the fleet) and `fork` (a live session) says where it starts; `keep_ref`
   * names a ref of the fleet that follows its pushed head. `progress` is
   * called as host folders are imported. The answer has the session, its
   * token (shown once) and the import's report.
   */
  createSession(o: CreateSessionOptions = {}): Promise<T.CreateSessionResponse> {
    const { progress, timeoutMs, ...req } = o;
    if (progress) return this.progress("/v1/sessions", dropUndefined(req), progress, timeoutMs);
    return this.do("POST", "/v1/sessions", { body: dropUndefined(req), timeoutMs });
  }

  /** The sessions, sorted by ID (GET /v1/sessions; admin). */
  async sessions(o: CallOptions = {}): Promise<T.Session[]> {
    return (await this.do<T.SessionList>("GET", "/v1/sessions", o)).sessions;
  }

  /** Describe a session (GET /v1/sessions/{id}). */
  session(id: string, o: CallOptions = {}): Promise<T.Session> {
    return this.do("GET", `/v1/sessions/${seg(id)}`, o);
  }

  /**
   * Restart a session's lifetime — `ttl`, a Go duration ("2h") or "never" —
   * and/or name the fleet's ref that follows its pushed head (`keepRef`;
   * "-" stops it) (PATCH /v1/sessions/{id}; admin). A string is the ttl.
   */
  updateSession(id: string, update: string | { ttl?: string; keepRef?: string }, o: CallOptions = {}): Promise<T.Session> {
    const u = typeof update === "string" ? { ttl: update } : update;
    if (u.ttl === undefined && u.keepRef === undefined) throw new TypeError("updateSession: give ttl, keepRef or both");
    const body: T.UpdateSessionRequest = dropUndefined({ ttl: u.ttl, keep_ref: u.keepRef });
    return this.do("PATCH", `/v1/sessions/${seg(id)}`, { body, ...o });
  }

  /**
   * Close a session (DELETE /v1/sessions/{id}). `purge: true` also deletes
   * the snapshots taken of it that no other session needs; false keeps them
   * even where its contract purges; absent, the contract decides.
   */
  closeSession(id: string, o: CallOptions & { purge?: boolean } = {}): Promise<void> {
    return this.none("DELETE", `/v1/sessions/${seg(id)}`, { query: { purge: o.purge }, timeoutMs: o.timeoutMs });
  }

  /** Return a session to its start, importing its host folders again if it was staged from them (POST /v1/sessions/{id}/reset). */
  resetSession(id: string, o: CallOptions & { progress?: ProgressCallback } = {}): Promise<T.ResetResponse> {
    const path = `/v1/sessions/${seg(id)}/reset`;
    if (o.progress) return this.progress(path, undefined, o.progress, o.timeoutMs);
    return this.do("POST", path, o);
  }

  /** A new session from a live session's current state (POST /v1/sessions/{id}/fork). */
  forkSession(id: string, o: ForkOptions = {}): Promise<T.CreateSessionResponse> {
    const { timeoutMs, ...req } = o;
    return this.do("POST", `/v1/sessions/${seg(id)}/fork`, { body: dropUndefined(req), timeoutMs });
  }

  /** The state the session's contract offers (weakincentives: its VirtualFileSystem); NotFoundError for contracts without one. */
  contractState(id: string, o: CallOptions = {}): Promise<T.WeakincentivesState | Record<string, unknown>> {
    return this.do("GET", `/v1/sessions/${seg(id)}/contract/state`, o);
  }

  // -- tools --

  /** The session's tools in a provider's format and their prompt section (GET /v1/sessions/{id}/tools). */
  tools(id: string, o: CallOptions & { profile?: T.Profile } = {}): Promise<T.ToolList> {
    return this.do("GET", `/v1/sessions/${seg(id)}/tools`, { query: { profile: o.profile }, timeoutMs: o.timeoutMs });
  }

  /**
   * Call a tool (POST /v1/sessions/{id}/tools/{name}). A call the tool
   * refuses is not a rejection: it resolves to a ToolCall whose `ok` is
   * false. `text: true` also returns the rendering for a model; `contract`
   * names the contract the call is written for.
   */
  call<N extends VfsdToolName>(session: string, tool: N, params?: VfsdTools[N]["params"], o?: ToolCallOptions): Promise<ToolCall<VfsdTools[N]["receipt"]>>;
  call(session: string, tool: string, params?: Record<string, unknown>, o?: ToolCallOptions): Promise<ToolCall<Record<string, unknown>>>;
  async call(session: string, tool: string, params?: object, o: ToolCallOptions = {}): Promise<ToolCall<unknown>> {
    const a = await this.t.request("POST", `/v1/sessions/${seg(session)}/tools/${seg(tool)}`, {
      query: { text: o.text ? true : undefined, contract: o.contract },
      body: Buffer.from(JSON.stringify(params ?? {}), "utf8"),
      timeoutMs: o.timeoutMs,
    });
    const header = (k: string) => {
      const v = a.headers[k.toLowerCase()];
      return Array.isArray(v) ? v[0] ?? "" : v ?? "";
    };
    let out = json<Record<string, unknown>>(a.body);
    let text: string | undefined;
    if (o.text) {
      if (!out || typeof out !== "object" || !("receipt" in out)) throw new ProtocolError(`tool ${tool}: a ?text=true answer without a receipt`);
      text = String(out.text ?? "");
      out = out.receipt as Record<string, unknown>;
    }
    let status = header("Vfsd-Tool-Status");
    if (!status && out && typeof out.status === "string") status = out.status;
    return new ToolCall(tool, status, header("Vfsd-Tool-Error") === "true", header("Vfsd-Tool-Contract"), out, text);
  }

  /** A page of the session's call log: the calls after number `since`, oldest first (GET /v1/sessions/{id}/calls). */
  calls(id: string, o: CallOptions & { since?: number; limit?: number } = {}): Promise<T.CallList> {
    return this.do("GET", `/v1/sessions/${seg(id)}/calls`, { query: { since: o.since || undefined, limit: o.limit || undefined }, timeoutMs: o.timeoutMs });
  }

  // -- history --

  /** A page of the session's history: calls, mount changes, session operations (GET /v1/sessions/{id}/log). */
  log(id: string, o: CallOptions & { offset?: number; limit?: number; patch?: boolean } = {}): Promise<T.Log> {
    return this.do("GET", `/v1/sessions/${seg(id)}/log`, {
      query: { offset: o.offset || undefined, limit: o.limit || undefined, patch: o.patch ? true : undefined },
      timeoutMs: o.timeoutMs,
    });
  }

  /** Every page of the session's history. */
  async logAll(id: string, o: CallOptions & { patch?: boolean } = {}): Promise<T.Log> {
    const all = await this.log(id, o);
    for (let next = all.next ?? 0; next; ) {
      const page = await this.log(id, { ...o, offset: next });
      all.entries.push(...page.entries);
      all.total = page.total;
      all.seq = page.seq;
      next = page.next ?? 0;
    }
    delete all.next;
    return all;
  }

  /**
   * Put the session back to an earlier state: just before `call` N, just
   * after journal event `seq`, the state at `time`, or a `snapshot`'s —
   * exactly one (POST /v1/sessions/{id}/rewind). Undo it by rewinding to
   * the answer's `from` (as `seq`).
   */
  rewind(id: string, target: { call?: number; seq?: number; time?: string | Date; snapshot?: string }, o: CallOptions = {}): Promise<T.RewindResponse> {
    const body: T.RewindRequest = dropUndefined({
      call: target.call,
      seq: target.seq,
      time: target.time instanceof Date ? target.time.toISOString() : target.time,
      snapshot: target.snapshot,
    });
    return this.do("POST", `/v1/sessions/${seg(id)}/rewind`, { body, ...o });
  }

  /** Import the host folders again and replay the session's changes on top (POST /v1/sessions/{id}/rebase; admin). */
  rebase(id: string, o: CallOptions & { dryRun?: boolean } = {}): Promise<T.RebaseReport> {
    const body: T.RebaseRequest = o.dryRun ? { dry_run: true } : {};
    return this.do("POST", `/v1/sessions/${seg(id)}/rebase`, { body, timeoutMs: o.timeoutMs });
  }

  // -- snapshots --

  /** Snapshot the session (POST /v1/sessions/{id}/snapshots). TooLargeError past its quota's max_snapshots. */
  createSnapshot(id: string, o: CallOptions & { label?: string; progress?: ProgressCallback } = {}): Promise<T.Snapshot> {
    const body: T.SnapshotRequest = dropUndefined({ label: o.label });
    const path = `/v1/sessions/${seg(id)}/snapshots`;
    if (o.progress) return this.progress(path, body, o.progress, o.timeoutMs);
    return this.do("POST", path, { body, timeoutMs: o.timeoutMs });
  }

  /** The snapshots taken of the session, newest first (GET /v1/sessions/{id}/snapshots). */
  async sessionSnapshots(id: string, o: CallOptions = {}): Promise<T.Snapshot[]> {
    return (await this.do<T.SnapshotList>("GET", `/v1/sessions/${seg(id)}/snapshots`, o)).snapshots;
  }

  /**
   * Every snapshot, or those of sessions named `session`, newest first (GET
   * /v1/snapshots; admin): with a remote, the fleet's pushed snapshots too
   * unless `local`. snapshotList() also says when the fleet's part is missing.
   */
  async snapshots(o: CallOptions & { session?: string; local?: boolean } = {}): Promise<T.Snapshot[]> {
    return (await this.snapshotList(o)).snapshots;
  }

  /** snapshots() with the whole answer: `fleet_error` says why the fleet's snapshots are missing (the remote did not answer in time). */
  snapshotList(o: CallOptions & { session?: string; local?: boolean } = {}): Promise<T.SnapshotList> {
    return this.do("GET", "/v1/snapshots", { query: { session: o.session, local: o.local ? true : undefined }, timeoutMs: o.timeoutMs });
  }

  /** Describe a snapshot, by ID or unique prefix (GET /v1/snapshots/{snap}; admin). */
  snapshot(snap: string, o: CallOptions = {}): Promise<T.Snapshot> {
    return this.do("GET", `/v1/snapshots/${seg(snap)}`, o);
  }

  /**
   * Delete a snapshot (DELETE /v1/snapshots/{snap}, admin; with `session`,
   * DELETE /v1/sessions/{id}/snapshots/{snap}, what a session token may do).
   */
  deleteSnapshot(snap: string, o: CallOptions & { session?: string } = {}): Promise<T.DeleteSnapshotsResponse> {
    const path = o.session ? `/v1/sessions/${seg(o.session)}/snapshots/${seg(snap)}` : `/v1/snapshots/${seg(snap)}`;
    return this.do("DELETE", path, o);
  }

  /** Return the session to a snapshot, in O(1) (POST /v1/sessions/{id}/restore). */
  restore(id: string, snapshot: string, o: CallOptions = {}): Promise<T.Session> {
    return this.do("POST", `/v1/sessions/${seg(id)}/restore`, { body: { snapshot } satisfies T.RestoreRequest, ...o });
  }

  /** A new session from a snapshot (POST /v1/snapshots/{snap}/fork; admin). */
  forkSnapshot(snap: string, o: ForkOptions = {}): Promise<T.CreateSessionResponse> {
    const { timeoutMs, ...req } = o;
    return this.do("POST", `/v1/snapshots/${seg(snap)}/fork`, { body: dropUndefined(req), timeoutMs });
  }

  /** Diff two states of the session: base, import, live or a snapshot (GET /v1/sessions/{id}/diff). */
  sessionDiff(id: string, o: CallOptions & { from?: string; to?: string; text?: boolean } = {}): Promise<T.Diff> {
    return this.do("GET", `/v1/sessions/${seg(id)}/diff`, { query: { from: o.from, to: o.to, text: o.text ? true : undefined }, timeoutMs: o.timeoutMs });
  }

  /** sessionDiff as one unified diff, as git diff prints it. */
  sessionDiffText(id: string, o: CallOptions & { from?: string; to?: string } = {}): Promise<string> {
    return this.text(`/v1/sessions/${seg(id)}/diff`, { from: o.from, to: o.to, format: "unified" }, o.timeoutMs);
  }

  /** Diff two snapshots or live sessions (`session:ID`) (GET /v1/diff; admin). */
  diff(from: string, to: string, o: CallOptions & { text?: boolean } = {}): Promise<T.Diff> {
    return this.do("GET", "/v1/diff", { query: { from, to, text: o.text ? true : undefined }, timeoutMs: o.timeoutMs });
  }

  /** diff as one unified diff. */
  diffText(from: string, to: string, o: CallOptions = {}): Promise<string> {
    return this.text("/v1/diff", { from, to, format: "unified" }, o.timeoutMs);
  }

  /** Delete the blobs nothing references (POST /v1/gc; admin). */
  gc(o: CallOptions = {}): Promise<T.GCReport> {
    return this.do("POST", "/v1/gc", o);
  }

  // -- remote --

  /** Upload a snapshot to the daemon's remote and wait (POST /v1/snapshots/{snap}/push; admin). */
  pushSnapshot(snap: string, o: CallOptions = {}): Promise<T.PushReport> {
    return this.do("POST", `/v1/snapshots/${seg(snap)}/push`, o);
  }

  /** The daemon's remote, its pushes and its cache (GET /v1/remote; admin). */
  remoteStatus(o: CallOptions = {}): Promise<T.RemoteStatus> {
    return this.do("GET", "/v1/remote", o);
  }

  /** Collect the remote's garbage (POST /v1/remote/gc; admin). UnavailableError without a remote. */
  remoteGC(o: CallOptions = {}): Promise<T.RemoteGCReport> {
    return this.do("POST", "/v1/remote/gc", o);
  }

  // -- fleet --

  /** The daemons sharing this daemon's remote, with their heartbeats; `self` is this daemon's fleet name (GET /v1/daemons; admin). */
  daemons(o: CallOptions = {}): Promise<T.DaemonList> {
    return this.do("GET", "/v1/daemons", o);
  }

  /**
   * Hand the session to the fleet's daemon `to` (POST /v1/sessions/{id}/move;
   * admin): freeze, snapshot, push, move the ownership by compare-and-swap.
   * This daemon answers the session's calls with FencedError from then on;
   * `to` adopts it at its first call.
   */
  moveSession(id: string, to: string, o: CallOptions = {}): Promise<T.MoveReport> {
    return this.do("POST", `/v1/sessions/${seg(id)}/move`, { body: { to } satisfies T.MoveRequest, ...o });
  }

  /** Take over a session whose owner's lease has ended: the next epoch, from its pushed head (POST /v1/sessions/{id}/take; admin). A live owner is a ConflictError. */
  takeSession(id: string, o: CallOptions = {}): Promise<T.Session> {
    return this.do("POST", `/v1/sessions/${seg(id)}/take`, o);
  }

  /** The fleet's refs (GET /v1/refs; admin). */
  refs(o: CallOptions = {}): Promise<T.RefList> {
    return this.do("GET", "/v1/refs", o);
  }

  /** One ref (GET /v1/refs/{name}; admin): NotFoundError when it does not exist. */
  ref(name: string, o: CallOptions = {}): Promise<T.Ref> {
    return this.do("GET", `/v1/refs/${refPath(name)}`, o);
  }

  /**
   * Point the ref `name` at `snapshot` (PUT /v1/refs/{name}; admin); a local
   * snapshot is pushed first. Concurrent movers retry and none loses its
   * move. `expect` (a snapshot ID) moves it only while it points there,
   * `expectAbsent` only while it does not exist: else ConflictError.
   */
  setRef(name: string, snapshot: string, o: CallOptions & { expect?: string; expectAbsent?: boolean } = {}): Promise<T.Ref> {
    if (o.expect !== undefined && o.expectAbsent) throw new TypeError("setRef: expect and expectAbsent exclude each other");
    const body: T.RefRequest = dropUndefined({ snapshot, expect: o.expect, expect_set: o.expect !== undefined || o.expectAbsent ? true : undefined });
    return this.do("PUT", `/v1/refs/${refPath(name)}`, { body, timeoutMs: o.timeoutMs });
  }

  /** Remove a ref (DELETE /v1/refs/{name}; admin); its snapshot stays. */
  deleteRef(name: string, o: CallOptions = {}): Promise<void> {
    return this.none("DELETE", `/v1/refs/${refPath(name)}`, o);
  }

  // -- host --

  /** Write the session's changes back to its host folders (POST /v1/sessions/{id}/apply; admin). */
  apply(id: string, o: CallOptions & { dryRun?: boolean; keepSetID?: boolean } = {}): Promise<T.ApplyReport> {
    const body: T.ApplyRequest = dropUndefined({ dry_run: o.dryRun || undefined, keep_setid: o.keepSetID || undefined });
    return this.do("POST", `/v1/sessions/${seg(id)}/apply`, { body, timeoutMs: o.timeoutMs });
  }

  /** Mount the session at an existing, empty host directory (POST /v1/sessions/{id}/mount; admin). */
  mount(id: string, req: T.MountRequest, o: CallOptions = {}): Promise<T.FuseMount> {
    return this.do("POST", `/v1/sessions/${seg(id)}/mount`, { body: req, ...o });
  }

  /** Unmount the session's mount at `dir`, or all of them (DELETE /v1/sessions/{id}/mount; admin). */
  unmount(id: string, dir?: string, o: CallOptions = {}): Promise<void> {
    return this.none("DELETE", `/v1/sessions/${seg(id)}/mount`, { query: { dir }, timeoutMs: o.timeoutMs });
  }

  // -- events --

  /** Open the session's event stream (GET /v1/sessions/{id}/events); `timeoutMs` bounds each wait for an event. */
  async events(id: string, o: CallOptions = {}): Promise<EventStream> {
    const ms = o.timeoutMs ?? this.t.opts.timeoutMs;
    const res = await this.t.request("GET", `/v1/sessions/${seg(id)}/events`, { headers: { Accept: "text/event-stream" }, timeoutMs: ms, stream: true });
    return new EventStream(res, ms);
  }

  // -- blobs --

  /** Upload content as a blob (POST /v1/blobs): bytes, a string, or a stream (sent as it is read). */
  putBlob(content: Uint8Array | string | Readable, o: CallOptions = {}): Promise<T.Blob> {
    const body = typeof content === "string" ? Buffer.from(content, "utf8") : content;
    return this.t.request("POST", "/v1/blobs", { body, contentType: "application/octet-stream", timeoutMs: o.timeoutMs })
      .then((a) => json<T.Blob>(a.body));
  }

  /** A blob's content, or `length` bytes from `offset` (GET /v1/blobs/{ref}: `blake3:<hex>` as tools return it). */
  async getBlob(ref: string, o: CallOptions & { offset?: number; length?: number } = {}): Promise<Buffer> {
    const headers: Record<string, string> = { Accept: "application/octet-stream" };
    if (o.offset !== undefined || o.length !== undefined) {
      const start = o.offset ?? 0;
      headers.Range = `bytes=${start}-${o.length ? start + o.length - 1 : ""}`;
    }
    return (await this.t.request("GET", `/v1/blobs/${seg(ref)}`, { headers, timeoutMs: o.timeoutMs })).body;
  }

  // -- MCP --

  /**
   * Send one JSON-RPC request to the session's MCP endpoint (stateless
   * streamable HTTP) and return the JSON-RPC answer. For a full MCP session,
   * point an MCP client (@modelcontextprotocol/sdk) at the endpoint.
   */
  async mcp(id: string, method: string, params?: Record<string, unknown>, o: CallOptions & { requestId?: number; profile?: T.Profile } = {}): Promise<T.JSONRPCMessage> {
    const msg = dropUndefined({ jsonrpc: "2.0", id: o.requestId ?? 1, method, params });
    const a = await this.t.request("POST", `/v1/sessions/${seg(id)}/mcp`, {
      query: { profile: o.profile },
      body: Buffer.from(JSON.stringify(msg), "utf8"),
      headers: { Accept: "application/json, text/event-stream" },
      timeoutMs: o.timeoutMs,
    });
    let body = a.body.toString("utf8");
    if (String(a.headers["content-type"] ?? "").startsWith("text/event-stream")) {
      body = body.split(/\r?\n/).filter((l) => l.startsWith("data:")).map((l) => l.slice(5).trimStart()).join("\n");
    }
    try {
      return JSON.parse(body) as T.JSONRPCMessage;
    } catch {
      throw new ProtocolError(`mcp ${method}: an answer that is not JSON-RPC: ${body.slice(0, 200)}`);
    }
  }

  // -- review page --

  /** A one-time login for the review page (POST /v1/ui/login): the admin's, or one reaching `session` only. */
  uiLogin(o: CallOptions & { session?: string } = {}): Promise<T.UILoginResponse> {
    return this.do("POST", "/v1/ui/login", { body: dropUndefined({ session: o.session }) satisfies T.UILoginRequest, timeoutMs: o.timeoutMs });
  }

  /** A raw request, for routes this client has no method for: resolves with the 2xx answer, rejects with the APIError. */
  request(method: string, path: string, o: { query?: Query; body?: Buffer | string; headers?: Record<string, string>; timeoutMs?: number } = {}) {
    return this.t.request(method, path, o);
  }
}

export interface ToolCallOptions extends CallOptions {
  /** Also return the receipt's rendering for a model. */
  text?: boolean;
  /** The contract the call is written for: a session speaking another answers invalid_input. */
  contract?: string;
}

/** A ref's name in a path: its slashes are the route's (team/main is /v1/refs/team/main), each segment escaped. */
function refPath(name: string): string {
  return name.split("/").map(seg).join("/");
}

/** A host folder to stage into a new session: include/exclude are doublestar globs relative to hostPath (exclude wins). */
export function folder(hostPath: string, mountPath?: string, o: { include?: string[]; exclude?: string[]; maxBytes?: number; followSymlinks?: boolean; gitignore?: boolean; defaultExcludes?: boolean } = {}): T.Mount {
  return dropUndefined({
    host_path: hostPath,
    mount_path: mountPath,
    include_glob: o.include?.length ? o.include : undefined,
    exclude_glob: o.exclude?.length ? o.exclude : undefined,
    max_bytes: o.maxBytes,
    follow_symlinks: o.followSymlinks || undefined,
    gitignore: o.gitignore || undefined,
    default_excludes: o.defaultExcludes || undefined,
  });
}
