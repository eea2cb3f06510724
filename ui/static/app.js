// vfsd review page: the buttons, live updates, keys and times. Text this
// script shows is set with textContent. The one place it takes HTML is a
// live update: the facts and timeline the page's own server rendered for
// GET /ui/s/{id}/live with the same escaping templates as the page itself,
// swapped in for the old ones (DOMParser runs no script; the CSP forbids
// inline script and handlers anyway).
"use strict";
(function () {
  const $ = (sel) => document.querySelector(sel);
  const meta = document.querySelector('meta[name="vfsd-csrf"]');
  const csrf = meta ? meta.getAttribute("content") : "";
  const page = $("#session");
  const sid = page ? page.dataset.session : "";
  const sessionPage = "/ui/s/" + encodeURIComponent(sid);
  const base = "/v1/sessions/" + encodeURIComponent(sid);

  // --- status: what an action did, kept across the reload that follows it.
  let undo = null;
  function status(text, isError, undoTo) {
    const el = $("#status");
    if (!el) return;
    el.hidden = false;
    $("#status-text").textContent = text;
    el.className = isError ? "error" : "ok";
    el.setAttribute("role", isError ? "alert" : "status");
    undo = undoTo === undefined || undoTo === null ? null : undoTo;
    $("#btn-undo").hidden = undo === null;
  }
  // flash shows text on the next page (after a reload or a move).
  function flash(text, isError, undoTo) {
    try { sessionStorage.setItem("vfsd-status", JSON.stringify({ text, isError, undoTo })); } catch (e) { /* private mode */ }
  }
  try {
    const f = sessionStorage.getItem("vfsd-status");
    if (f) {
      sessionStorage.removeItem("vfsd-status");
      const m = JSON.parse(f);
      status(m.text, m.isError, m.undoTo);
    }
  } catch (e) { /* nothing kept */ }
  function done(text, undoTo, href) {
    flash(text, false, undoTo);
    if (href && href !== location.pathname + location.search) location.href = href; else location.reload();
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

  async function run(el, fn) {
    if (el) el.disabled = true;
    try { await fn(el); } catch (e) { status(String(e.message || e), true); } finally { if (el) el.disabled = false; }
  }
  function on(sel, fn) {
    const el = $(sel);
    if (el) el.addEventListener("click", (ev) => { ev.preventDefault(); run(el, fn); });
  }
  function onSubmit(sel, button, fn) {
    const form = $(sel);
    if (form) form.addEventListener("submit", (ev) => { ev.preventDefault(); run($(button), fn); });
  }
  const short = (id) => (/^[0-9a-f]{17,}$/.test(id) ? id.slice(0, 12) : id);

  // --- times: "3 min ago", by the rules of the server's ui.Ago, kept fresh;
  // the exact local time on hover.
  function ago(now, t) {
    let d = now - t;
    const future = d < 0;
    if (future) d = -d;
    let s;
    if (d < 10e3) return future ? "in a moment" : "just now";
    else if (d < 60e3) s = Math.floor(d / 1e3) + " s";
    else if (d < 3600e3) s = Math.floor(d / 60e3) + " min";
    else if (d < 48 * 3600e3) s = Math.floor(d / 3600e3) + " h";
    else if (d < 14 * 86400e3) s = Math.floor(d / 86400e3) + " days";
    else return new Date(t).toISOString().slice(0, 10);
    return future ? "in " + s : s + " ago";
  }
  function times() {
    const now = Date.now();
    document.querySelectorAll("time[datetime]").forEach((el) => {
      const t = Date.parse(el.getAttribute("datetime"));
      if (isNaN(t)) return;
      el.textContent = ago(now, t);
      el.title = new Date(t).toLocaleString() + " (" + new Date(t).toISOString() + ")";
    });
  }
  times();
  setInterval(times, 20e3);

  // --- copy buttons.
  async function copy(btn) {
    const text = btn.dataset.copy;
    try {
      await navigator.clipboard.writeText(text);
    } catch (e) {
      const ta = document.createElement("textarea");
      ta.value = text;
      ta.setAttribute("readonly", "");
      ta.className = "sr-only";
      document.body.appendChild(ta);
      ta.select();
      document.execCommand("copy");
      ta.remove();
    }
    btn.textContent = "copied";
    setTimeout(() => { btn.textContent = "copy"; }, 1500);
    status("Copied " + text + ".", false);
  }

  // --- rewind.
  // rewindTarget reads what the reviewer typed as `vfsd session rewind
  // --to` does: a call number (4, #4, call:4), a journal position (@12,
  // seq:12), a time (RFC 3339, "2026-11-22 08:31:02" local, or 15m, 2h30m
  // ago), else a snapshot ID or prefix. The answer is the body of POST
  // /v1/sessions/{id}/rewind: exactly one of call, seq, time, snapshot.
  function rewindTarget(to) {
    to = String(to || "").trim();
    if (!to) throw new Error("say what to rewind to: a call number, @POSITION from the timeline, a snapshot or a time");
    let m = /^(?:call:|#)?(\d+)$/.exec(to);
    if (m) {
      if (Number(m[1]) === 0) throw new Error("calls are numbered from 1; @0 is the session's start");
      return { call: Number(m[1]) };
    }
    m = /^(?:@|seq:)(.*)$/.exec(to);
    if (m) {
      if (!/^\d+$/.test(m[1])) throw new Error(to + ": give a journal position after @ (from the timeline)");
      return { seq: Number(m[1]) };
    }
    if (/^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}/.test(to)) {
      const t = new Date(to.includes("T") ? to : to.replace(" ", "T"));
      if (isNaN(t.getTime())) throw new Error(to + " is not a time: use 2026-11-22T08:31:02Z or 2026-11-22 08:31:02");
      return { time: t.toISOString() };
    }
    if (/^(?:\d+(?:\.\d+)?(?:ms|s|m|h))+$/.test(to)) {
      const unit = { ms: 1, s: 1e3, m: 6e4, h: 36e5 };
      let ms = 0;
      for (const [, n, u] of to.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h)/g)) ms += Number(n) * unit[u];
      return { time: new Date(Date.now() - ms).toISOString() };
    }
    return { snapshot: to };
  }
  function describe(body) {
    if (body.call) return "before call #" + body.call;
    if (body.seq !== undefined) return "@" + body.seq;
    if (body.time) return "the state at " + new Date(body.time).toLocaleString();
    return "snapshot " + short(body.snapshot);
  }
  async function rewind(body) {
    const rep = await api("POST", base + "/rewind", body);
    const text = rep.restored
      ? "Restored snapshot " + short(rep.restored) + " (it is not in this session's history)."
      : "Rewound to " + describe(body) + ": now at @" + rep.to + ", was at @" + rep.from + ".";
    done(text, rep.from, sessionPage);
  }
  onSubmit("#form-rewind", "#btn-rewind", async () => rewind(rewindTarget(($("#rewind-to") || {}).value)));
  on("#btn-undo", async () => {
    if (undo === null) return;
    const rep = await api("POST", base + "/rewind", { seq: undo });
    done("Undone: back at @" + rep.to + ".", rep.from, sessionPage);
  });

  // --- snapshot.
  onSubmit("#form-snapshot", "#btn-snapshot", async () => {
    const label = ($("#snap-label") || {}).value || "";
    const snap = await api("POST", base + "/snapshots", label ? { label } : {});
    done("Snapshot " + short(snap.id) + " taken" + (label ? " (" + label + ")" : "") + ".");
  });

  function fillList(ul, items) {
    ul.replaceChildren();
    for (const text of items) {
      const li = document.createElement("li");
      li.textContent = text;
      ul.appendChild(li);
    }
  }

  // --- rebase: a dry run's preview first.
  on("#btn-rebase-preview", async () => {
    const rep = await api("POST", base + "/rebase", { dry_run: true });
    const conflicts = rep.conflicts || [];
    $("#rebase-summary").textContent = "The host's changes would come in: " + rep.taken_count + " path(s) taken from the host, " +
      rep.merged_count + " merged, " + rep.kept_count + " kept as the session has them, " + conflicts.length + " conflict(s).";
    fillList($("#rebase-list"), [].concat(
      (rep.taken || []).map((p) => "from the host: " + p),
      (rep.merged || []).map((p) => "merged: " + p),
      conflicts.map((c) => "conflict: " + c.path + " — " + c.reason + (c.resolution ? " (" + c.resolution + ")" : ""))));
    $("#rebase-preview").hidden = false;
    $("#btn-rebase-confirm").focus();
  });
  on("#btn-rebase-cancel", async () => { $("#rebase-preview").hidden = true; $("#btn-rebase-preview").focus(); });
  on("#btn-rebase-confirm", async () => {
    const rep = await api("POST", base + "/rebase", {});
    const n = (rep.conflicts || []).length;
    done("Rebased on the host: " + rep.taken_count + " taken, " + rep.merged_count + " merged" +
      (n ? ", " + n + " conflict(s): see the diff" : "") + ".", rep.seq > rep.seq_before ? rep.seq_before : null, sessionPage);
  });

  // --- apply: a dry run's preview first.
  const applyLine = (c, conflict) => c.action + " " + c.path + (conflict ? " — " + c.conflict : "") + (c.note ? " (" + c.note + ")" : "");
  on("#btn-apply-preview", async () => {
    const rep = await api("POST", base + "/apply", { dry_run: true });
    const applied = rep.applied || [], conflicts = rep.conflicts || [];
    $("#apply-summary").textContent = applied.length + " change(s) would be written to the host" +
      (conflicts.length ? ", " + conflicts.length + " conflict(s) left alone" : "") +
      ((rep.outside || []).length ? ", " + rep.outside.length + " path(s) outside the folders" : "") + ".";
    fillList($("#apply-list"), applied.map((c) => applyLine(c, false)));
    fillList($("#apply-conflicts"), conflicts.map((c) => applyLine(c, true)));
    $("#apply-conflicts-h").hidden = conflicts.length === 0;
    $("#btn-apply-confirm").hidden = applied.length === 0;
    $("#apply-preview").hidden = false;
    (applied.length ? $("#btn-apply-confirm") : $("#btn-apply-cancel")).focus();
  });
  on("#btn-apply-cancel", async () => { $("#apply-preview").hidden = true; $("#btn-apply-preview").focus(); });
  on("#btn-apply-confirm", async () => {
    const rep = await api("POST", base + "/apply", { dry_run: false });
    const applied = rep.applied || [], conflicts = rep.conflicts || [];
    done("Applied " + applied.length + " change(s) to the host" + (conflicts.length ? "; " + conflicts.length + " conflict(s) left alone" : "") + ".", null, sessionPage);
  });

  // --- close: a second press confirms.
  on("#btn-close", async () => {
    $("#btn-close").hidden = true;
    $("#btn-close-confirm").hidden = false;
    $("#btn-close-confirm").focus();
  });
  on("#btn-close-confirm", async () => {
    stopLive();
    await api("DELETE", base);
    done("Session " + short(sid) + " closed.", null, "/ui/");
  });

  on("#btn-logout", async () => {
    await api("POST", "/ui/logout");
    location.href = "/ui/";
  });

  // Buttons inside the timeline are replaced by live updates: one
  // listener for them all.
  document.addEventListener("click", (ev) => {
    const t = ev.target instanceof Element ? ev.target : null;
    const rw = t && t.closest("button.rewind");
    if (rw) {
      ev.preventDefault();
      const v = rw.dataset.value;
      const body = rw.dataset.key === "snapshot" ? { snapshot: v } : { [rw.dataset.key]: Number(v) };
      run(rw, () => rewind(body));
      return;
    }
    const cp = t && t.closest("button.copy");
    if (cp) {
      ev.preventDefault();
      run(cp, () => copy(cp));
    }
  });

  // --- live updates: the session's event stream (GET
  // /v1/sessions/{id}/events, server-sent events, the page's cookie
  // authenticating it) says when the session changed; the facts and the
  // timeline are then fetched again, one fetch at a time and at most one a
  // second, a burst of changes coalesced into one. While the page is hidden the stream is
  // closed; on return the page catches up (the stream does not replay).
  let es = null, timer = null, inflight = false, again = false, closed = false;
  const live = $("#live");
  function setLive(state, text) {
    if (!live) return;
    live.hidden = false;
    live.dataset.state = state;
    live.textContent = text;
  }
  async function refreshLive() {
    const resp = await fetch(sessionPage + "/live" + location.search, { credentials: "same-origin" });
    if (!resp.ok) return;
    const doc = new DOMParser().parseFromString(await resp.text(), "text/html");
    const focused = document.activeElement && document.activeElement.closest ? document.activeElement.closest("li.entry") : null;
    const focusIndex = focused ? focused.dataset.index : null;
    for (const id of ["facts", "timeline-body"]) {
      const fresh = doc.getElementById(id), old = document.getElementById(id);
      if (fresh && old) old.replaceWith(document.adoptNode(fresh));
    }
    if (focusIndex !== null) {
      const link = document.querySelector('li.entry[data-index="' + focusIndex + '"] a.entry-link');
      if (link) link.focus({ preventScroll: true });
    }
    const facts = $("#facts");
    if (page.dataset.whole && facts && facts.dataset.seq !== page.dataset.seq) $("#stale").hidden = false;
    times();
  }
  // A busy agent makes many changes a second, and each fetch reads the
  // session's history: at most one fetch a second, the latest state.
  let lastFetch = 0;
  function schedule() {
    if (timer) return;
    const wait = Math.max(300, 1000 - (Date.now() - lastFetch));
    timer = setTimeout(async () => {
      timer = null;
      if (inflight) { again = true; return; }
      inflight = true;
      lastFetch = Date.now();
      try { await refreshLive(); } catch (e) { /* the next change tries again */ } finally {
        inflight = false;
        if (again) { again = false; schedule(); }
      }
    }, wait);
  }
  function connect() {
    if (es || closed || !page || document.hidden || typeof EventSource === "undefined") return;
    es = new EventSource(base + "/events");
    setLive("connecting", "connecting…");
    es.addEventListener("open", () => setLive("on", "live"));
    es.addEventListener("change", schedule);
    es.addEventListener("lost", schedule);
    es.addEventListener("closed", () => {
      stopLive();
      closed = true;
      setLive("closed", "closed");
      status("This session was closed.", true);
    });
    es.addEventListener("error", () => {
      if (es && es.readyState === EventSource.CLOSED) {
        es = null;
        setLive("off", "not live: reload the page");
      } else {
        setLive("connecting", "reconnecting…");
      }
    });
  }
  function stopLive() {
    if (es) { es.close(); es = null; }
  }
  document.addEventListener("visibilitychange", () => {
    if (document.hidden) {
      if (es) { stopLive(); setLive("off", "paused"); }
    } else if (!closed && page) {
      connect();
      schedule();
    }
  });
  connect();

  // --- keys.
  const keys = $("#keys");
  function showKeys() { if (keys && !keys.open) keys.showModal(); }
  on("#btn-keys", async () => showKeys());
  on("#btn-keys-close", async () => keys.close());
  function move(step) {
    const links = Array.from(document.querySelectorAll("#timeline-body a.whole, #timeline-body a.entry-link"));
    if (!links.length) return;
    // From outside the timeline the first key goes to the step shown.
    let i = links.indexOf(document.activeElement);
    if (i >= 0) i = Math.max(0, Math.min(links.length - 1, i + step));
    else i = links.findIndex((a) => a.getAttribute("aria-current") === "page");
    if (i < 0) i = step > 0 ? 0 : links.length - 1;
    links[i].focus();
    links[i].scrollIntoView({ block: "nearest" });
  }
  function jumpFile(step) {
    const files = Array.from(document.querySelectorAll("article.file"));
    if (!files.length) return;
    const cur = document.activeElement && document.activeElement.closest ? document.activeElement.closest("article.file") : null;
    let i = files.indexOf(cur);
    if (i < 0) {
      // the first file below the top of the window, or the last above it
      i = files.findIndex((f) => f.getBoundingClientRect().top > 1);
      i = step > 0 ? (i < 0 ? files.length - 1 : i) : (i < 0 ? files.length - 1 : i - 1);
    } else {
      i += step;
    }
    i = Math.max(0, Math.min(files.length - 1, i));
    files[i].focus({ preventScroll: true });
    files[i].scrollIntoView({ block: "start" });
  }
  document.addEventListener("keydown", (ev) => {
    if (ev.ctrlKey || ev.metaKey || ev.altKey || ev.defaultPrevented) return;
    const t = ev.target instanceof Element ? ev.target : null;
    if (t && t.closest("input, textarea, select, [contenteditable]")) return;
    if (keys && keys.open) return; // the dialog handles Escape itself
    const act = {
      j: () => move(1), k: () => move(-1), n: () => jumpFile(1), p: () => jumpFile(-1),
      f: () => { const f = $("#files"); if (f) { f.focus(); f.scrollIntoView({ block: "nearest" }); } },
      g: () => { if (page) location.href = sessionPage; },
      "?": showKeys,
      Escape: () => {
        for (const id of ["#apply-preview", "#rebase-preview"]) { const el = $(id); if (el) el.hidden = true; }
        if ($("#btn-close-confirm") && !$("#btn-close-confirm").hidden) { $("#btn-close-confirm").hidden = true; $("#btn-close").hidden = false; }
      },
    }[ev.key];
    if (act) { ev.preventDefault(); act(); }
  });

  const next = document.querySelector("#next[data-follow]");
  if (next) location.replace(next.getAttribute("href"));
})();
