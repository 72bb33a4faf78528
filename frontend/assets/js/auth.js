// The API key of a server that asks for one (AXIOM_AUTH=api-key, docs/api.md): asked for in a dialog the first time
// the server answers 401, kept for this tab's session (sessionStorage: gone when the tab closes), sent with every
// request, and asked for again when the server rejects it. A server without keys never answers 401: nothing is asked.
import { $ } from "./dom.js";

const STORAGE = "axiom-api-key";
let asking = null;

export function currentKey() {
  return sessionStorage.getItem(STORAGE);
}

export function authHeaders(key = currentKey()) {
  return key ? { authorization: `Bearer ${key}` } : {};
}

// Called when a request sent with `sentKey` (null: none) was answered 401; resolves once there is another key to
// try. Requests refused at the same moment share one dialog.
export function askForKey(sentKey) {
  const key = currentKey();
  if (key && key !== sentKey) return Promise.resolve(); // a newer key was entered meanwhile: retry with it
  if (asking) return asking;
  sessionStorage.removeItem(STORAGE);
  const dialog = $("key-dialog");
  const input = $("key-input");
  $("key-rejected").hidden = !sentKey;
  input.value = "";
  asking = new Promise((resolve) => {
    const form = $("key-form");
    const submit = (event) => {
      event.preventDefault();
      const entered = input.value.trim();
      if (!entered) return;
      form.removeEventListener("submit", submit);
      sessionStorage.setItem(STORAGE, entered);
      asking = null;
      dialog.close();
      resolve();
    };
    form.addEventListener("submit", submit);
  });
  dialog.showModal();
  input.focus();
  return asking;
}

// Nothing works without a key, so Escape does not close the dialog.
$("key-dialog").addEventListener("cancel", (event) => event.preventDefault());
