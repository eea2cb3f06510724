// HTTP over the daemon's Unix socket or TCP, with node:http.

import * as http from "node:http";
import * as https from "node:https";
import { Readable } from "node:stream";

import { errorFromResponse, TimeoutError, UnreachableError } from "./errors.js";

export type Query = Record<string, string | number | boolean | undefined | null>;
export type Body = Buffer | Uint8Array | string | Readable | undefined;

export interface RequestOptions {
  query?: Query;
  body?: Body;
  contentType?: string;
  headers?: Record<string, string>;
  /** Milliseconds: the whole request for plain calls; each wait for data for streams. */
  timeoutMs?: number;
  /** Answer with the response to read as a stream, rather than its whole body. */
  stream?: boolean;
}

export interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

export function encodeQuery(query?: Query): string {
  if (!query) return "";
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) {
    if (v === undefined || v === null) continue;
    q.append(k, typeof v === "boolean" ? (v ? "true" : "false") : String(v));
  }
  const s = q.toString();
  return s ? "?" + s : "";
}

/** One path segment, escaped. */
export function seg(s: string): string {
  return encodeURIComponent(s);
}

export interface Where {
  socket?: string;
  addr?: string;
  token?: string;
  timeoutMs: number;
}

/**
 * Sends requests to one daemon: over its Unix socket, or over TCP with a
 * bearer token. No connection is kept between requests.
 */
export class Transport {
  readonly where: string;
  private readonly base: { socketPath?: string; hostname?: string; port?: number; https: boolean };

  constructor(readonly opts: Where) {
    if (opts.socket && opts.addr) throw new Error("vfsd: give the socket or the address, not both");
    if (opts.socket) {
      this.where = `the socket ${opts.socket}`;
      this.base = { socketPath: opts.socket, https: false };
    } else if (opts.addr) {
      const u = new URL(opts.addr.includes("://") ? opts.addr : "http://" + opts.addr);
      if (u.protocol !== "http:" && u.protocol !== "https:") throw new Error(`vfsd: address ${opts.addr}: use host:port or an http(s):// URL`);
      this.where = u.origin;
      const hostname = u.hostname.startsWith("[") ? u.hostname.slice(1, -1) : u.hostname;
      this.base = { hostname, port: u.port ? Number(u.port) : undefined, https: u.protocol === "https:" };
    } else {
      throw new Error("vfsd: give the daemon's socket or TCP address");
    }
  }

  /** Send the request; resolve with the 2xx answer, reject with the APIError a non-2xx one carries. */
  request(method: string, path: string, o: RequestOptions & { stream: true }): Promise<http.IncomingMessage>;
  request(method: string, path: string, o?: RequestOptions): Promise<Answer>;
  request(method: string, path: string, o: RequestOptions = {}): Promise<Answer | http.IncomingMessage> {
    const timeoutMs = o.timeoutMs ?? this.opts.timeoutMs;
    const headers: Record<string, string> = { Accept: "application/json", ...(o.headers ?? {}) };
    let body = o.body;
    if (body !== undefined) {
      headers["Content-Type"] = o.contentType ?? "application/json";
      if (typeof body === "string") body = Buffer.from(body, "utf8");
      if (body instanceof Uint8Array) headers["Content-Length"] = String(body.byteLength);
    }
    if (this.opts.token) headers["Authorization"] = "Bearer " + this.opts.token;
    const what = `${method} ${path}`;
    return new Promise((resolve, reject) => {
      let settled = false;
      const fail = (err: Error) => {
        if (settled) return;
        settled = true;
        clearTimeout(deadline);
        req.destroy();
        reject(err);
      };
      const mod = this.base.https ? https : http;
      const req = mod.request({
        method,
        path: path + encodeQuery(o.query),
        headers,
        socketPath: this.base.socketPath,
        hostname: this.base.socketPath ? undefined : this.base.hostname,
        port: this.base.port,
        host: this.base.socketPath ? "vfsd" : undefined,
        agent: false,
      });
      // The whole request's deadline (a stream's is each wait, below).
      const deadline = setTimeout(() => fail(new TimeoutError(`${what}: no answer from vfsd at ${this.where} within ${timeoutMs} ms`)), timeoutMs);
      req.on("error", (err) => fail(new UnreachableError(this.where, err)));
      req.on("response", (res) => {
        const status = res.statusCode ?? 0;
        if (o.stream && status >= 200 && status < 300) {
          settled = true;
          clearTimeout(deadline);
          resolve(res);
          return;
        }
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("error", (err) => fail(new UnreachableError(this.where, err)));
        res.on("end", () => {
          if (settled) return;
          settled = true;
          clearTimeout(deadline);
          const buf = Buffer.concat(chunks);
          if (status >= 200 && status < 300) resolve({ status, headers: res.headers, body: buf });
          else reject(errorFromResponse(status, buf, what));
        });
      });
      if (body === undefined) {
        req.end();
      } else if (body instanceof Readable) {
        body.on("error", (err) => fail(err));
        body.pipe(req);
      } else {
        req.end(body);
      }
    });
  }
}

/** The socket vfsd serve listens on by default: $XDG_RUNTIME_DIR/vfsd.sock, else in ~/.local/state/vfsd. */
export function defaultSocket(env: NodeJS.ProcessEnv = process.env): string {
  if (env.XDG_RUNTIME_DIR) return `${env.XDG_RUNTIME_DIR}/vfsd.sock`;
  const state = env.XDG_STATE_HOME || `${env.HOME ?? ""}/.local/state`;
  return `${state}/vfsd/vfsd.sock`;
}
