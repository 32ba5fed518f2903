// Signing in, on a daemon that asks for a token (docs/http.md). The token is typed once and
// sent to POST /api/session; the answer sets a cookie this page's scripts cannot read, which
// stands for the token from then on. The form shows whenever the API answers 401 (no
// session yet, or one that ended: idle, signed out elsewhere, its token revoked); on a
// loopback daemon without tokens nothing answers 401 and the form never shows.

import { api, onUnauthorized } from "./api.js";

const $ = (id) => document.getElementById(id);
let loadAgain = () => {};
let rightsKnown = () => {};

// The form in place of the memories: nothing read before stays on screen.
function showForm() {
  if (!$("signin").hidden) return;
  $("layout").hidden = true;
  $("search-form").hidden = true;
  $("who").hidden = true;
  $("signin").hidden = false;
  $("signin-token").focus();
}

function showIdentity(identity) {
  rightsKnown(identity);
  // Only a session can be signed out of: a daemon open on loopback has nobody to name.
  $("who").hidden = identity.via !== "session";
  const rights = [identity.read_only ? "read-only" : "", identity.scope === null ? "" : `scope ${identity.scope}`]
    .filter((part) => part !== "").join(", ");
  $("who-name").textContent = `Signed in as ${identity.name}${rights ? ` (${rights})` : ""}`;
}

async function submit(event) {
  event.preventDefault();
  const box = $("signin-token");
  const error = $("signin-error");
  error.textContent = "";
  if (box.value.trim() === "") {
    error.textContent = "Paste a token (agent-memory token create NAME prints one).";
    box.focus();
    return;
  }
  $("signin-submit").disabled = true;
  try {
    const identity = await api.signIn(box.value);
    box.value = "";
    $("signin").hidden = true;
    $("layout").hidden = false;
    $("search-form").hidden = false;
    showIdentity(identity);
    loadAgain();
  } catch (failure) {
    error.textContent = failure.status === 401
      ? "That token is wrong, expired or revoked." : failure.message;
    box.select();
    box.focus();
  } finally {
    $("signin-submit").disabled = false;
  }
}

// Signed out: the page starts again, holding nothing it read (the form then shows).
async function signOut() {
  try {
    await api.signOut();
  } catch (failure) {
    $("who-name").textContent = failure.message;
    return;
  }
  location.reload();
}

// ``again``: what loads the memories once signed in; ``rights``: who is told the identity
// (with what its token may do) once the daemon says it.
export function startSignIn(again, rights) {
  loadAgain = again;
  rightsKnown = rights;
  onUnauthorized(showForm);
  $("signin-form").addEventListener("submit", submit);
  $("sign-out").addEventListener("click", signOut);
  api.session().then(showIdentity, () => {}); // a 401 has shown the form already
}
