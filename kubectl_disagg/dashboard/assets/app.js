// kubectl disagg rollout dashboard: draws the server's document (views/dashboard.py), live.
// Every piece of cluster text is set with textContent (never as markup): a name or a message
// holding "<script>" is shown as those characters. No build step, no library, nothing fetched
// but this server's own document and stream.
"use strict";

(function () {
  const token = new URLSearchParams(location.search).get("token") || "";
  const csrf = document.querySelector('meta[name="disagg-csrf"]').content;
  const api = (path) => path + "?token=" + encodeURIComponent(token);
  const drawn = new Map();   // set key → the JSON it was last drawn from
  const reasons = new Map(); // set key → the reason typed (kept across redraws)
  let model = null;
  let received = 0;

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (key === "class") node.className = value;
      else if (key === "text") node.textContent = String(value);
      else if (key.startsWith("data-") || key === "title" || key === "id" || key === "href" || key === "type" ||
               key === "placeholder" || key === "colspan") node.setAttribute(key, String(value));
      else node[key] = value;
    }
    for (const child of children) {
      if (child === null || child === undefined || child === false) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  function since(at, now) {
    if (!at) return "";
    const seconds = Math.round((Date.parse(now) - Date.parse(at)) / 1000);
    if (isNaN(seconds)) return at;
    if (seconds < 2) return "just now";
    if (seconds < 90) return seconds + "s ago";
    if (seconds < 5400) return Math.round(seconds / 60) + "m ago";
    return Math.round(seconds / 3600) + "h ago";
  }

  function left(until) {
    const seconds = Math.round((Date.parse(until) - Date.now()) / 1000);
    if (isNaN(seconds)) return until;
    if (seconds <= 0) return "passed";
    const m = Math.floor(seconds / 60), s = seconds % 60;
    return (m ? m + "m " : "") + s + "s left";
  }

  function slices(start, end) {
    return end - start === 1 ? "slice " + start : "slices " + start + "-" + (end - 1);
  }

  // --- one set ---------------------------------------------------------------------------------

  function drawSet(set, page) {
    const section = el("section", {class: "set", id: "set-" + set.key, "data-key": set.key,
      "data-version": set.stateVersion});
    const title = el("div", {class: "title"},
      el("h2", {text: set.name}), el("span", {class: "muted", text: set.namespace}));
    section.append(title);
    if (set.problem) {
      section.append(el("div", {class: "problem", text: set.problem}));
      return section;
    }
    title.append(el("span", {class: "badge " + set.phase, "data-phase": set.phase, text: set.phase}));
    if (set.stable && set.rolloutRevision) {
      title.append(el("span", {class: "muted", text: "stable " + set.stable + " → " + set.rolloutRevision +
        (set.aborted ? " (aborted: back to " + set.stable + ")" : "")}));
    } else {
      title.append(el("span", {class: "muted", text: "revision " + set.revision}));
    }
    if (set.lines && set.lines.length) {
      const lines = el("ul", {class: "lines"});
      for (const line of set.lines) lines.append(el("li", {text: line}));
      section.append(lines);
    }
    for (const problem of set.problems || []) section.append(el("div", {class: "problem", text: problem}));
    if (set.sync) {
      section.append(el("div", {class: "panel sync", "data-next": set.sync.nextAction},
        el("h3", {text: "committed in git, against the cluster"}),
        el("div", {text: "next: " + set.sync.nextAction + (set.sync.synced ? ", synced" : ", not synced") +
          (set.sync.ready ? ", ready" : ", not ready")}),
        ...set.sync.reasons.map((reason) => el("div", {class: "muted", text: reason}))));
    }
    section.append(drawActions(set, page));
    if (set.waves && set.waves.length) {
      const waves = el("div", {class: "waves", "data-waves": set.waves.length});
      for (const wave of set.waves) {
        waves.append(el("span", {class: "wave " + wave.state.replace(" ", "-") + (wave.current ? " current" : ""),
          "data-wave": wave.wave, "data-state": wave.state,
          text: "wave " + wave.wave + ": " + slices(wave.start, wave.end) + " (" + wave.state + ")"}));
      }
      section.append(waves);
    }
    const panels = el("div", {class: "panels"});
    if (set.gate) panels.append(drawGate(set.gate, page));
    if (set.verdict) panels.append(drawVerdict(set.verdict));
    if (set.budget) {
      panels.append(el("div", {class: "panel budget"}, el("h3", {text: "budget"}),
        el("div", {"data-in-flight": set.budget.inFlight,
          text: set.budget.inFlight + " in flight of " + (set.budget.max === null ? "no limit" : set.budget.max)}),
        el("div", {class: "muted", text: set.budget.done + " of " + set.budget.slices + " slices done, " +
          set.budget.held + " held"})));
    }
    if (set.paused) panels.append(stamp("paused", set.paused, page));
    if (set.aborted) panels.append(stamp("aborted", set.aborted, page));
    if (panels.childNodes.length) section.append(panels);
    section.append(drawGrid(set));
    if (set.history && set.history.length) section.append(drawHistory(set.history));
    if (set.events && set.events.length) section.append(drawEvents(set.events, page));
    return section;
  }

  function stamp(what, s, page) {
    return el("div", {class: "panel " + what}, el("h3", {text: what}),
      el("div", {text: "by " + s.by + ", " + since(s.at, page.now)}),
      s.reason ? el("div", {class: "reason", text: "why: " + s.reason}) : null);
  }

  function drawGate(gate, page) {
    const panel = el("div", {class: "panel gate", "data-gate": gate.kind, "data-waits-for": gate.waitsFor},
      el("h3", {text: "gate after wave " + (gate.wave + 1) + (gate.atGate ? " (waiting here)" : " (ahead)")}));
    if (gate.waitsFor === "soak") {
      panel.append(el("div", {class: "soak", "data-until": gate.until, text: "soak: " + left(gate.until)}));
    } else if (gate.waitsFor === "promote") {
      panel.append(el("div", {text: "waits for: promote"}));
    } else {
      panel.append(el("div", {text: "waits for: analysis" + (gate.failed ? " (failed)" : "")}));
    }
    if (gate.held) panel.append(el("div", {class: "muted", text: gate.held}));
    if (gate.checks && gate.checks.length) panel.append(checksTable(gate.checks));
    return panel;
  }

  function checksTable(checks) {
    const table = el("table", {class: "checks"},
      el("tr", {}, el("th", {text: "check"}), el("th", {text: "latest"}), el("th", {text: "condition"}),
        el("th", {text: "phase"})));
    for (const check of checks) {
      table.append(el("tr", {"data-check": check.name, "data-ok": check.ok === null ? "" : String(check.ok)},
        el("td", {text: check.name}),
        el("td", {class: "value", text: check.error ? "error: " + check.error : (check.value === null ? "–" : check.value)}),
        el("td", {class: "condition", text: check.condition || ""}), el("td", {text: check.phase})));
    }
    return table;
  }

  function drawVerdict(verdict) {
    return el("div", {class: "panel verdict", "data-wave": verdict.wave, "data-phase": verdict.phase},
      el("h3", {text: "analysis after wave " + (verdict.wave + 1) + ": " + verdict.phase}),
      checksTable(verdict.checks), el("div", {class: "muted", text: verdict.message}));
  }

  // Roles down, slices across: ten rows of up to a hundred cells fit one screen; the waves are
  // bands over the slices, a boundary a thicker line, the wave in flight marked.
  function drawGrid(set) {
    const count = set.grid.length;
    const table = el("table", {class: "grid", "data-slices": count, "data-roles": set.roles.length});
    table.style.setProperty("--cell", Math.max(8, Math.min(34, Math.floor(1100 / Math.max(count, 1)))) + "px");
    const states = new Map((set.waves || []).map((w) => [w.wave, w]));
    const bands = el("tr", {class: "bands"}, el("th", {text: "wave"}));
    const numbers = el("tr", {class: "numbers"}, el("th", {text: "slice"}));
    const step = count > 50 ? 10 : count > 20 ? 5 : 1;
    let previous = null;
    for (const row of set.grid) {
      const wave = row.wave === null ? null : states.get(row.wave);
      const boundary = previous !== null && row.wave !== previous;
      const first = row.wave !== previous;
      previous = row.wave;
      bands.append(el("th", {class: "wave-band " + (wave ? wave.state.replace(" ", "-") : "") + (wave && wave.current ? " current" : "") +
        (boundary ? " boundary" : ""), "data-wave": row.wave, title: wave ? "wave " + wave.wave + " (" + wave.state + ")" : "",
        text: first && wave ? String(wave.wave) : ""}));
      numbers.append(el("th", {class: "number" + (boundary ? " boundary" : ""),
        text: row.slice % step === 0 ? String(row.slice) : ""}));
    }
    table.append(bands, numbers);
    set.roles.forEach((role, index) => {
      const tr = el("tr", {"data-role": role}, el("th", {class: "role", text: role}));
      let before = null;
      for (const row of set.grid) {
        const cell = row.cells[index];
        const runs = cell.runs.map((r) => r.revision + " (" + r.class + "): " + r.ready + "/" + r.replicas + " ready");
        tr.append(el("td", {class: "cell" + (before !== null && row.wave !== before ? " boundary" : ""),
          "data-slice": row.slice, "data-role": cell.role, "data-class": cell.class,
          "data-ready": cell.ready ? "true" : "false",
          title: "slice " + row.slice + ", " + cell.role + "\n" + (runs.join("\n") || "nothing runs")}));
        before = row.wave;
      }
      table.append(tr);
    });
    const legend = el("div", {class: "legend muted"});
    for (const [name, label] of [["new", "new revision"], ["stable", "stable"], ["aborted", "aborted"],
      ["mixed", "two revisions"], ["other", "other"], ["absent", "none"]]) {
      legend.append(el("span", {}, el("i", {class: "swatch", "data-class": name}), label));
    }
    legend.append(el("span", {text: "striped: not ready"}));
    return el("div", {class: "grid-wrap"}, legend, table);
  }

  function drawHistory(history) {
    const table = el("table", {class: "history"},
      el("tr", {}, el("th", {text: "revision"}), el("th", {text: "started"}), el("th", {text: "by"}),
        el("th", {text: "outcome"}), el("th", {text: "why"})));
    for (const entry of history) {
      table.append(el("tr", {"data-revision": entry.revision},
        el("td", {text: entry.revision + (entry.back ? " (back)" : "") + (entry.retry ? " (retry)" : "")}),
        el("td", {text: entry.started}), el("td", {text: entry.by}),
        el("td", {text: entry.outcome + (entry.endedBy ? " by " + entry.endedBy : "")}),
        el("td", {text: entry.why})));
    }
    return el("details", {open: true}, el("summary", {text: "history"}), table);
  }

  function drawEvents(events, page) {
    const table = el("table", {class: "events"});
    for (const event of events) {
      table.append(el("tr", {"data-reason": event.reason},
        el("td", {class: "muted", text: since(event.time, page.now)}), el("td", {text: event.type}),
        el("td", {text: event.reason}), el("td", {text: event.regarding}), el("td", {class: "note", text: event.note})));
    }
    return el("details", {open: true}, el("summary", {text: "recent events"}), table);
  }

  // --- actions ---------------------------------------------------------------------------------

  const VERBS = ["promote", "pause", "resume", "abort", "retry", "undo"];

  function drawActions(set, page) {
    if (set.commands) {
      const list = el("ul", {class: "commands"});
      for (const [verb, command] of Object.entries(set.commands)) {
        list.append(el("li", {"data-verb": verb}, verb + ": ", el("code", {text: command})));
      }
      return el("details", {class: "actions-git"}, el("summary", {text: "act through git (no button writes git)"}), list);
    }
    if (!page.actions || !set.phase || !set.stable) return el("div");
    const reason = el("input", {type: "text", placeholder: "reason (required, recorded with who acted)",
      "data-reason-for": set.key, value: reasons.get(set.key) || ""});
    const buttons = VERBS.map((verb) => el("button", {type: "button", "data-verb": verb, text: verb,
      disabled: !(reasons.get(set.key) || "").trim()}));
    reason.addEventListener("input", () => {
      reasons.set(set.key, reason.value);
      for (const button of buttons) button.disabled = !reason.value.trim();
    });
    for (const button of buttons) {
      button.addEventListener("click", () => act(set, button.dataset.verb, reason.value, buttons));
    }
    return el("div", {class: "actions"}, reason, ...buttons);
  }

  async function act(set, verb, reason, buttons) {
    for (const button of buttons) button.disabled = true;
    let answer;
    try {
      const response = await fetch(api("/api/action"), {method: "POST", credentials: "omit",
        headers: {"Content-Type": "application/json", "X-Disagg-CSRF": csrf},
        body: JSON.stringify({namespace: set.namespace, name: set.name, verb: verb, reason: reason,
          stateVersion: set.stateVersion})});
      answer = await response.json();
    } catch (error) {
      answer = {ok: false, message: String(error)};
    }
    if (answer.ok) reasons.delete(set.key);
    notice(answer.message, answer.ok);
    drawn.delete(set.key); // draw it again from the next document (or this one)
    if (model) draw(model);
  }

  function notice(message, ok) {
    const box = document.getElementById("notice");
    box.hidden = false;
    box.dataset.ok = ok ? "true" : "false";
    box.textContent = message;
  }

  // --- the page --------------------------------------------------------------------------------

  function draw(page) {
    model = page;
    document.getElementById("scope").textContent = page.scope + (page.mode === "gitops" ? " (through git)" : "");
    const behind = document.getElementById("behind");
    behind.hidden = !page.behind.length;
    behind.textContent = page.behind.map((b) => "behind: " + b.kind + (b.namespace ? " in " + b.namespace : "") +
      (b.since ? " since " + b.since : "") + ": " + b.why).join("\n");
    connection(page.behind.length ? "behind" : "live");
    const main = document.getElementById("sets"), index = document.getElementById("index");
    const keys = new Set(page.sets.map((s) => s.key));
    for (const [key] of drawn) {
      if (!keys.has(key)) { drawn.delete(key); const gone = document.getElementById("set-" + key); if (gone) gone.remove(); }
    }
    let before = null;
    for (const set of page.sets) {
      const text = JSON.stringify(set) + page.actions;
      let node = document.getElementById("set-" + set.key);
      if (drawn.get(set.key) !== text || !node) {
        const fresh = drawSet(set, page);
        if (node) node.replaceWith(fresh); else main.append(fresh);
        node = fresh;
        drawn.set(set.key, text);
      }
      if (before && before.nextSibling !== node) before.after(node);
      before = node;
    }
    index.replaceChildren(...(page.sets.length > 1 ? page.sets.map((s) =>
      el("a", {href: "#set-" + s.key, text: s.namespace + "/" + s.name + (s.phase ? " · " + s.phase : "")})) : []));
    if (!page.sets.length) main.replaceChildren(el("p", {class: "muted", text: "no DisaggregatedSet here"}));
    document.body.dataset.received = String(++received);
    if (received === 1) window.__firstDrawnAt = performance.now(); // the benchmark's first paint
    document.body.dataset.now = page.now;
  }

  function connection(state) {
    const box = document.getElementById("connection");
    box.dataset.state = state;
    box.textContent = {live: "live", behind: "behind the cluster", lost: "connection lost: reconnecting…",
      connecting: "connecting…"}[state];
  }

  function tick() { // the soak countdowns move between documents
    for (const soak of document.querySelectorAll(".soak[data-until]")) soak.textContent = "soak: " + left(soak.dataset.until);
  }

  const stream = new EventSource(api("/api/stream"));
  stream.addEventListener("model", (event) => {
    window.__dashboardModelAt = performance.now();
    draw(JSON.parse(event.data));
  });
  stream.addEventListener("error", () => connection("lost"));
  setInterval(tick, 1000);
})();
