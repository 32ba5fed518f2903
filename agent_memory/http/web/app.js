// The page: browse, search, open, edit, link and forget memories through the REST API.
// Memory text is agents' text: it only ever goes into the page as textContent.

import { api, ApiError, storedEdge } from "./api.js";
import { drawGraph, graphOf, MAX_FIRST_HOP } from "./graph.js";
import { startSignIn } from "./signin.js";
import { hideTidy, showTidy } from "./tidy.js";

// Results as you type: a search is sent this long after the last keystroke.
const DEBOUNCE_MS = 150;
const PAGE_SIZE = 50; // index.html preloads the first page: /api/memories?limit=51&include_superseded=true
const SEARCH_LIMIT = 50;
const SNIPPET_CHARS = 240;
// The search and its filters live in the address (?q=…&type=…&tag=…&scope=…&by=…), so a view can
// be bookmarked, shared, reloaded and reached again with Back and Forward; the memory open
// in the detail pane is the hash (#/m/ID), kept beside them.
const ADDRESS_PARAMS = { q: "query", type: "type", tag: "tag", scope: "scope", by: "by" };
const KIND_READS = { relates_to: "relates to", supersedes: "supersedes",
  superseded_by: "superseded by", caused_by: "was caused by", caused: "caused" };

const $ = (id) => document.getElementById(id);
const state = {
  query: "", type: "", tag: "", scope: "", by: "",
  cursors: [null], // the cursor of each page shown so far (null: the first page)
  page: 0,
  shown: [], // the memories in the list now
  memory: null, // the memory open in the detail pane
  sequence: 0, // answers to older requests than the latest are dropped
  controller: null,
  edited: null, // the box whose typing made the current history entry (more typing replaces it)
  explain: false, // "Why these results?": searches ask for explain, each result says why
  identity: null, // who this page is (GET /api/session), with what its token may do
};

// -- what this page's token may do ------------------------------------------------------
// The daemon says which operations the token may call (`may`, from its rules); a write the
// token may not make is not offered, and the detail pane says why. Until the daemon has
// said, nothing that writes is offered.

const WRITES = [["update", "Save"], ["link", "Link"], ["unlink", "Unlink"], ["forget", "Forget"]];

function may(operation) {
  return state.identity !== null && state.identity.may[operation] !== false;
}

function listed(words) {
  return words.length < 2 ? words.join("") : `${words.slice(0, -1).join(", ")} and ${words.at(-1)}`;
}

function showRights() {
  $("edit-form").hidden = !may("update");
  $("link-form").hidden = !may("link");
  $("d-forget").closest(".danger-zone").hidden = !may("forget");
  for (const button of $("d-related").querySelectorAll(".unlink")) button.hidden = !may("unlink");
  const refused = state.identity === null ? [] : WRITES.filter(([op]) => !may(op)).map(([, label]) => label);
  $("d-rights").hidden = refused.length === 0;
  if (refused.length === 0) return;
  const { name } = state.identity;
  const why = state.identity.read_only
    ? `The token ${name} is read-only: it may browse and search`
    : `The token ${name} may not change memories this way`;
  setText($("d-rights"), `${why}, so ${listed(refused)} ${refused.length === 1 ? "is" : "are"} not offered.`);
}

function rightsKnown(identity) {
  state.identity = identity;
  showRights();
}

// -- formatting -------------------------------------------------------------------------

const now = () => Math.floor(Date.now() / 1000);

function span(seconds) {
  const s = Math.abs(seconds);
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min`;
  if (s < 86400) return `${Math.floor(s / 3600)} h`;
  if (s < 86400 * 60) return `${Math.floor(s / 86400)} d`;
  if (s < 86400 * 730) return `${Math.floor(s / (86400 * 30))} mo`;
  return `${Math.floor(s / (86400 * 365))} y`;
}

function when(ts) {
  return new Date(ts * 1000).toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short" });
}

const ago = (ts) => `${when(ts)} (${span(now() - ts)} ago)`;

function expiry(ts) {
  if (ts === null || ts === undefined) return "never";
  const left = ts - now();
  return left > 0 ? `${when(ts)} (in ${span(left)})` : `${when(ts)} (passed: the next sweep removes it)`;
}

// "1 memory", "2 memories": a count and its noun (as agent_memory.contract.vocabulary.count).
const PLURALS = { memory: "memories", relation: "relations" };
const counted = (n, noun) => `${n.toLocaleString()} ${n === 1 ? noun : PLURALS[noun]}`;

const cut = (text, n) => (text.length > n ? `${text.slice(0, n)}…` : text);

function setText(el, text) {
  el.textContent = text;
  return el;
}

function status(el, text, isError = false) {
  el.textContent = text;
  el.classList.toggle("is-error", isError);
}

// -- why these results ------------------------------------------------------------------
// The same words as the terminal's `search --explain` (agent_memory/transports/cli/display.py why and
// explanation).

// Two decimals, or two significant digits under 0.1 (Python's "{:.2g}", 1.9e-06 included).
function score(value) {
  if (Math.abs(value) >= 0.1 || value === 0) return value.toFixed(2);
  if (Math.abs(value) < 1e-4) {
    const [digits, power] = value.toExponential(1).split("e");
    return `${digits.replace(/\.0$/, "")}e${power[0]}${power.slice(1).padStart(2, "0")}`;
  }
  return String(Number(value.toPrecision(2)));
}

function whyLine(why) {
  return `${why.reason} · score ${score(why.score)}`;
}

function explanation(explain) {
  const made = explain.fusion === undefined ? `score = ${explain.score}` : `${explain.fusion} fusion`;
  return `${made} · ${explain.cut.reason}`;
}

// -- the list ---------------------------------------------------------------------------

function filters() {
  const out = {};
  if (state.type) out.type = state.type;
  if (state.tag) out.tag = state.tag;
  if (state.scope) out.scope = state.scope;
  if (state.by) out.by = state.by;
  return out;
}

function renderItems(memories, searched, explain = null) {
  const template = $("t-item");
  const items = memories.map((memory) => {
    const li = template.content.firstElementChild.cloneNode(true);
    const link = li.querySelector("a");
    link.href = `#/m/${memory.id}`;
    link.dataset.id = memory.id;
    if (state.memory && state.memory.id === memory.id) link.setAttribute("aria-current", "true");
    const type = setText(li.querySelector(".type"), memory.type);
    type.classList.add(`t-${memory.type}`);
    setText(li.querySelector(".id"), `#${memory.id}`);
    li.querySelector(".tags").replaceChildren(...memory.tags.map((tag) => {
      const chip = setText(document.createElement("span"), tag);
      chip.className = "tag";
      return chip;
    }));
    setText(li.querySelector(".scope"), memory.scope === null ? "" : memory.scope);
    setText(li.querySelector(".snippet"), cut(memory.content, SNIPPET_CHARS));
    setText(li.querySelector(".decay"), `decay ${memory.decay_score.toFixed(2)}`);
    setText(li.querySelector(".age"), `${span(now() - memory.created_at)} old`);
    const by = memory.superseded_by || [];
    li.querySelector(".item").classList.toggle("superseded", by.length > 0);
    const replaced = li.querySelector(".replaced");
    replaced.hidden = by.length === 0;
    if (by.length > 0) setText(replaced, `superseded by ${by.map((id) => `#${id}`).join(", ")}`);
    const why = li.querySelector(".why");
    why.hidden = memory.why === undefined;
    if (memory.why !== undefined) setText(why, `why: ${whyLine(memory.why)}`);
    return li;
  });
  $("results").replaceChildren(...items);
  state.shown = memories;
  const empty = memories.length === 0;
  if (searched) {
    setText($("list-title"), `Results for “${cut(state.query, 60)}”`);
    let said = empty ? "Nothing matches." : `${memories.length} best first`;
    if (explain) said += ` · ${explanation(explain)}`;
    status($("list-status"), said);
  } else {
    setText($("list-title"), "Newest memories");
    status($("list-status"), empty ? "No memories here." : `page ${state.page + 1}`);
  }
  $("pager").hidden = searched;
}

async function refresh() {
  const sequence = ++state.sequence;
  if (state.controller) state.controller.abort();
  state.controller = new AbortController();
  const { signal } = state.controller;
  const searched = state.query.trim() !== "";
  const kind = searched ? "search" : "list"; // marks for bench/web_page.py: sent -> shown
  try {
    let memories;
    let explain = null;
    performance.mark(`${kind}:sent`);
    if (searched) {
      const body = { query: state.query, ...filters(), limit: SEARCH_LIMIT };
      if (state.explain) body.explain = true;
      const answer = await api.search(body, signal);
      if (sequence !== state.sequence) return;
      setText($("mode"), `${answer.search_mode} search`); // how this one ran
      memories = answer.results;
      explain = answer.explain || null;
    } else {
      const before = state.cursors[state.page];
      const page = await api.list({ ...filters(), limit: PAGE_SIZE + 1, before }, signal);
      if (sequence !== state.sequence) return;
      $("older").disabled = page.length <= PAGE_SIZE;
      $("newer").disabled = state.page === 0;
      memories = page.slice(0, PAGE_SIZE);
    }
    renderItems(memories, searched, explain);
    performance.mark(`${kind}:shown`);
  } catch (error) {
    if (error.name === "AbortError" || sequence !== state.sequence) return;
    status($("list-status"), error.message, true);
  }
}

// A new list or search, put in the address. ``edited``: the box typed into, whose further
// typing replaces this history entry instead of adding one per pause.
function restart(edited = null) {
  remember(edited);
  return fromFirstPage();
}

function fromFirstPage() {
  state.cursors = [null];
  state.page = 0;
  return refresh();
}

// The address's query string for the search and filters in force.
function addressQuery() {
  const params = new URLSearchParams();
  for (const [name, key] of Object.entries(ADDRESS_PARAMS)) {
    if (state[key].trim() !== "") params.set(name, state[key]);
  }
  return params.toString();
}

// The tab's (and a bookmark's) name: the search, when there is one.
function nameTab() {
  const query = state.query.trim();
  document.title = query ? `${cut(query, 60)} · agent-memory` : "agent-memory";
}

function remember(edited) {
  nameTab();
  const query = addressQuery();
  if (query === new URLSearchParams(location.search).toString()) return;
  const next = `${location.pathname}${query ? `?${query}` : ""}${location.hash}`;
  if (edited !== null && edited === state.edited) history.replaceState(null, "", next);
  else history.pushState(null, "", next);
  state.edited = edited;
}

// The search and filters the address names, into the boxes and the state; whether they
// changed. A type in any case is taken ("decision"); one the page does not know is dropped.
function fromAddress() {
  const params = new URLSearchParams(location.search);
  const before = JSON.stringify([state.query, state.type, state.tag, state.scope, state.by]);
  $("q").value = state.query = params.get("q") || "";
  $("f-type").value = (params.get("type") || "").toUpperCase();
  state.type = $("f-type").value;
  $("f-tag").value = state.tag = (params.get("tag") || "").trim();
  $("f-scope").value = state.scope = (params.get("scope") || "").trim();
  $("f-by").value = state.by = (params.get("by") || "").trim();
  markPressed();
  nameTab();
  return JSON.stringify([state.query, state.type, state.tag, state.scope, state.by]) !== before;
}

let timer = null;
function debounced() {
  clearTimeout(timer);
  timer = setTimeout(() => restart("q"), DEBOUNCE_MS);
}

function turn(step) {
  if (step > 0) {
    const last = state.shown[state.shown.length - 1];
    if (!last) return;
    state.cursors[state.page + 1] = `${last.created_at}:${last.id}`;
  }
  state.page = Math.max(0, state.page + step);
  refresh().then(() => {
    const first = $("results").querySelector("a");
    if (first) first.focus();
  });
}

// -- counts -----------------------------------------------------------------------------

function countButton(label, n, total, filter, value) {
  const li = document.createElement("li");
  const button = document.createElement(filter ? "button" : "span");
  button.className = "count";
  if (filter) {
    button.type = "button";
    button.dataset.filter = filter;
    button.dataset.value = value;
    button.addEventListener("click", () => {
      const input = $(`f-${filter}`);
      input.value = state[filter] === value ? "" : value;
      readFilters();
    });
  }
  const bar = document.createElement("span");
  bar.className = "bar";
  bar.style.width = `${total ? Math.max(2, (100 * n) / total) : 0}%`;
  const name = setText(document.createElement("span"), label);
  name.className = "name";
  const count = setText(document.createElement("span"), n.toLocaleString());
  count.className = "n";
  button.append(bar, name, count);
  li.append(button);
  return li;
}

// The count buttons of the filters in force are shown pressed.
function markPressed() {
  for (const button of document.querySelectorAll("button.count")) {
    button.setAttribute("aria-pressed", String(state[button.dataset.filter] === button.dataset.value));
  }
}

async function loadStats() {
  try {
    const stats = await api.stats();
    const total = stats.memories;
    setText($("total"), counted(total, "memory"));
    $("by-type").replaceChildren(...Object.entries(stats.by_type)
      .sort((a, b) => b[1] - a[1])
      .map(([type, n]) => countButton(type, n, total, "type", type)));
    $("by-scope").replaceChildren(...stats.by_scope.map(({ scope, memories }) =>
      scope === null
        ? countButton("(global)", memories, total, null, null)
        : countButton(scope, memories, total, "scope", scope)));
    markPressed();
    $("scope-list").replaceChildren(...stats.by_scope.filter((s) => s.scope !== null)
      .map((s) => Object.assign(document.createElement("option"), { value: s.scope })));
    // A scope-bound token's counts are its scope's: relations and the backlog are not
    // counted per scope, so they are not there.
    setText($("links-count"), stats.links === undefined ? "" : counted(stats.links, "relation"));
    // stats.embedding is there only when embedding is off: then nothing is on its way
    let backlog = "every memory is embedded";
    if (stats.embedding) backlog = "search by meaning is off (--embedder none)";
    else if (stats.pending_embedding === undefined) backlog = "";
    else if (stats.pending_embedding) {
      backlog = `${stats.pending_embedding.toLocaleString()} waiting for a vector`;
    }
    setText($("backlog"), backlog);
  } catch (error) {
    status($("total"), error.message, true);
  }
}

async function loadHealth() {
  try {
    const health = await api.health();
    // How searches run goes beside the search box (a search's own answer updates it);
    // this line says why: the embedder's state.
    if (state.query.trim() === "") setText($("mode"), `${health.search_mode} search`);
    setText($("health"), `embedder ${health.embedder.replace("_", " ")} · v${health.version}`);
    setText($("search-hint"), health.search_hint || ""); // why keyword only, and what changes it
  } catch (error) {
    status($("health"), error.message, true);
  }
}

function readFilters(edited = null) {
  state.type = $("f-type").value;
  state.tag = $("f-tag").value.trim();
  state.scope = $("f-scope").value.trim();
  state.by = $("f-by").value.trim();
  markPressed();
  return restart(edited);
}

// -- one memory -------------------------------------------------------------------------

function field(name, value) {
  return [setText(document.createElement("dt"), name), setText(document.createElement("dd"), value)];
}

function renderRelated(memory) {
  const template = $("t-related");
  const items = memory.related.map((related) => {
    const li = template.content.firstElementChild.cloneNode(true);
    const link = li.querySelector("a");
    link.href = `#/m/${related.id}`;
    setText(li.querySelector(".kind"), KIND_READS[related.kind]);
    const type = setText(li.querySelector(".type"), related.type);
    type.classList.add(`t-${related.type}`);
    setText(li.querySelector(".id"), `#${related.id}`);
    setText(li.querySelector(".snippet"), related.snippet);
    const button = li.querySelector(".unlink");
    button.setAttribute("aria-label", `Unlink: ${KIND_READS[related.kind]} #${related.id}`);
    button.addEventListener("click", () => unlink(memory, related));
    button.hidden = !may("unlink");
    return li;
  });
  if (!items.length) items.push(setText(document.createElement("li"), "none"));
  $("d-related").replaceChildren(...items);
}

// The versions of the memory open, oldest first (memory_history): who wrote each and when,
// and what replaced it.
function versionLine(version) {
  const written = `written ${ago(version.written_at)} by ${version.written_by}`;
  if (version.replaced_at === null) return `v${version.version} · ${written} · current`;
  const how = version.change === "duplicate"
    ? ` (a duplicate store${version.change_source === null ? "" : ` from ${version.change_source}`})`
    : "";
  return `v${version.version} · ${written} · replaced ${ago(version.replaced_at)} by ${version.replaced_by}${how}`;
}

async function renderHistory(memory) {
  let answer;
  try {
    answer = await api.history(memory.id);
  } catch (error) {
    $("d-history").replaceChildren(setText(document.createElement("li"), error.message));
    return;
  }
  if (!state.memory || state.memory.id !== memory.id || !answer.versions) return;
  const items = answer.versions.map((version) => {
    const li = document.createElement("li");
    const text = setText(document.createElement("div"), version.content);
    text.className = "content";
    const who = setText(document.createElement("div"), versionLine(version));
    who.className = "who";
    li.append(who, text);
    return li;
  });
  $("d-history").replaceChildren(...items);
}

function fillEditForm(memory) {
  $("e-content").value = memory.content;
  $("e-tags").value = memory.tags.join("\n");
  $("e-scope").value = memory.scope === null ? "" : memory.scope;
  $("edit-form").querySelector('input[name="ttl"][value="keep"]').checked = true;
  $("e-ttl").value = "";
  clearErrors();
}

function clearErrors() {
  for (const el of document.querySelectorAll("#detail .error")) el.textContent = "";
}

async function drawAround(memory) {
  const hops = Number(document.querySelector('input[name="hops"]:checked').value);
  let around = [];
  if (hops === 2) {
    const first = memory.related.slice(0, MAX_FIRST_HOP).map((r) => r.id);
    const found = await Promise.all([...new Set(first)].map((id) => api.get(id).catch(() => null)));
    around = found.filter((m) => m && m.found !== false);
  }
  if (!state.memory || state.memory.id !== memory.id) return; // moved on meanwhile
  const graph = graphOf(memory, around);
  drawGraph($("graph"), graph);
  setText($("graph-note"), graph.hidden ? `${graph.hidden} more not drawn: open a neighbour to see its own` : "");
}

function renderDetail(memory) {
  setText($("d-title"), `${memory.type} #${memory.id}`);
  setText($("d-content"), memory.content);
  $("d-fields").replaceChildren(
    ...field("Tags", memory.tags.length ? memory.tags.join(", ") : "none"),
    ...field("Scope", memory.scope === null ? "global" : memory.scope),
    ...field("Source", memory.source === null ? "not given" : memory.source),
    ...field("Stored by", memory.created_by),
    ...field("Changed by", memory.updated_by),
    ...field("Created", ago(memory.created_at)),
    ...field("Last used", ago(memory.last_accessed)),
    ...field("Expires", expiry(memory.expires_at)),
    ...field("Decay", memory.decay_score.toFixed(3)),
    ...field("Uses", String(memory.access_count)),
    ...field("Embedding", memory.embedding_status ? "made from this text" : "waiting for a vector"),
  );
  renderRelated(memory);
  renderHistory(memory);
  fillEditForm(memory);
  for (const link of $("results").querySelectorAll("a")) {
    link.toggleAttribute("aria-current", Number(link.dataset.id) === memory.id);
  }
}

async function openMemory(id, { focus = true } = {}) {
  const detail = $("detail");
  try {
    const memory = await api.get(id);
    if (location.hash !== `#/m/${id}`) return; // the address moved on meanwhile (Back)
    detail.hidden = false;
    $("d-body").hidden = memory.found === false;
    if (memory.found === false) {
      state.memory = null;
      setText($("d-title"), `Memory #${id}`);
      status($("d-status"), `There is no memory #${id}.`, true);
      if (focus) $("d-title").focus();
      return;
    }
    state.memory = memory;
    renderDetail(memory);
    drawAround(memory);
    if (focus) $("d-title").focus();
  } catch (error) {
    detail.hidden = false;
    status($("d-status"), error.message, true);
  }
}

function closeDetail() {
  const id = state.memory && state.memory.id;
  state.memory = null;
  $("detail").hidden = true;
  status($("d-status"), "");
  const back = id !== null && $("results").querySelector(`a[data-id="${id}"]`);
  (back || $("q")).focus();
}

function route() {
  state.edited = null; // typing after a move starts a history entry of its own
  const match = /^#\/m\/(-?\d+)$/.exec(location.hash);
  if (match) {
    status($("d-status"), "");
    openMemory(Number(match[1]));
  } else if (!$("detail").hidden) {
    closeDetail();
  }
}

// Where an API message belongs: it names its field first ("invalid argument: ttl_secs ...").
function errorSlot(message) {
  const match = /^invalid argument: (?:each )?(content|tags?|scope|ttl_secs)\b/.exec(message);
  if (!match) return $("e-error");
  const name = match[1] === "tag" ? "tags" : match[1];
  return $(`e-${name}-error`);
}

function patchOf(memory) {
  const patch = {};
  const content = $("e-content").value;
  if (content !== memory.content) patch.content = content;
  const tags = $("e-tags").value;
  if (tags !== memory.tags.join("\n")) {
    patch.tags = tags.split("\n").map((t) => t.trim()).filter((t) => t !== "");
  }
  const scope = $("e-scope").value;
  if (scope !== (memory.scope === null ? "" : memory.scope)) patch.scope = scope === "" ? null : scope;
  const ttl = $("edit-form").querySelector('input[name="ttl"]:checked').value;
  if (ttl === "never") patch.ttl_secs = null;
  if (ttl === "set") {
    const text = $("e-ttl").value.trim();
    // Not a number: sent as typed, so the API's own message says what it must be.
    patch.ttl_secs = /^\d{1,15}$/.test(text) ? Number(text) * Number($("e-ttl-unit").value) : text;
  }
  return patch;
}

async function save(event) {
  event.preventDefault();
  const memory = state.memory;
  if (!memory) return;
  clearErrors();
  try {
    const answer = await api.update(memory.id, patchOf(memory));
    if (answer.updated === false) {
      status($("e-error"), `Memory #${memory.id} no longer exists.`, true);
      return;
    }
    const redacted = answer.redacted ? ` Secrets were replaced: ${answer.redacted.join(", ")}.` : "";
    await openMemory(memory.id, { focus: false });
    status($("d-status"), `Saved.${redacted}`);
    refresh();
    loadStats();
  } catch (error) {
    status(error instanceof ApiError && error.status === 400 ? errorSlot(error.message) : $("e-error"),
      error.message, true);
  }
}

async function link(event) {
  event.preventDefault();
  const memory = state.memory;
  if (!memory) return;
  clearErrors();
  const [kind, direction] = $("l-kind").value.split(":");
  const text = $("l-other").value.trim();
  const other = /^-?\d{1,18}$/.test(text) ? Number(text) : text;
  const edge = direction === "out"
    ? { from_id: memory.id, to_id: other, kind }
    : { from_id: other, to_id: memory.id, kind };
  try {
    const answer = await api.link(edge);
    if (answer.linked === false) {
      status($("l-error"), `There is no memory #${answer.missing_id}.`, true);
      return;
    }
    $("l-other").value = "";
    await openMemory(memory.id, { focus: false });
    status($("d-status"), `Linked: this memory ${$("l-kind").selectedOptions[0].textContent} #${other}.`);
    loadStats();
  } catch (error) {
    status($("l-error"), error.message, true);
  }
}

async function unlink(memory, related) {
  try {
    const answer = await api.unlink(storedEdge(memory.id, related));
    await openMemory(memory.id, { focus: false });
    status($("d-status"), answer.unlinked === false
      ? "That relation was already gone."
      : `Unlinked: no longer ${KIND_READS[related.kind]} #${related.id}.`);
    ($("d-related").querySelector("a") || $("d-title")).focus();
    loadStats();
  } catch (error) {
    status($("d-status"), error.message, true);
  }
}

function askForget() {
  const memory = state.memory;
  if (!memory) return;
  setText($("confirm-text"),
    `Forget memory #${memory.id}? It is deleted with its relations; this cannot be undone.`);
  $("confirm").showModal();
}

async function forget() {
  const memory = state.memory;
  $("confirm").close();
  if (!memory) return;
  try {
    const answer = await api.forget(memory.id);
    const gone = answer.deleted === false ? "was already gone" : "is forgotten";
    status($("list-status"), `Memory #${memory.id} ${gone}.`);
    state.memory = null;
    $("detail").hidden = true;
    history.replaceState(null, "", `${location.pathname}${location.search}`);
    await refresh();
    status($("list-status"), `Memory #${memory.id} ${gone}.`);
    $("q").focus();
    loadStats();
  } catch (error) {
    status($("d-status"), error.message, true);
  }
}

// -- keyboard ---------------------------------------------------------------------------

function typing(target) {
  return target instanceof HTMLInputElement || target instanceof HTMLTextAreaElement
    || target instanceof HTMLSelectElement;
}

function onKey(event) {
  if (event.key === "/" && !typing(event.target) && !$("confirm").open) {
    event.preventDefault();
    $("q").focus();
    $("q").select();
  } else if (event.key === "Escape" && !$("confirm").open && !$("detail").hidden
    && !typing(event.target)) {
    location.hash = "";
  } else if (event.key === "ArrowDown" || event.key === "ArrowUp") {
    const links = [...$("results").querySelectorAll("a.item")];
    const at = links.indexOf(event.target);
    if (event.target === $("q") && event.key === "ArrowDown" && links.length) {
      event.preventDefault();
      links[0].focus();
    } else if (at >= 0) {
      event.preventDefault();
      const next = at + (event.key === "ArrowDown" ? 1 : -1);
      (next < 0 ? $("q") : links[Math.min(next, links.length - 1)]).focus();
    }
  }
}

// -- wiring -----------------------------------------------------------------------------

function start() {
  $("search-form").addEventListener("submit", (event) => {
    event.preventDefault();
    clearTimeout(timer);
    restart();
  });
  $("q").addEventListener("input", () => {
    state.query = $("q").value;
    debounced();
  });
  $("explain").addEventListener("change", () => {
    state.explain = $("explain").checked;
    if (state.query.trim() !== "") refresh();
  });
  $("f-type").addEventListener("change", () => readFilters());
  for (const id of ["f-tag", "f-scope", "f-by"]) {
    $(id).addEventListener("input", () => {
      clearTimeout(timer);
      timer = setTimeout(() => readFilters(id), DEBOUNCE_MS);
    });
  }
  $("f-clear").addEventListener("click", () => {
    $("f-type").value = $("f-tag").value = $("f-scope").value = $("f-by").value = "";
    readFilters();
  });
  $("tidy-show").addEventListener("click", () => showTidy(state.scope));
  $("tidy-close").addEventListener("click", hideTidy);
  $("older").addEventListener("click", () => turn(1));
  $("newer").addEventListener("click", () => turn(-1));
  $("d-close").addEventListener("click", () => { location.hash = ""; });
  $("edit-form").addEventListener("submit", save);
  $("edit-form").addEventListener("reset", (event) => {
    event.preventDefault();
    if (state.memory) fillEditForm(state.memory);
  });
  $("e-ttl").addEventListener("input", () => {
    $("edit-form").querySelector('input[name="ttl"][value="set"]').checked = true;
  });
  $("link-form").addEventListener("submit", link);
  $("d-forget").addEventListener("click", askForget);
  for (const button of $("confirm").querySelectorAll("button")) {
    button.addEventListener("click", (event) => {
      event.preventDefault();
      if (button.value === "forget") forget();
      else $("confirm").close();
    });
  }
  for (const radio of document.querySelectorAll('input[name="hops"]')) {
    radio.addEventListener("change", () => state.memory && drawAround(state.memory));
  }
  document.addEventListener("keydown", onKey);
  window.addEventListener("hashchange", route);
  window.addEventListener("popstate", () => {
    state.edited = null;
    if (fromAddress()) {
      clearTimeout(timer);
      fromFirstPage();
    }
  });
  startSignIn(() => {
    refresh();
    loadStats();
    route();
  }, rightsKnown);
  showRights();
  fromAddress();
  refresh();
  loadStats();
  loadHealth();
  route();
}

start();
