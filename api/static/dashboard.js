// crawl-ledger dashboard: local times, select-all, live timelines and overview (SSE),
// chart hover.
// Served from the package; it loads nothing from elsewhere.
"use strict";

// the state a job is in after each event (as projections/job_status.py applies them)
const JOB_STATE_AFTER = {
  "CrawlJob.Dispatched": "dispatched", "CrawlJob.Leased": "leased",
  "CrawlJob.Succeeded": "succeeded", "CrawlJob.Failed": "failed",
  "CrawlJob.LeaseExpired": "failed", "CrawlJob.DeadLettered": "dead",
  "CrawlJob.Completed": "completed", "CrawlJob.Rescheduled": "scheduled",
  "CrawlJob.RunAbandoned": "scheduled", "CrawlJob.Paused": "paused",
  "CrawlJob.Resumed": "scheduled", "CrawlJob.Cancelled": "cancelled",
  "CrawlJob.LeaseReleased": "scheduled", "CrawlJob.RetryRequested": "scheduled",
};

function localTimes(root) {
  for (const el of root.querySelectorAll("time[datetime]")) {
    const when = new Date(el.getAttribute("datetime"));
    if (!isNaN(when)) {
      el.textContent = when.toLocaleString(undefined, {dateStyle: "medium", timeStyle: "short"});
      el.title = el.getAttribute("datetime");
    }
  }
}

function selectAll() {
  const all = document.getElementById("all");
  if (!all) return;
  all.addEventListener("change", () => {
    for (const box of document.querySelectorAll("input[name=ids]")) box.checked = all.checked;
  });
}

function eventItem(e) {
  const li = document.createElement("li");
  li.className = "event fresh";
  li.dataset.type = e.event_type;
  li.dataset.key = `${e.stream_id}:${e.version}`;
  const type = document.createElement("span");
  type.className = "etype";
  type.textContent = e.event_type;
  const at = document.createElement("span");
  at.className = "eat";
  const time = document.createElement("time");
  time.setAttribute("datetime", e.occurred_at);
  time.textContent = e.occurred_at;
  at.append(time);
  li.append(type, " ", at);
  const p = e.payload || {};
  if (p.actor) {
    const who = document.createElement("span");
    who.className = "eactor";
    who.textContent = `by ${p.actor}` + (p.surface ? ` via ${p.surface}` : "");
    li.append(" ", who);
  }
  const reason = e.event_type.endsWith(".PriceChanged")
    ? `${p.option}: ${p.old_special || p.old} → ${p.new_special || p.new} ${p.currency || ""}`
    : p.reason || p.error_kind || p.message;
  if (reason) {
    const r = document.createElement("span");
    r.className = "ereason";
    r.textContent = String(reason);
    li.append(" ", r);
  }
  const lineage = ["job_id", "lease_id", "worker", "child_job", "attempt"].filter((k) => p[k]);
  if (lineage.length) {
    const l = document.createElement("span");
    l.className = "elineage";
    l.textContent = lineage.map((k) => `${k}=${p[k]}`).join(" ");
    li.append(" ", l);
  }
  localTimes(li);
  return li;
}

function liveTimeline() {
  const list = document.getElementById("timeline");
  if (!list || !list.dataset.stream || !window.EventSource) return;
  const live = document.getElementById("live");
  const filter = document.getElementById("type-filter");
  const newestFirst = list.dataset.newestFirst === "1";
  const streamFilter = list.dataset.streamFilter || "";
  const typeShown = (li) => !filter || !filter.value || li.dataset.type.toLowerCase().includes(filter.value.toLowerCase());
  const shown = (li) => typeShown(li) && li.dataset.key.startsWith(streamFilter);
  if (filter) {
    filter.addEventListener("input", () => {
      for (const li of list.children) li.hidden = !shown(li);
    });
    for (const li of list.children) li.hidden = !shown(li);
  }
  const source = new EventSource(list.dataset.stream, {withCredentials: true});
  source.onopen = () => { if (live) live.textContent = "live"; };
  source.onerror = () => { if (live) live.textContent = "reconnecting…"; };
  source.onmessage = (message) => {
    const item = eventItem(JSON.parse(message.data));
    if (list.querySelector(`li[data-key="${CSS.escape(item.dataset.key)}"]`)) return;  // shown already
    item.hidden = !shown(item);
    const empty = document.getElementById("no-events");
    if (empty) empty.remove();
    if (newestFirst) list.prepend(item); else list.append(item);
    const state = document.getElementById("job-state");
    const next = JOB_STATE_AFTER[item.dataset.type];
    if (state && next) {
      state.textContent = next;
      state.className = `state state-${next}`;
    }
    while (list.children.length > 500) (newestFirst ? list.lastElementChild : list.firstElementChild).remove();
  };
}

function chartTips() {
  const tip = document.getElementById("tip");
  if (!tip) return;
  const line = (text, className) => {
    const div = document.createElement("div");
    div.textContent = text;
    if (className) div.className = className;
    tip.append(div);
  };
  const link = (href, text, className) => {
    const a = document.createElement("a");
    a.href = href;
    a.textContent = text;
    a.className = className;
    tip.append(a, " ");
  };
  const show = (point) => {
    const d = point.dataset;
    tip.replaceChildren();
    const when = new Date(d.at);
    line(d.series || "", "tip-series");
    // old → new when the series' price moved at this point
    line((d.old ? `${d.old} → ${d.price}` : d.price) + ` ${d.currency}`, d.old ? "tip-change" : "tip-price");
    if (d.regular) line(`regular ${d.regular} ${d.currency}`);
    line(`${d.availability} · ${isNaN(when) ? d.at : when.toLocaleString()}`);
    if (d.job) {
      const job = encodeURIComponent(d.job);
      link(`/jobs/${job}`, `seen by job ${d.job.slice(0, 8)}`, "tip-job");
      link(`/jobs/${job}/raw?at=${encodeURIComponent(d.at)}`, "raw page", "tip-raw");
    }
    tip.hidden = false;
    for (const other of document.querySelectorAll("circle.point.active")) other.classList.remove("active");
    point.classList.add("active");
  };
  for (const point of document.querySelectorAll("circle.point")) {
    point.addEventListener("mouseenter", () => show(point));
    point.addEventListener("focus", () => show(point));
  }
}

// the overview follows the event stream: after new events (at most every 2 s) it
// reads the page again and swaps in its live sections (counters, charts, pipeline)
function liveOverview() {
  const root = document.getElementById("overview");
  if (!root || !root.dataset.stream || !window.EventSource) return;
  const live = document.getElementById("live");
  let pending = false;
  const refresh = async () => {
    pending = false;
    const answer = await fetch(window.location.pathname, {credentials: "same-origin"});
    if (!answer.ok) return;
    const fresh = new DOMParser().parseFromString(await answer.text(), "text/html");
    for (const section of root.querySelectorAll("[data-live][id]")) {
      const next = fresh.getElementById(section.id);
      if (next) {
        localTimes(next);
        section.replaceWith(document.importNode(next, true));
      }
    }
    root.dataset.refreshed = String(Number(root.dataset.refreshed || 0) + 1);
  };
  const source = new EventSource(root.dataset.stream, {withCredentials: true});
  source.onopen = () => { if (live) live.textContent = "live"; };
  source.onerror = () => { if (live) live.textContent = "reconnecting…"; };
  source.onmessage = () => {
    if (pending) return;
    pending = true;
    setTimeout(refresh, 2000);
  };
}

document.addEventListener("DOMContentLoaded", () => {
  localTimes(document);
  selectAll();
  liveTimeline();
  liveOverview();
  chartTips();
});
