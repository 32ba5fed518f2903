// The REST API, as the page uses it: the same routes, bodies and messages as any client.
// A request body is always JSON (the daemon refuses anything else on its writes). Every
// write carries X-Agent-Memory: 1, which a signed-in page's writes need (docs/http.md: no
// other site's page can send it); reads stay plain, as the preloads in index.html are.

export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

// Who is told when an answer is 401 (the daemon wants a token: signin.js shows its form).
let unauthorized = () => {};
export function onUnauthorized(handler) {
  unauthorized = handler;
}

// A not-found answer ({..., reason: "not_found"}) is a result, not an error. ``own401``:
// the caller handles a 401 itself (signing in with a wrong token).
async function call(method, path, body, signal, own401 = false) {
  const init = { method, headers: { Accept: "application/json" }, signal };
  if (method !== "GET") init.headers["X-Agent-Memory"] = "1";
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const response = await fetch(path, init);
  let data = null;
  try {
    data = await response.json();
  } catch {
    throw new ApiError(response.status, `the daemon answered HTTP ${response.status}`);
  }
  if (response.status === 401 && !own401) unauthorized();
  if (!response.ok && !(response.status === 404 && data && data.reason === "not_found")) {
    throw new ApiError(response.status, (data && data.error) || `HTTP ${response.status}`);
  }
  return data;
}

function query(params) {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) {
    if (value !== undefined && value !== null && value !== "") search.set(name, String(value));
  }
  const text = search.toString();
  return text ? `?${text}` : "";
}

export const api = {
  // The page shows superseded memories too, struck through (issue 36).
  list: (params, signal) =>
    call("GET", `/api/memories${query({ ...params, include_superseded: true })}`, undefined, signal),
  // A person browsing is not an agent using a memory: the page's searches record no use.
  search: (body, signal) => call("POST", "/api/search", { ...body, record_use: false, include_superseded: true }, signal),
  get: (id) => call("GET", `/api/memories/${encodeURIComponent(id)}`),
  history: (id) => call("GET", `/api/memories/${encodeURIComponent(id)}/history`),
  stats: () => call("GET", "/api/stats"),
  tidy: (params) => call("GET", `/api/tidy${query(params)}`),
  health: () => call("GET", "/health"),
  update: (id, patch) => call("PATCH", `/api/memories/${encodeURIComponent(id)}`, patch),
  forget: (id) => call("DELETE", `/api/memories/${encodeURIComponent(id)}`),
  link: (edge) => call("POST", "/api/links", edge),
  unlink: ({ from_id, to_id, kind }) =>
    call("DELETE", `/api/links/${from_id}/${to_id}/${encodeURIComponent(kind)}`),
  // Sign-in (signin.js): who this page is, a token sent once for a session cookie, sign-out.
  session: () => call("GET", "/api/session"),
  signIn: (token) => call("POST", "/api/session", { token }, undefined, true),
  signOut: () => call("DELETE", "/api/session"),
};

// A relation as stored (from_id -[kind]-> to_id), from an entry of a memory's `related`
// list, which reads it from that memory's side.
const STORED_KIND = { relates_to: "relates_to", superseded_by: "supersedes", caused: "caused_by",
  supersedes: "supersedes", caused_by: "caused_by" };

export function storedEdge(selfId, related) {
  const kind = STORED_KIND[related.kind];
  return related.direction === "out"
    ? { from_id: selfId, to_id: related.id, kind }
    : { from_id: related.id, to_id: selfId, kind };
}
