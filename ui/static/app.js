// vfsd review page: the buttons. Everything shown comes from the server's
// escaped HTML or is set here with textContent; nothing is parsed as HTML.
"use strict";
(function () {
  const $ = (sel) => document.querySelector(sel);
  const meta = document.querySelector('meta[name="vfsd-csrf"]');
  const csrf = meta ? meta.getAttribute("content") : "";
  const main = $("#session");
  const sid = main ? main.dataset.session : "";

  function status(text, isError) {
    const el = $("#status");
    if (!el) return;
    el.hidden = false;
    el.textContent = text;
    el.className = isError ? "error" : "ok";
  }

  // api calls the daemon's HTTP API with the page's cookie and CSRF token.
  async function api(method, path, body) {
    const opts = { method, headers: {}, credentials: "same-origin" };
    if (csrf) opts.headers["Vfsd-CSRF"] = csrf;
    if (body !== undefined) {
      opts.headers["Content-Type"] = "application/json";
      opts.body = JSON.stringify(body);
    }
    const resp = await fetch(path, opts);
    const text = await resp.text();
    let data = null;
    try { data = text ? JSON.parse(text) : null; } catch (e) { data = null; }
    if (!resp.ok) {
      const msg = data && data.error ? data.error.code + ": " + data.error.message : "HTTP " + resp.status;
      throw new Error(msg);
    }
    return data;
  }

  function on(sel, fn) {
    const el = $(sel);
    if (el) el.addEventListener("click", (ev) => { ev.preventDefault(); run(el, fn); });
  }

  async function run(el, fn) {
    el.disabled = true;
    try { await fn(el); } catch (e) { status(String(e.message || e), true); } finally { el.disabled = false; }
  }

  // reloadSoon shows text, then reloads the page (or goes to href).
  function reloadSoon(text, href) {
    status(text, false);
    setTimeout(() => { if (href) location.href = href; else location.reload(); }, 400);
  }
  const sessionPage = "/ui/s/" + encodeURIComponent(sid);

  const base = "/v1/sessions/" + encodeURIComponent(sid);

  on("#btn-snapshot", async () => {
    const label = ($("#snap-label") || {}).value || "";
    const snap = await api("POST", base + "/snapshots", label ? { label } : {});
    reloadSoon("Snapshot " + snap.id.slice(0, 12) + " taken.");
  });

  // rewindTarget reads what the reviewer typed as `vfsd session rewind
  // --to` does: a call number (4, #4, call:4), a journal position (@12,
  // seq:12), a time (RFC 3339, "2026-11-22 08:31:02" local, or 15m, 2h30m
  // ago), else a snapshot ID or prefix. The answer is the body of POST
  // /v1/sessions/{id}/rewind: exactly one of call, seq, time, snapshot.
  function rewindTarget(to) {
    to = String(to || "").trim();
    if (!to) throw new Error("say what to rewind to: a call number, @POSITION from the log, a snapshot or a time");
    let m = /^(?:call:|#)?(\d+)$/.exec(to);
    if (m) {
      if (Number(m[1]) === 0) throw new Error("calls are numbered from 1; @0 is the session's start");
      return { call: Number(m[1]) };
    }
    m = /^(?:@|seq:)(.*)$/.exec(to);
    if (m) {
      if (!/^\d+$/.test(m[1])) throw new Error(to + ": give a journal position after @ (from the log)");
      return { seq: Number(m[1]) };
    }
    if (/^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}/.test(to)) {
      const t = new Date(to.includes("T") ? to : to.replace(" ", "T"));
      if (isNaN(t.getTime())) throw new Error(to + " is not a time: use 2026-11-22T08:31:02Z or 2026-11-22 08:31:02");
      return { time: t.toISOString() };
    }
    m = /^(?:\d+(?:\.\d+)?(?:ms|s|m|h))+$/.exec(to);
    if (m) {
      const unit = { ms: 1, s: 1e3, m: 6e4, h: 36e5 };
      let ms = 0;
      for (const [, n, u] of to.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h)/g)) ms += Number(n) * unit[u];
      return { time: new Date(Date.now() - ms).toISOString() };
    }
    return { snapshot: to };
  }

  async function rewind(to) {
    const body = rewindTarget(to);
    const rep = await api("POST", base + "/rewind", body);
    reloadSoon("Rewound to @" + rep.to + " (it was at @" + rep.from + ").", sessionPage);
  }
  on("#btn-rewind", async () => rewind(($("#rewind-to") || {}).value || ""));
  document.querySelectorAll("button.rewind").forEach((b) =>
    b.addEventListener("click", (ev) => { ev.preventDefault(); run(b, () => rewind(b.dataset.to)); }));

  on("#btn-rebase", async () => {
    const rep = await api("POST", base + "/rebase", {});
    const n = rep && rep.conflicts ? rep.conflicts.length : 0;
    reloadSoon(n ? "Rebased with " + n + " conflict(s): see the diff." : "Rebased on the host's current folders.", sessionPage);
  });

  function fillList(ul, items, conflict) {
    ul.replaceChildren();
    for (const c of items) {
      const li = document.createElement("li");
      li.textContent = c.action + " " + c.path + (conflict ? " — " + c.conflict : "") + (c.note ? " (" + c.note + ")" : "");
      ul.appendChild(li);
    }
  }

  on("#btn-apply-preview", async () => {
    const rep = await api("POST", base + "/apply", { dry_run: true });
    const applied = rep.applied || [], conflicts = rep.conflicts || [];
    $("#apply-summary").textContent = applied.length + " change(s) would be written to the host" +
      (conflicts.length ? ", " + conflicts.length + " conflict(s) left alone" : "") +
      ((rep.outside || []).length ? ", " + rep.outside.length + " path(s) outside the folders" : "") + ".";
    fillList($("#apply-list"), applied, false);
    fillList($("#apply-conflicts"), conflicts, true);
    $("#apply-conflicts-h").hidden = conflicts.length === 0;
    $("#btn-apply-confirm").hidden = applied.length === 0;
    $("#apply-preview").hidden = false;
  });
  on("#btn-apply-cancel", async () => { $("#apply-preview").hidden = true; });
  on("#btn-apply-confirm", async () => {
    const rep = await api("POST", base + "/apply", { dry_run: false });
    const applied = rep.applied || [], conflicts = rep.conflicts || [];
    $("#apply-preview").hidden = true;
    reloadSoon("Applied " + applied.length + " change(s)" + (conflicts.length ? "; " + conflicts.length + " conflict(s) left alone" : "") + ".", sessionPage);
  });

  on("#btn-close", async () => {
    $("#btn-close").hidden = true;
    $("#btn-close-confirm").hidden = false;
  });
  on("#btn-close-confirm", async () => {
    await api("DELETE", base);
    status("Session closed.", false);
    setTimeout(() => { location.href = "/ui/"; }, 400);
  });

  on("#btn-logout", async () => {
    await api("POST", "/ui/logout");
    location.href = "/ui/";
  });

  const next = document.querySelector("#next[data-follow]");
  if (next) location.replace(next.getAttribute("href"));
})();
