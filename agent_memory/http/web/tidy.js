// The tidy panel: what `agent-memory tidy` reports (GET /api/tidy) for the scope filtered on,
// read-only. Clusters of near-duplicates, each with the memory a merge keeps (the one holding
// every word of the others) and those it would supersede, or, when no member holds the rest,
// its members and that a merge needs --keep ID; then how many superseded memories are still
// treated as current and how many memories were not used lately. Merging is done with
// `agent-memory tidy --apply`.

import { api } from "./api.js";

const $ = (id) => document.getElementById(id);
const SIGNALS = { cosine: "meaning (cosine)", keyword: "keyword overlap" };

function el(tag, text, className) {
  const out = document.createElement(tag);
  if (text !== undefined) out.textContent = text;
  if (className) out.className = className;
  return out;
}

function memoryLink(member, extra = "") {
  const link = el("a", undefined, "tidy-member");
  link.href = `#/m/${member.id}`;
  link.dataset.id = member.id;
  link.append(el("span", member.type, `type t-${member.type}`), " ",
    el("span", `#${member.id}`, "id"), extra ? ` ${extra} ` : " ", el("span", member.snippet, "snippet"));
  return link;
}

function clusterItem(cluster) {
  const li = el("li", undefined, "tidy-cluster");
  const held = cluster.keep_reason !== null;
  if (held) li.dataset.keep = cluster.keep.id;
  else li.append(el("p", "No member holds every word of the others: "
    + "merge with agent-memory tidy --apply --keep ID", "hint"));
  li.append(el("span", held ? "keep" : "member", "tidy-role"), memoryLink(cluster.keep));
  const merged = el("ul");
  for (const member of cluster.merge) {
    const item = el("li");
    const lacks = member.missing_words.length
      ? `; #${cluster.keep.id} lacks: ${member.missing_words.join(", ")}` : "";
    item.append(el("span", held ? "supersedes" : "member", "tidy-role"),
      memoryLink(member, `(${member.similarity.toFixed(3)}${lacks})`));
    merged.append(item);
  }
  li.append(merged);
  if (held) li.append(el("p", `tags after a merge: ${cluster.tags.join(", ") || "none"}`, "hint"));
  return li;
}

export async function showTidy(scope) {
  const panel = $("tidy");
  panel.hidden = false;
  const said = $("tidy-status");
  said.classList.remove("is-error");
  said.textContent = "Looking for near-duplicates…";
  try {
    const report = await api.tidy(scope ? { scope } : {});
    const where = report.scope === null ? "in every scope" : `in scope “${report.scope}”`;
    const n = report.clusters.length;
    const note = report.signal_note ? ` (${report.signal_note})` : "";
    said.textContent = `${n} ${n === 1 ? "cluster" : "clusters"} of near-duplicates ${where}, `
      + `by ${SIGNALS[report.signal]} ≥ ${report.threshold}${note}.`;
    $("tidy-clusters").replaceChildren(...report.clusters.map(clusterItem));
    const superseded = report.superseded.length;
    $("tidy-more").textContent = `${superseded} superseded ${superseded === 1 ? "memory" : "memories"} `
      + `still treated as current · ${report.unused.count} not used in ${report.unused_days} days · `
      + "merge with agent-memory tidy --apply";
  } catch (error) {
    said.textContent = error.message;
    said.classList.add("is-error");
  }
}

export function hideTidy() {
  $("tidy").hidden = true;
}
