// agentlog console: the task list and a task's records, from /console/api (see the module
// docs of agentlog::http::console). Plain DOM, no framework; data is only ever set as text.
"use strict";

const STATES = ["SUBMITTED", "WORKING", "INPUT_REQUIRED", "AUTH_REQUIRED", "COMPLETED", "FAILED", "CANCELED", "REJECTED"];
const TERMINAL = new Set(["TASK_STATE_COMPLETED", "TASK_STATE_FAILED", "TASK_STATE_CANCELED", "TASK_STATE_REJECTED"]);
const REFRESH_MS = 1000;

const $ = (id) => document.getElementById(id);
const session = window.sessionStorage;
let view = null; // what is shown: {kind: "list"} or {kind: "task", agent, id}
let listTimer = null;
let follow = null; // the open records stream: an AbortController

// --- requests -----------------------------------------------------------------------------

function headers() {
  const h = {};
  const token = session.getItem("agentlog.token");
  if (token) h["Authorization"] = "Bearer " + token;
  return h;
}

function withTenant(params) {
  const tenant = session.getItem("agentlog.tenant");
  if (tenant) params.set("tenant", tenant);
  return params;
}

async function api(path, params, method) {
  const query = withTenant(params || new URLSearchParams()).toString();
  const response = await fetch("/console/api/" + path + (query ? "?" + query : ""), {
    method: method || "GET", headers: headers(), cache: "no-store",
  });
  const body = await response.json().catch(() => ({}));
  if (!response.ok) throw problemOf(response.status, body);
  return body;
}

function problemOf(status, body) {
  const error = (body && body.error) || {};
  const e = new Error(error.message || "HTTP " + status);
  e.status = status;
  return e;
}

function showProblem(error) {
  const p = $("problem");
  if (!error) { p.hidden = true; return; }
  p.textContent = error.message;
  p.hidden = false;
  if (error.status === 401 || error.status === 403) $("signin").hidden = false;
}

// --- helpers ------------------------------------------------------------------------------

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null) continue;
    if (k === "class") node.className = v;
    else if (k.startsWith("data-")) node.setAttribute(k, v);
    else node[k] = v;
  }
  for (const child of children) {
    if (child === undefined || child === null) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function stateName(state) {
  return String(state || "").replace(/^TASK_STATE_/, "").toLowerCase().replace(/_/g, "-");
}

function stateBadge(state) {
  return el("span", { class: "state " + stateName(state), "data-state": state }, stateName(state) || "?");
}

function clock(ms) {
  const d = new Date(ms);
  return d.toLocaleTimeString([], { hour12: false }) + "." + String(d.getMilliseconds()).padStart(3, "0");
}

function duration(ms) {
  if (ms < 1000) return ms + " ms";
  if (ms < 60000) return (ms / 1000).toFixed(ms < 10000 ? 2 : 1) + " s";
  if (ms < 3600000) return Math.floor(ms / 60000) + " min " + Math.round((ms % 60000) / 1000) + " s";
  return (ms / 3600000).toFixed(1) + " h";
}

function taskHref(agent, id) {
  return "#/task/" + encodeURIComponent(agent) + "/" + encodeURIComponent(id);
}

// --- the list -----------------------------------------------------------------------------

let nextToken = "";

function listParams() {
  const p = new URLSearchParams();
  const set = (key, value) => { if (value) p.set(key, value); };
  set("binding", $("f-binding").value);
  set("agent", $("f-agent").value);
  set("state", $("f-state").value);
  set("context", $("f-context").value.trim());
  const since = $("f-since").value;
  if (since) p.set("since", new Date(Date.now() - Number(since) * 1000).toISOString());
  return p;
}

async function refreshList(append) {
  try {
    const params = listParams();
    if (append && nextToken) params.set("pageToken", nextToken);
    const [page, counts] = await Promise.all([
      api("tasks", params),
      append ? null : api("counts", countParams()),
    ]);
    if (view.kind !== "list") return;
    const body = $("tasks");
    if (!append) body.replaceChildren();
    for (const task of page.tasks) {
      body.append(el("tr", { class: "task", "data-task-id": task.id, "data-agent": task.agent,
          onclick: () => { location.hash = taskHref(task.agent, task.id); } },
        el("td", { class: "mono" }, task.timestamp ? new Date(task.timestamp).toLocaleString() : ""),
        el("td", {}, stateBadge(task.state)),
        el("td", {}, task.agent + (task.binding === "mcp" ? " (MCP)" : "")),
        el("td", { class: "mono" }, el("a", { href: taskHref(task.agent, task.id) }, task.id)),
        el("td", { class: "mono" }, task.contextId),
        el("td", {}, task.summary)));
    }
    nextToken = page.nextPageToken;
    $("more").hidden = !nextToken;
    $("empty").hidden = body.children.length > 0;
    if (counts) showCounts(counts.counts);
    showProblem(null);
    $("live").classList.add("on");
  } catch (error) {
    $("live").classList.remove("on");
    showProblem(error);
  }
}

function countParams() {
  const p = new URLSearchParams();
  if ($("f-binding").value) p.set("binding", $("f-binding").value);
  if ($("f-agent").value) p.set("agent", $("f-agent").value);
  return p;
}

function showCounts(counts) {
  const box = $("counts");
  box.replaceChildren();
  const chosen = $("f-state").value;
  for (const state of STATES) {
    const full = "TASK_STATE_" + state;
    box.append(el("span", { class: "count" + (chosen === full ? " active" : ""), "data-state": full,
        onclick: () => { $("f-state").value = chosen === full ? "" : full; restartList(); } },
      stateName(full), el("b", {}, counts[full] || 0)));
  }
}

function restartList() {
  nextToken = "";
  refreshList(false);
}

function showList() {
  view = { kind: "list" };
  clearInterval(claimTimer);
  $("task-view").hidden = true;
  $("list-view").hidden = false;
  restartList();
  clearInterval(listTimer);
  // Live: the first page and the counts again every second (only while this tab is seen).
  listTimer = setInterval(() => { if (!document.hidden && view.kind === "list") refreshList(false); }, REFRESH_MS);
}

// --- a task -------------------------------------------------------------------------------

let lastTime = null;
let lastOffset = null;
let claim = null; // the last claim that applied: {attempt, source, leaseUntil}
let traceId = null; // the W3C trace id the task's command came with
let taskState = null;
let claimTimer = null;

async function showTask(agent, id) {
  view = { kind: "task", agent, id };
  clearInterval(listTimer);
  $("list-view").hidden = true;
  $("task-view").hidden = false;
  $("task-id").textContent = id;
  $("timeline").replaceChildren();
  $("caught-up").hidden = true;
  $("task-facts").replaceChildren();
  lastTime = null;
  lastOffset = null;
  claim = null;
  traceId = null;
  taskState = null;
  clearInterval(claimTimer);
  claimTimer = setInterval(showClaim, REFRESH_MS);
  await loadTask();
  openRecords();
}

async function loadTask() {
  const { agent, id } = view;
  try {
    const body = await api("tasks/" + encodeURIComponent(agent) + "/" + encodeURIComponent(id));
    showTaskHead(body);
    showProblem(null);
  } catch (error) {
    showProblem(error);
  }
}

function showTaskHead(body) {
  const task = body.task;
  $("task-state").replaceChildren(stateBadge(task.status.state));
  $("cancel").disabled = TERMINAL.has(task.status.state);
  const facts = $("task-facts");
  facts.replaceChildren();
  const fact = (name, value) => { facts.append(el("dt", {}, name), el("dd", { class: "mono" }, value)); };
  fact("agent", body.agent + (body.binding === "mcp" ? " (MCP tool agent)" : ""));
  fact("context", task.contextId);
  fact("status time", task.status.timestamp ? new Date(task.status.timestamp).toLocaleString() : "");
  fact("messages", String((task.history || []).length));
  fact("artifacts", String((task.artifacts || []).length));
  facts.append(el("dt", {}, "claim"), el("dd", { id: "claim", class: "mono" }));
  facts.append(el("dt", {}, "trace"), el("dd", { id: "trace", class: "mono" }, traceId || "none"));
  taskState = task.status.state;
  showClaim();
}

// Who holds the turn, and whether its lease ran out: what a stuck task shows.
function showClaim() {
  const box = $("claim");
  if (!box) return;
  if (!claim) { box.textContent = TERMINAL.has(taskState) ? "none" : "none yet (no worker took the turn)"; return; }
  const left = claim.leaseUntil - Date.now();
  let text = "attempt " + claim.attempt + " by " + claim.source;
  if (TERMINAL.has(taskState)) text += " (finished)";
  else if (left >= 0) text += ", lease for " + duration(left);
  else text += ", lease ran out " + duration(-left) + " ago; no worker has taken the turn over yet";
  box.textContent = text;
  box.classList.toggle("expired", !TERMINAL.has(taskState) && left < 0);
}

function openRecords() {
  if (follow) follow.abort();
  const controller = new AbortController();
  follow = controller;
  const { agent, id } = view;
  const h = headers();
  if (lastOffset !== null) h["Last-Event-ID"] = String(lastOffset);
  const query = withTenant(new URLSearchParams()).toString();
  const url = "/console/api/tasks/" + encodeURIComponent(agent) + "/" + encodeURIComponent(id) + "/records" + (query ? "?" + query : "");
  fetch(url, { headers: h, signal: controller.signal, cache: "no-store" }).then(async (response) => {
    if (!response.ok) {
      const body = await response.json().catch(() => ({}));
      throw problemOf(response.status, body);
    }
    $("live").classList.add("on");
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      let cut;
      while ((cut = buffer.indexOf("\n\n")) >= 0) {
        const frame = buffer.slice(0, cut);
        buffer = buffer.slice(cut + 2);
        onFrame(frame);
      }
    }
    throw new Error("the records stream ended");
  }).catch((error) => {
    if (controller.signal.aborted) return;
    $("live").classList.remove("on");
    showProblem(error);
    // Resume after the last record shown, once the server is back.
    if (error.status === undefined && follow === controller) setTimeout(() => { if (follow === controller) openRecords(); }, 1000);
  });
}

function onFrame(frame) {
  let event = "message";
  const data = [];
  for (const line of frame.split("\n")) {
    if (line.startsWith(":")) continue;
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
    if (field === "event") event = value;
    else if (field === "data") data.push(value);
  }
  if (!data.length) return;
  const text = data.join("\n");
  if (event === "caught-up") {
    $("caught-up").hidden = false;
    loadTask();
    $("timeline").setAttribute("data-caught-up", "true");
  } else if (event === "error") {
    showProblem(new Error(JSON.parse(text).error.message));
  } else {
    addRecord(JSON.parse(text));
  }
}

function addRecord(record) {
  const marks = el("td", {});
  const classes = ["record"];
  if (record.claim === "renewal") classes.push("renewal");
  if (record.claim === "takeover") { marks.append(el("span", { class: "mark takeover" }, "takeover")); classes.push("takeover"); }
  if (record.verdict === "ignored") {
    const fenced = record.reason === "fenced";
    marks.append(el("span", { class: "mark " + (fenced ? "fenced" : "ignored") }, fenced ? "fenced" : "ignored: " + record.reason));
    classes.push(fenced ? "fenced" : "ignored");
  } else if (record.verdict === "rejected") {
    marks.append(el("span", { class: "mark rejected" }, "rejected: " + record.reason));
    classes.push("rejected");
  }
  if (caughtUp()) classes.push("fresh");
  const after = lastTime === null ? "" : "+" + duration(Math.max(0, record.time - lastTime));
  // Renewals are hidden by default: the other rows' durations skip them.
  if (record.claim !== "renewal") lastTime = record.time;
  lastOffset = record.offset;
  if (record.kind === "command" && record.trace) {
    traceId = record.trace.split("-")[1];
    if ($("trace")) $("trace").textContent = traceId;
  }
  if (record.kind === "claim" && record.verdict === "applied") {
    claim = { attempt: record.attempt, source: record.source, leaseUntil: record.leaseUntil };
    showClaim();
  }
  let what = record.summary || "";
  if (record.kind === "claim") {
    const lease = record.leaseUntil ? " · lease " + duration(Math.max(0, record.leaseUntil - record.time)) : "";
    what = (record.claim ? record.claim + " claim of " : "claim of ") + "turn " + record.turn + lease;
  }
  const kindCell = el("td", { class: "kind" }, record.kind);
  if (record.state) kindCell.append(" ", stateBadge(record.state));
  const row = el("tr", { class: classes.join(" "), "data-offset": record.offset, "data-kind": record.kind,
      "data-verdict": record.verdict, "data-claim": record.claim || "", "data-reason": record.reason || "",
      "data-time": record.time, "data-shown-at": Date.now(), "data-live": caughtUp() ? "true" : "false",
      "data-trace": record.trace || "" },
    el("td", { class: "mono" }, record.partition + ":" + record.offset),
    el("td", { class: "mono" }, clock(record.time)),
    el("td", { class: "mono muted" }, after),
    kindCell,
    el("td", { class: "mono" }, record.attempt ? String(record.attempt) : ""),
    el("td", { class: "mono" }, record.source),
    el("td", { class: "what" }, what),
    marks);
  row.addEventListener("click", () => toggleDetail(row, record));
  $("timeline").append(row);
  // The task's head follows its state, once the history is out.
  if (caughtUp() && record.verdict === "applied" && ["status", "terminal", "cancel", "reply", "command", "continue"].includes(record.kind)) {
    loadTask();
  }
}

function caughtUp() {
  return !$("caught-up").hidden;
}

function toggleDetail(row, record) {
  const next = row.nextElementSibling;
  if (next && next.classList.contains("detail")) { next.remove(); return; }
  const shown = { messageId: record.messageId, hops: record.hops, signed: record.signed };
  if (record.trace) shown.traceparent = record.trace;
  if (record.detail !== null && record.detail !== undefined) shown.content = record.detail;
  row.after(el("tr", { class: "detail" }, el("td", { colSpan: 8 }, el("pre", {}, JSON.stringify(shown, null, 2)))));
}

async function cancelTask() {
  const { agent, id } = view;
  $("cancel").disabled = true;
  try {
    const body = await api("tasks/" + encodeURIComponent(agent) + "/" + encodeURIComponent(id) + "/cancel", null, "POST");
    showTaskHead(body);
    showProblem(null);
  } catch (error) {
    showProblem(error);
    loadTask();
  }
}

// --- start --------------------------------------------------------------------------------

function route() {
  if (follow) { follow.abort(); follow = null; }
  const match = location.hash.match(/^#\/task\/([^/]+)\/(.+)$/);
  if (match) showTask(decodeURIComponent(match[1]), decodeURIComponent(match[2]));
  else showList();
}

async function start() {
  for (const state of STATES) $("f-state").append(el("option", { value: "TASK_STATE_" + state }, stateName("TASK_STATE_" + state)));
  $("token").value = session.getItem("agentlog.token") || "";
  $("tenant").value = session.getItem("agentlog.tenant") || "";
  $("signin").addEventListener("submit", (event) => {
    event.preventDefault();
    session.setItem("agentlog.token", $("token").value.trim());
    session.setItem("agentlog.tenant", $("tenant").value.trim());
    start2();
  });
  for (const id of ["f-binding", "f-agent", "f-state", "f-since"]) $(id).addEventListener("change", restartList);
  $("f-context").addEventListener("input", restartList);
  $("filters").addEventListener("submit", (event) => event.preventDefault());
  $("more").addEventListener("click", () => refreshList(true));
  $("cancel").addEventListener("click", cancelTask);
  $("show-renewals").addEventListener("change", (event) => {
    $("timeline-table").classList.toggle("renewals", event.target.checked);
  });
  window.addEventListener("hashchange", route);
  start2();
}

async function start2() {
  try {
    const body = await api("agents");
    if (body.auth) $("signin").hidden = false;
    const agents = $("f-agent");
    agents.replaceChildren(el("option", { value: "" }, "all"));
    for (const agent of body.agents) agents.append(el("option", { value: agent.name }, agent.name + (agent.binding === "mcp" ? " (MCP)" : "")));
    $("agents").textContent = body.agents.map((a) => a.name).join(", ");
    showProblem(null);
  } catch (error) {
    showProblem(error);
  }
  route();
}

start();
