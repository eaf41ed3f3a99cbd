"use strict";
// The run viewer: reads the runs embedded in the page and draws them, every value as text (dom.js, which the page
// holds before this script).
(() => {
  const DATA = JSON.parse(document.getElementById("finsec-data").textContent);
  const PAGE = 200; // episode rows drawn at a time
  const FOLD = 160; // characters of a long text shown before it is unfolded
  const LIFECYCLE = new Set(["seed_session", "verify", "close_session"]); // every other route is a tool's

  const { el } = finsecDom;
  const fmt = (x, digits = 2) => finsecDom.fmt(x, digits);
  const share = (n, d) => (d ? `${((100 * n) / d).toFixed(1)}%` : "-");

  function quantile(sorted, q) {
    return sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] : null;
  }

  // A call failed when it got no reply or a status of 400 or more; a tool's failure is a tool error.
  const callFailed = (call) => call.status === null || call.status === undefined || call.status >= 400;
  const toolErrors = (episode) =>
    (episode.calls || []).filter((call) => !LIFECYCLE.has(call.route) && callFailed(call)).length;

  // Every episode of every run, flat, with its run's index.
  const episodes = [];
  DATA.runs.forEach((run, r) => run.episodes.forEach((episode) => episodes.push({ run: r, ...episode })));
  episodes.sort((a, b) => a.run - b.run || a.episode - b.episode);

  function summary(run) {
    const scored = run.episodes.filter((e) => e.outcome === "scored" && e.reward !== null);
    const rewards = scored.map((e) => e.reward);
    const mean = rewards.length ? rewards.reduce((a, b) => a + b, 0) / rewards.length : null;
    const passed = rewards.filter((x) => x >= DATA.threshold).length;
    const latency = new Map();
    for (const episode of run.episodes) {
      for (const call of episode.calls || []) {
        const row = latency.get(call.route) || { ms: [], failed: 0 };
        row.ms.push(call.ms);
        row.failed += callFailed(call) ? 1 : 0;
        latency.set(call.route, row);
      }
    }
    return {
      total: run.episodes.length,
      scored: scored.length,
      masked: run.episodes.filter((e) => e.outcome === "masked").length,
      failed: run.episodes.filter((e) => e.outcome === "failed").length,
      mean,
      passed,
      rewards,
      latency,
    };
  }

  function histogram(rewards) {
    const bins = new Array(10).fill(0);
    for (const x of rewards) bins[Math.min(9, Math.max(0, Math.floor(x * 10)))] += 1;
    const top = Math.max(1, ...bins);
    const bars = el("div", { class: "histogram", "data-testid": "histogram" });
    bins.forEach((count, i) => {
      const bar = el("div", { "data-count": String(count) });
      bar.style.height = `${(100 * count) / top}%`;
      bar.title = `${(i / 10).toFixed(1)}-${((i + 1) / 10).toFixed(1)}: ${count}`;
      bars.append(bar);
    });
    return el("div", {}, bars, el("div", { class: "axis" }, el("span", {}, "0"), el("span", {}, "reward"), el("span", {}, "1")));
  }

  function latencyTable(latency) {
    const body = el("tbody");
    for (const [route, row] of [...latency.entries()].sort()) {
      const sorted = row.ms.slice().sort((a, b) => a - b);
      body.append(
        el(
          "tr",
          {},
          el("td", {}, route),
          el("td", { class: "num" }, sorted.length),
          el("td", { class: "num" }, fmt(quantile(sorted, 0.5), 1)),
          el("td", { class: "num" }, fmt(quantile(sorted, 0.99), 1)),
          el("td", { class: "num" }, row.failed),
        ),
      );
    }
    const head = el("tr", {}, ...["route", "calls", "p50 ms", "p99 ms", "failed"].map((h) => el("th", {}, h)));
    return el("table", { class: "latency" }, el("thead", {}, head), body);
  }

  function drawRuns() {
    const cards = document.getElementById("runs");
    DATA.runs.forEach((run, r) => {
      const s = summary(run);
      const facts = [
        ["episodes", s.total],
        ["scored", s.scored],
        ["masked", `${s.masked} (${share(s.masked, s.total)})`],
        ["failed", `${s.failed} (${share(s.failed, s.total)})`],
        ["mean reward", fmt(s.mean, 3)],
        [`passed (reward ≥ ${DATA.threshold})`, `${s.passed} (${share(s.passed, s.scored)})`],
      ];
      const options = run.options || {};
      if (options.policy) facts.push(["policy", options.model ? `${options.policy}: ${options.model}` : options.policy]);
      const list = el("dl");
      for (const [name, value] of facts) list.append(el("dt", {}, name), el("dd", {}, value));
      cards.append(
        el(
          "article",
          { class: "card", "data-run": String(r) },
          el("h3", {}, run.name),
          list,
          el("h3", {}, "Rewards of scored episodes"),
          histogram(s.rewards),
          el("h3", {}, "Latency by route"),
          latencyTable(s.latency),
        ),
      );
    });
    const names = DATA.runs.map((run) => run.name).join(", ");
    document.getElementById("subtitle").textContent = `${episodes.length} episodes from ${names}`;
  }

  function drawProfiles() {
    const section = document.getElementById("profiles");
    section.append(el("h2", {}, "Reward profiles (hardest first)"));
    DATA.runs.forEach((run) => {
      const head = el(
        "tr",
        {},
        ...["task", "scored", ...DATA.ks.map((k) => `pass@${k}`), "mean", "std", "masked", "tools", "flat groups"].map(
          (h) => el("th", {}, h),
        ),
      );
      const body = el("tbody");
      for (const task of run.profile) {
        body.append(
          el(
            "tr",
            {},
            el("td", { title: task.question }, `${task.taskset}/${task.task_id}`),
            el("td", { class: "num" }, task.episodes),
            ...DATA.ks.map((k) => el("td", { class: "num" }, fmt(task.pass_at[String(k)]))),
            el("td", { class: "num" }, fmt(task.mean_reward)),
            el("td", { class: "num" }, fmt(task.std_reward)),
            el("td", { class: "num" }, share(task.masked, task.episodes + task.masked)),
            el("td", { class: "num" }, fmt(task.tool_calls, 1)),
            el("td", { class: "num" }, task.groups ? `${task.flat_groups}/${task.groups}` : "-"),
          ),
        );
      }
      section.append(el("h3", {}, run.name), el("table", { class: "profile" }, el("thead", {}, head), body));
    });
  }

  // A long text folded: its first characters as the summary, the whole when unfolded.
  function folded(label, text) {
    if (text === null || text === undefined) return null;
    const value = typeof text === "string" ? text : JSON.stringify(text, null, 1);
    if (value.length <= FOLD) return el("div", {}, el("span", { class: "muted" }, `${label}: `), value);
    const head = `${label} (${value.length} characters): ${value.slice(0, FOLD)}…`;
    return el("details", {}, el("summary", {}, head), el("pre", {}, value));
  }

  function detail(episode) {
    const facts = el("dl");
    const add = (name, value) => {
      if (value !== null && value !== undefined && value !== "") facts.append(el("dt", {}, name), el("dd", {}, value));
    };
    add("question", episode.question);
    add("expected answer", episode.expected_answer);
    add("answer", episode.final_answer);
    add("reward", episode.reward === null ? null : String(episode.reward));
    if (episode.masked) add("masked", [episode.failure_kind, episode.failure_reason].filter(Boolean).join(": "));
    if (episode.failure) {
      const where = episode.failure.route ? ` at ${episode.failure.route}` : "";
      add("failed", `${episode.failure.kind}${where}: ${episode.failure.detail}`);
    }
    if (episode.grader) add("grader", JSON.stringify(episode.grader, null, 1));
    if (episode.judge_rating !== null && episode.judge_rating !== undefined) add("judge rating", String(episode.judge_rating));
    add("judge's explanation", episode.judge_text);
    add("session", episode.resources_session_id);
    const calls = el("ol", { class: "calls" });
    for (const call of episode.calls || []) {
      const flags = [call.retried ? "retried" : "", call.error || ""].filter(Boolean).join(" · ");
      const headText = `${call.route}  ${call.status === null ? "no reply" : call.status}  ${fmt(call.ms, 1)} ms`;
      calls.append(
        el(
          "li",
          { "data-route": call.route },
          el("div", { class: callFailed(call) ? "call-head call-error" : "call-head" }, headText, flags ? `  ${flags}` : ""),
          folded("sent", call.body),
          folded("reply", call.reply),
        ),
      );
    }
    return el("div", {}, facts, el("h3", {}, `Calls (${(episode.calls || []).length})`), calls);
  }

  // Filters.
  const form = document.getElementById("filters");
  const runSelect = form.elements.run;
  const taskSelect = form.elements.task;
  runSelect.append(el("option", { value: "" }, "any"));
  DATA.runs.forEach((run, r) => runSelect.append(el("option", { value: String(r) }, run.name)));
  taskSelect.append(el("option", { value: "" }, "any"));
  const taskKey = (e) => `${e.taskset}/${e.task_id}`;
  for (const key of [...new Set(episodes.map(taskKey))].sort()) taskSelect.append(el("option", { value: key }, key));

  function matches(episode) {
    const f = form.elements;
    if (f.run.value !== "" && episode.run !== Number(f.run.value)) return false;
    if (f.task.value !== "" && taskKey(episode) !== f.task.value) return false;
    if (f.outcome.value !== "" && episode.outcome !== f.outcome.value) return false;
    const low = f.reward_min.value === "" ? null : Number(f.reward_min.value);
    const high = f.reward_max.value === "" ? null : Number(f.reward_max.value);
    if ((low !== null || high !== null) && (episode.reward === null || episode.reward === undefined)) return false;
    if (low !== null && episode.reward < low) return false;
    if (high !== null && episode.reward > high) return false;
    if (f.tool_error.checked && toolErrors(episode) === 0) return false;
    const text = f.text.value.trim().toLowerCase();
    if (text) {
      const haystack = [episode.question, episode.final_answer, taskKey(episode)].join("\n").toLowerCase();
      if (!haystack.includes(text)) return false;
    }
    return true;
  }

  const tbody = document.querySelector("#episodes tbody");
  const more = document.getElementById("more");
  let shown = [];
  let drawn = 0;

  function row(episode) {
    const tr = el(
      "tr",
      { class: "episode", "data-episode": String(episode.episode), "data-run": String(episode.run) },
      el("td", {}, DATA.runs[episode.run].name),
      el("td", { class: "num" }, episode.episode),
      el("td", { title: episode.question || "" }, taskKey(episode)),
      el("td", { class: `outcome-${episode.outcome}` }, episode.outcome),
      el("td", { class: "num" }, episode.reward === null ? "-" : fmt(episode.reward, 3)),
      el("td", { class: "num" }, (episode.tools || []).length),
      el("td", { class: "num" }, toolErrors(episode)),
      el("td", { class: "num" }, fmt(episode.seconds, 1)),
    );
    tr.addEventListener("click", () => {
      const next = tr.nextElementSibling;
      if (next && next.classList.contains("detail")) {
        next.remove();
        tr.classList.remove("open");
        return;
      }
      tr.classList.add("open");
      tr.after(el("tr", { class: "detail" }, el("td", { colspan: "8" }, detail(episode))));
    });
    return tr;
  }

  function drawMore() {
    const next = shown.slice(drawn, drawn + PAGE);
    for (const episode of next) tbody.append(row(episode));
    drawn += next.length;
    more.hidden = drawn >= shown.length;
  }

  function redraw() {
    shown = episodes.filter(matches);
    drawn = 0;
    tbody.replaceChildren();
    drawMore();
    document.getElementById("count").textContent = `${shown.length} of ${episodes.length} episodes`;
  }

  form.addEventListener("input", redraw);
  form.addEventListener("submit", (event) => event.preventDefault());
  more.addEventListener("click", drawMore);
  drawRuns();
  drawProfiles();
  redraw();
})();
