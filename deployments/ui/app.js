"use strict";
// The live page: reads ui/state every few seconds and a session from ui/session/<id>. Every value from the server
// (which holds what models and filings wrote: URLs, IDs) goes in as text, through dom.js (the run viewer's too).
(() => {
  const REFRESH_MS = 3000;
  const TOKEN_KEY = "finsec-admin-token";
  const $ = (id) => document.getElementById(id);

  const { el } = finsecDom;
  const fmt = (x, digits = 1) => finsecDom.fmt(x, digits);
  const pct = (x) => (x === null || x === undefined ? "-" : `${(100 * x).toFixed(1)}%`);

  function facts(dl, pairs) {
    dl.replaceChildren(...pairs.flatMap(([name, value]) => [el("dt", {}, name), el("dd", {}, value)]));
  }

  function rows(table, list, cells) {
    table.tBodies[0].replaceChildren(...list.map((item) => el("tr", {}, ...cells(item).map((c) => el("td", {}, c)))));
  }

  function headers() {
    const token = sessionStorage.getItem(TOKEN_KEY);
    return token ? { Authorization: `Bearer ${token}` } : {};
  }

  async function read(path) {
    const response = await fetch(path, { headers: headers(), cache: "no-store" });
    if (response.status === 401) {
      sessionStorage.removeItem(TOKEN_KEY);
      $("token").hidden = false;
      $("live").hidden = true;
      throw new Error("needs the admin token");
    }
    const body = await response.json().catch(() => ({}));
    if (!response.ok) throw new Error(body.detail || `${path}: ${response.status}`);
    return body;
  }

  function draw(state) {
    $("app").textContent = state.app;
    const live = state.telemetry || {};
    const replicas = live.replicas || [];
    $("subtitle").textContent = `version ${state.version} · ${replicas.length} replica(s) reporting · ${new Date().toLocaleTimeString()}`;
    facts($("sessions"), [
      ["open", state.sessions.open],
      ["episodes", state.sessions.episode],
      ["agent runs", state.sessions.agent_run],
      [`stalled (idle ≥ ${state.stalled.after_seconds} s)`, state.stalled.count],
    ]);
    const rates = live.rates || {};
    facts($("rates"), [
      ["seeds", fmt(rates.seeds, 2)],
      ["closes", fmt(rates.closes, 2)],
      ["verifies", fmt(rates.verifies, 2)],
    ]);
    if (!live.ok) $("rates").append(el("dt", {}, "telemetry"), el("dd", { class: "outcome-failed" }, live.problem));
    const rewards = Object.entries(live.rewards || {});
    rows($("rewards"), rewards, ([window, r]) => [window, r.scored, fmt(r.mean, 3), `${r.masked} (${pct(r.masked_share)})`]);
    facts($("store"), [
      ["mark store", state.mark_store.ok ? "ok" : `refusing: ${state.mark_store.problem}`],
      ["documents held", state.held.documents],
      ["fences", state.held.fences],
      ["expired marks", state.held.expired_marks],
    ]);
    rows($("routes"), Object.entries(live.routes || {}), ([route, r]) => [
      route,
      fmt(r.per_second, 2),
      r.calls_5m,
      fmt(r.p50_ms_5m),
      fmt(r.p99_ms_5m),
      r.failed_5m,
    ]);
    rows($("replicas"), replicas, (r) => {
      const a = r.admission || {};
      const refused = Object.values(a.refused || {}).reduce((x, y) => x + y, 0);
      return [r.replica, r.seconds_since, fmt(r.loop_lag_ms.last), fmt(r.loop_lag_ms.max_1m), a.running, a.waiting, a.places, refused];
    });
    rows($("shards"), state.shards, (s) => [s.shard, s.settled ? "yes" : "no", s.sessions, fmt(s.clock_step, 3)]);
    const named = state.stalled.idlest.length > 0 || state.stalled.count === 0;
    $("stalled-count").textContent = named
      ? `${state.stalled.count} stalled`
      : `${state.stalled.count} stalled (set admin_token to list them)`;
    rows($("stalled"), state.stalled.idlest, (s) => {
      const open = el("button", { type: "button", class: "session-link" }, s.id);
      open.addEventListener("click", () => inspect(s.id));
      return [open, s.kind, fmt(s.idle_seconds, 0)];
    });
  }

  async function refresh() {
    try {
      draw(await read("ui/state"));
      $("live").hidden = false;
      $("token").hidden = true;
    } catch (error) {
      $("subtitle").textContent = `not refreshed: ${error.message}`;
    }
  }

  async function inspect(sid) {
    $("inspect").elements.sid.value = sid;
    const out = $("inspected");
    let shown;
    try {
      shown = await read(`ui/session/${encodeURIComponent(sid)}`);
    } catch (error) {
      out.replaceChildren(el("p", { class: "outcome-failed" }, error.message));
      return;
    }
    const list = el("dl");
    const pairs = [["session", shown.id], ["open", shown.open ? "yes" : "no"]];
    if (shown.fence_cause) pairs.push(["fenced", shown.fence_cause]);
    if (shown.open) {
      pairs.push(
        ["kind", shown.kind],
        ["age s", fmt(shown.age_seconds)],
        ["idle s", fmt(shown.idle_seconds)],
        ["time left s", fmt(shown.ttl_left_seconds)],
      );
      if (shown.budget_left_seconds !== undefined) pairs.push(["tool budget left s", fmt(shown.budget_left_seconds)]);
      if (shown.episode_id) pairs.push(["episode", JSON.stringify(shown.episode_id)]);
      if (shown.task_id) pairs.push(["task", `${shown.task_id.taskset}/${shown.task_id.task_id}`]);
    }
    facts(list, pairs);
    const documents = el("table", { id: "documents" }, el("thead", {}, el("tr", {}, ...["key", "URL", "characters", "digest"].map((h) => el("th", {}, h)))), el("tbody"));
    rows(documents, shown.documents || [], (d) => [d.key, d.url, d.chars, d.digest]);
    const verdicts = el("table", { id: "verdicts" }, el("thead", {}, el("tr", {}, ...["reward", "failure kind", "judge rating"].map((h) => el("th", {}, h)))), el("tbody"));
    rows(verdicts, shown.verdicts || [], (v) => [v.reward, v.failure_kind || "-", v.judge_rating ?? "-"]);
    const calls = el("table", { id: "calls" }, el("thead", {}, el("tr", {}, ...["when", "route", "status", "ms"].map((h) => el("th", {}, h)))), el("tbody"));
    rows(calls, shown.calls || [], (c) => [new Date(c.at * 1000).toLocaleTimeString(), c.route, c.status, fmt(c.ms)]);
    out.replaceChildren(
      list,
      el("h3", {}, "Documents"),
      documents,
      el("h3", {}, "Verdicts"),
      verdicts,
      el("h3", {}, shown.calls === null ? "Last calls (the telemetry hub did not answer)" : "Last calls"),
      calls,
    );
  }

  $("token").addEventListener("submit", (event) => {
    event.preventDefault();
    sessionStorage.setItem(TOKEN_KEY, $("token").elements.token.value);
    refresh();
  });
  $("inspect").addEventListener("submit", (event) => {
    event.preventDefault();
    const sid = $("inspect").elements.sid.value.trim();
    if (sid) inspect(sid);
  });
  refresh();
  setInterval(refresh, REFRESH_MS);
})();
