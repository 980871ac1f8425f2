// The page at /: asks /v1/retrieve with the trace and draws every hop. No build step, no external
// assets; text from the server is always inserted as text (textContent), never as HTML.
"use strict";

const $ = (id) => document.getElementById(id);
let jsonUrl = null;

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") node.className = v;
    else node.setAttribute(k, v);
  }
  for (const child of children) {
    if (child === null || child === undefined) continue;
    node.append(typeof child === "string" ? document.createTextNode(child) : child);
  }
  return node;
}

function ms(seconds) {
  return `${Math.round(1000 * (seconds || 0))} ms`;
}

// The chunk's text with the Labeler's useful words marked, found in order (they are the chunk's
// own words, in its order), each at a word boundary when it is a word.
function highlighted(text, words) {
  const out = el("span", { class: "chunk-text" });
  let pos = 0;
  for (const word of words || []) {
    let at = text.indexOf(word, pos);
    while (at >= 0 && !bounded(text, at, word.length)) at = text.indexOf(word, at + 1);
    if (at < 0) continue;
    out.append(text.slice(pos, at), el("mark", {}, word));
    pos = at + word.length;
  }
  out.append(text.slice(pos));
  return out;
}

// A match does not start or end inside a longer word.
function bounded(text, at, len) {
  const w = (ch) => /\w/.test(ch || "");
  const startOk = !w(text[at]) || !w(text[at - 1]);
  const endOk = !w(text[at + len - 1]) || !w(text[at + len]);
  return startOk && endOk;
}

function contents(doc) {
  return doc.title ? `${doc.title}: ${doc.text}` : doc.text;
}

function verdict(row) {
  if (row.seen) return ["seen", "already judged"];
  if (row.tag === "continue") return ["kept", row.floor ? "kept (floor)" : "kept"];
  if (row.floor) return ["kept", "dropped, kept by floor"];
  return ["dropped", "dropped"];
}

function hitRow(row, rank, docs) {
  const [cls, label] = verdict(row);
  const doc = docs[row.id];
  let body;
  if (doc && cls === "kept") body = highlighted(contents(doc), row.labeled_words);
  else if (doc) body = el("span", { class: "muted" }, contents(doc));
  else body = el("span", { class: "muted" }, "(text not kept by the backend)");
  const prob = row.continue_prob === undefined || row.continue_prob === null ? "–" : row.continue_prob.toFixed(3);
  return el(
    "tr",
    { class: `hit ${cls}`, "data-id": row.id, "data-labeled": String((row.labeled_words || []).length) },
    el("td", {}, String(rank + 1)),
    el("td", { class: "hit-id" }, row.id),
    el("td", { class: "prob", title: "the Tagger's Continue probability" }, prob),
    el("td", { class: "verdict" }, label),
    el("td", {}, body),
  );
}

function drawHop(hop, docs) {
  const t = hop.timings_s || {};
  const section = el(
    "section",
    { class: "hop", "data-hop": String(hop.hop) },
    el("h2", {}, `Hop ${hop.hop + 1}`),
    el("div", { class: "timings" },
      `retrieval ${ms(t.retrieval)} · Labeler ${ms(t.labeler)} · Filter ${ms(t.filter)}`),
  );
  hop.queries.forEach((query, qi) => {
    const table = el("table", { class: "hits" },
      el("tr", {}, el("th", {}, "#"), el("th", {}, "chunk"), el("th", {}, "p(continue)"),
        el("th", {}, "tag"), el("th", {}, "text (useful words marked)")));
    hop.hits[qi].forEach((row, rank) => table.append(hitRow(row, rank, docs)));
    section.append(el("div", { class: "query" }, "query: ", el("span", { class: "query-text" }, query)), table);
  });
  const next = el("ul", { class: "next-queries" });
  for (const q of hop.next_queries) next.append(el("li", { class: "next-query" }, q));
  section.append(el("div", {}, hop.next_queries.length ? "Filter's next-hop query:" : "no next-hop query (the branch ends)"), next);
  return section;
}

function draw(reply) {
  const out = $("out");
  out.replaceChildren();
  const result = reply.results[0];
  const docs = Object.assign({}, result.documents || {});
  for (const c of result.chunks) docs[c.id] = { title: c.title, text: c.text };
  for (const hop of result.trace) out.append(drawHop(hop, docs));
  const kept = el("ol", { class: "chunks" });
  for (const c of result.chunks) {
    kept.append(el("li", { class: "chunk", "data-id": c.id },
      el("strong", {}, c.title || c.id), ` (hop ${c.hop === null ? "?" : c.hop + 1}, p=${c.score.toFixed(3)}) `, c.text));
  }
  if (jsonUrl) URL.revokeObjectURL(jsonUrl);
  jsonUrl = URL.createObjectURL(new Blob([JSON.stringify(reply, null, 2)], { type: "application/json" }));
  out.append(
    el("h2", {}, `Kept ${result.chunks.length} chunks`), kept,
    el("p", {}, el("a", { id: "json-link", href: jsonUrl, download: "efficientrag-result.json" }, "the reply as JSON")),
  );
}

async function ask(event) {
  if (event) event.preventDefault();
  const question = $("question").value;
  const settings = {};
  for (const name of ["top_k", "max_hops"]) if ($(name).value) settings[name] = Number($(name).value);
  const headers = { "Content-Type": "application/json" };
  const token = $("token").value || sessionStorage.getItem("efficientrag-token");
  if (token) headers.Authorization = `Bearer ${token}`;
  const status = $("status");
  status.className = "";
  status.textContent = "retrieving…";
  $("go").disabled = true;
  try {
    const t0 = performance.now();
    const res = await fetch("/v1/retrieve", {
      method: "POST", headers, body: JSON.stringify({ question, settings, trace: true }),
    });
    const reply = await res.json();
    if (!res.ok) {
      if (res.status === 401) $("token-label").hidden = false;
      throw new Error(`${res.status}: ${reply.detail || res.statusText}`);
    }
    if (token) sessionStorage.setItem("efficientrag-token", token);
    draw(reply);
    const hops = reply.results[0].trace.length;
    status.textContent = `${hops} hop${hops === 1 ? "" : "s"} in ${Math.round(performance.now() - t0)} ms`;
    history.replaceState(null, "", `?q=${encodeURIComponent(question)}`);
  } catch (err) {
    status.className = "error";
    status.textContent = String(err.message || err);
  } finally {
    $("go").disabled = false;
  }
}

$("ask").addEventListener("submit", ask);
const initial = new URLSearchParams(location.search).get("q");
if (initial) {
  $("question").value = initial;
  ask();
}
