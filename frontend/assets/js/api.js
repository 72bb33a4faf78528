// The HTTP API (docs/api.md). Every failure becomes an ApiError carrying the server's {error, message, details}.
import { askForKey, authHeaders, currentKey } from "./auth.js";
import { SSEParser } from "./sse.js";

export class ApiError extends Error {
  constructor(status, body) {
    super(body.message || `The server answered ${status}.`);
    this.status = status;
    this.code = body.error || "HTTP_ERROR";
    this.details = body.details || {};
  }
}

const UNREACHABLE = { error: "UNREACHABLE", message: "Axiom could not be reached. Is the server still running?" };

// Axiom is away: no answer at all (0), a proxy's in front of it (deploy/nginx: 502 or 504, in HTML) while it is
// down or restarting, or its own 503 while it waits for its database (DATABASE_UNAVAILABLE) or is busy.
const AWAY = new Set([0, 502, 503, 504]);

export function isAway(status) {
  return AWAY.has(status);
}

// What waits for Axiom to be back (whenBack), and the health checks meanwhile: one at a time, the next a while
// after the last one ended, that while doubling up to a limit; none while the page is hidden, and one at once when
// it is shown again or the device comes back online.
const FIRST_RECHECK_MS = 3000;
const LAST_RECHECK_MS = 30_000;
const CHECK_TIMEOUT_MS = 10_000;
const waitingForAxiom = new Set();
let recheck = null; // the timer of the next health check
let checking = false;
let recheckMs = FIRST_RECHECK_MS;

function planCheck() {
  clearTimeout(recheck);
  recheck = null;
  if (waitingForAxiom.size > 0 && !checking && !document.hidden) recheck = setTimeout(checkHealth, recheckMs);
}

async function checkHealth() {
  clearTimeout(recheck);
  recheck = null;
  if (waitingForAxiom.size === 0 || checking || document.hidden) return;
  checking = true;
  try {
    await api.health(AbortSignal.timeout(CHECK_TIMEOUT_MS));
  } catch {
    // still away: the next check is planned below
  } finally {
    checking = false;
  }
  recheckMs = Math.min(2 * recheckMs, LAST_RECHECK_MS);
  planCheck();
}

document.addEventListener("visibilitychange", () => {
  if (document.hidden) planCheck();
  else checkHealth();
});
window.addEventListener("online", checkHealth);

// An answer of Axiom's own that says it is back ends the wait. What waited runs after the request that heard it,
// each on its own, so none of them can make that request fail.
function answered(status) {
  if (isAway(status) || waitingForAxiom.size === 0) return;
  clearTimeout(recheck);
  recheck = null;
  const callbacks = [...waitingForAxiom];
  waitingForAxiom.clear();
  for (const callback of callbacks) queueMicrotask(callback);
}

// When `error` says Axiom is away, `callback` runs once, as soon as a later request finds it back; meanwhile its
// /health is asked now and then, so something that said Axiom could not be reached is put right without a reload.
// Other errors are left to the caller.
export function whenBack(error, callback) {
  if (!isAway(error.status)) return;
  if (waitingForAxiom.size === 0) recheckMs = FIRST_RECHECK_MS;
  waitingForAxiom.add(callback);
  if (recheck === null) planCheck();
}

// The ApiError of a response's status and body (null when it is not JSON).
function failure(status, body) {
  if (body?.error) return new ApiError(status, body);
  if (isAway(status)) return new ApiError(status, UNREACHABLE);
  return new ApiError(status, { error: "HTTP_ERROR", message: `The server answered ${status}.` });
}

async function errorFrom(response) {
  let body = null;
  try {
    body = await response.json();
  } catch {
    // not JSON: a proxy's page, say
  }
  return failure(response.status, body);
}

// `send(headers)` with the API key's headers; sent again with another key while the server refuses the key (401).
async function withKey(send) {
  for (;;) {
    const key = currentKey();
    const response = await send(authHeaders(key));
    if (response.status !== 401) return response;
    await askForKey(key);
  }
}

async function request(method, path, body, signal) {
  let response;
  try {
    response = await withKey((auth) =>
      fetch(path, {
        method,
        headers: body === undefined ? auth : { ...auth, "content-type": "application/json" },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal,
      }),
    );
  } catch {
    throw new ApiError(0, UNREACHABLE);
  }
  answered(response.status);
  if (!response.ok) throw await errorFrom(response);
  return response.json();
}

// One XMLHttpRequest (fetch cannot report upload progress) as a response-like {status, body}.
function sendForm(path, form, onProgress, auth) {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open("POST", path);
    for (const [name, value] of Object.entries(auth)) xhr.setRequestHeader(name, value);
    xhr.responseType = "json";
    xhr.upload.onprogress = (event) => {
      if (event.lengthComputable) onProgress(Math.round((100 * event.loaded) / event.total));
    };
    xhr.onload = () => resolve({ status: xhr.status, body: xhr.response || {} });
    xhr.onerror = () => reject(new ApiError(0, UNREACHABLE));
    xhr.send(form);
  });
}

// The answer's stream broke off, or ended without its "done" event.
export const LOST = { error: "CONNECTION_LOST", message: "The connection to Axiom was lost before the answer finished." };

const enc = encodeURIComponent;

export const api = {
  health: (signal) => request("GET", "/health", undefined, signal),
  listChats: () => request("GET", "/chats"),
  createChat: (title) => request("POST", "/chats", title ? { title } : {}),
  renameChat: (chatId, title) => request("PATCH", `/chats/${enc(chatId)}`, { title }),
  deleteChat: (chatId) => request("DELETE", `/chats/${enc(chatId)}`),
  listDocuments: (chatId) => request("GET", `/chat/${enc(chatId)}/documents`),
  documentState: (chatId, id) => request("GET", `/chat/${enc(chatId)}/documents/${enc(id)}`),
  deleteDocument: (chatId, id) => request("DELETE", `/chat/${enc(chatId)}/documents/${enc(id)}`),
  clearHistory: (sessionId) => request("DELETE", `/chat/history/${enc(sessionId)}`),

  async history(sessionId) {
    try {
      return (await request("GET", `/chat/history/${enc(sessionId)}`)).messages;
    } catch (error) {
      if (error.status === 404) return []; // a chat nobody has asked anything yet
      throw error;
    }
  },

  // One file per request, so each file has its own progress and its own result. A password opens a PDF that
  // needs one; it is sent with this request only.
  async upload(chatId, file, onProgress, password = null) {
    const form = new FormData();
    form.append("files", file, file.name);
    if (password) form.append("password", password);
    const { status, body } = await withKey((auth) => sendForm(`/chat/${enc(chatId)}/documents`, form, onProgress, auth));
    answered(status);
    if (status >= 200 && status < 300) return body;
    throw failure(status, body);
  },

  // Calls onEvent(type, data) for each event of the answer's stream. Aborting `signal` closes the connection,
  // which is what stops generation on the server.
  async streamAnswer(chatId, message, sessionId, signal, onEvent) {
    let response;
    try {
      response = await withKey((auth) =>
        fetch(`/chat/${enc(chatId)}/stream`, {
          method: "POST",
          headers: { ...auth, "content-type": "application/json", accept: "text/event-stream" },
          body: JSON.stringify({ message, session_id: sessionId }),
          signal,
        }),
      );
    } catch (error) {
      if (signal.aborted) throw error;
      throw new ApiError(0, UNREACHABLE);
    }
    answered(response.status);
    if (!response.ok) throw await errorFrom(response);
    const parser = new SSEParser(({ event, data }) => onEvent(event, JSON.parse(data)));
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    try {
      for (;;) {
        let chunk;
        try {
          chunk = await reader.read();
        } catch (error) {
          if (signal.aborted) throw error;
          throw new ApiError(0, LOST);
        }
        if (chunk.done) break;
        parser.push(chunk.value);
      }
    } finally {
      reader.cancel().catch(() => {});
    }
  },
};
