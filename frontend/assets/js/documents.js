// A chat's documents: drop or pick files, follow each file's upload and indexing, list and delete documents.
import { api, isAway } from "./api.js";
import { mayMeanChatGone, refusedAsDeleted } from "./catchup.js";
import { $, announceToScreenReader, confirmAction, el, formatCount, icon } from "./dom.js";

const POLL_MS = 1000;

function readyText(result) {
  const pages = result.page_count ? ` · ${formatCount(result.page_count, "page")}` : "";
  return `Ready · ${formatCount(result.chunk_count, "chunk")}${pages}`;
}

// How a background job stands. One whose storing found the vector store unreachable is queued again until
// retry_at (seconds since the epoch), with its last try's error; it counts down to its next try.
function jobProgress(job) {
  if (job.status !== "queued" || !job.retry_at) {
    return { state: "indexing", text: `Indexing… ${job.percent}%`, title: null };
  }
  const seconds = Math.ceil(job.retry_at - Date.now() / 1000);
  const next = seconds > 0 ? `trying again in ${seconds} s` : "trying again now";
  return { state: "retrying", text: `The vector store cannot be reached — ${next}`, title: job.error?.message };
}

// What the page says of a PDF refused for its password (details.reason of the error), in place of the server's
// message, which names the API's field: the row then asks for the password.
const PASSWORD_REFUSALS = {
  encrypted: "This PDF is password-protected: enter its password to open it.",
  wrong_password: "That password does not open this PDF. Check it and try again.",
};

let uploadRows = 0; // ids for a row's status text (which describes its password input) and its input's label

// One row in the uploads list: the file's name, a progress bar and what happened to it.
class UploadRow {
  constructor(file, onDismiss) {
    this.name = file.name;
    this.id = ++uploadRows;
    this.step = null; // what its status last said, its numbers aside (show)
    this.bar = el("progress", { max: 100, value: 0, "aria-label": `Progress of ${file.name}` });
    this.status = el("span", { class: "upload-status", id: `upload-status-${this.id}` }, "Waiting…");
    this.stop = el("button", {
      type: "button", class: "link-button", "aria-label": `Stop indexing ${file.name}`, hidden: true,
    }, "Stop");
    // Brings back the password question a Cancel put away.
    this.reopen = el("button", {
      type: "button", class: "link-button", "aria-label": `Enter password of ${file.name}`, hidden: true,
    }, "Enter password");
    this.node = el("li", { class: "upload", dataset: { state: "waiting" } },
      el("span", { class: "upload-name", dir: "auto", title: file.name }, file.name),
      el("button", {
        type: "button", class: "icon-button", "aria-label": `Dismiss ${file.name}`, onclick: () => onDismiss(this),
      }, "✕"),
      this.bar, this.status, this.stop, this.reopen);
  }

  // A background job can be stopped while it runs.
  offerStop(onStop) {
    this.stop.onclick = onStop;
    this.stop.hidden = false;
  }

  // A form in the row asking for the file's password: Enter (or Open) hands it to onPassword; Cancel (or
  // Escape) puts it away, leaving a button that brings it back. The row's status (why it is asked, or that the
  // last one was wrong) describes the input.
  askPassword(onPassword, focus, wrong) {
    const id = `upload-password-${this.id}`;
    const input = el("input", {
      type: "password", id, class: "key-input", autocomplete: "off", spellcheck: "false", required: true,
      "aria-describedby": this.status.id, "aria-invalid": wrong && "true",
    });
    const cancel = () => {
      form.remove();
      this.reopen.hidden = false;
      this.reopen.focus();
    };
    this.reopen.onclick = () => this.askPassword(onPassword, true, wrong);
    this.reopen.hidden = true;
    input.addEventListener("keydown", (event) => {
      if (event.key === "Escape") {
        event.stopPropagation(); // cancels the question only, not the drawer around it
        cancel();
      }
    });
    const form = el("form", {
      class: "upload-password",
      onsubmit: (event) => {
        event.preventDefault();
        form.remove();
        onPassword(input.value);
      },
    },
    // The row shows the file's name already; a screen reader hears it with the label.
    el("label", { for: id }, "Password", el("span", { class: "visually-hidden" }, ` for ${this.name}`)), input,
    el("div", { class: "upload-password-actions" },
      el("button", { type: "submit", class: "button primary" }, "Open"),
      el("button", { type: "button", class: "link-button", onclick: cancel }, "Cancel")));
    this.node.append(form);
    if (focus) input.focus();
  }

  show(state, text, percent, title = null) {
    this.node.dataset.state = state;
    this.status.textContent = text;
    // Said once a step, while the row is on screen: not again at each percent or second counted.
    const step = text.replace(/\d[\d,.]*/g, "#");
    if (step !== this.step && this.node.isConnected) announceToScreenReader(`${this.name}: ${text}`);
    this.step = step;
    if (title) this.status.title = title;
    else this.status.removeAttribute("title");
    if (percent === null) this.bar.removeAttribute("value"); // an indeterminate bar: no percent is known yet
    else if (percent !== undefined) this.bar.value = percent;
    this.bar.hidden = state === "ready" || state === "failed" || state === "cancelled";
    if (this.bar.hidden) this.stop.hidden = true;
    this.node.querySelector(".upload-password")?.remove(); // a new try, or its outcome, replaces the question
    this.reopen.hidden = true;
  }
}

export class DocumentsPanel {
  constructor({ onChange, onChanged, onChatGone, onRefusedAsGone, onError }) {
    this.chatId = null;
    this.jobs = []; // the open chat's background jobs, as last listed
    this.shown = null; // the open chat's listing as drawn (JSON), so an unchanged one is not drawn again
    this.listings = 0; // listings asked for: only the latest one asked is drawn
    this.onChange = onChange;
    this.onChanged = onChanged;
    this.onChatGone = onChatGone;
    this.onRefusedAsGone = onRefusedAsGone;
    this.onError = onError;
    this.goneChats = new Set(); // deleted elsewhere: files still queued for them are not sent
    this.queue = Promise.resolve();
    this.rowsByChat = new Map(); // chat id → its upload rows, kept while the person looks at another chat
    this.pollTimer = null;
    this.uploads = $("upload-list");
    this.list = $("document-list");
    const input = $("file-input");
    input.addEventListener("change", () => {
      this.add([...input.files]);
      input.value = "";
    });
    // The drop itself is taken by the whole page (app.js); the zone only shows where files can go.
    const zone = $("dropzone");
    for (const name of ["dragenter", "dragover"]) zone.addEventListener(name, () => zone.classList.add("dragging"));
    for (const name of ["dragleave", "drop"]) zone.addEventListener(name, () => zone.classList.remove("dragging"));
  }

  async show(chatId) {
    this.chatId = chatId;
    this.uploads.replaceChildren(...(this.rowsByChat.get(chatId) || []).map((row) => row.node));
    this.list.replaceChildren();
    this.jobs = [];
    this.shown = null;
    this.onChange(0);
    await this.refresh();
  }

  // The listing is what says for sure that a chat is gone (deleted elsewhere): onChatGone. Any other failure is
  // shown in place of a list not shown yet; a list already shown stays as it was. True when the chat was listed,
  // so it still exists.
  async refresh() {
    const [chatId, asked] = [this.chatId, ++this.listings];
    let listing;
    try {
      listing = await api.listDocuments(chatId);
    } catch (error) {
      if (asked !== this.listings) return;
      if (mayMeanChatGone(error)) this.onChatGone(chatId);
      else if (this.shown === null) {
        this.list.replaceChildren(el("li", { class: "error", role: "alert" }, error.message));
      }
      return;
    }
    if (asked !== this.listings) return;
    this.jobs = listing.jobs;
    // A waiting job's countdown changes the drawing while the listing stays the same.
    const shown = JSON.stringify([listing, listing.jobs.map((job) => jobProgress(job).text)]);
    if (shown !== this.shown) {
      this.shown = shown;
      this.render(listing);
      this.onChange(listing.documents.length);
    }
    // Jobs started before a reload, or by someone else: follow them until they finish (one timer at a time).
    clearTimeout(this.pollTimer);
    if (listing.jobs.length > 0) this.pollTimer = setTimeout(() => chatId === this.chatId && this.refresh(), POLL_MS);
    return true;
  }

  // Listed, with no documents nor jobs, and nothing sent to it from here.
  get empty() {
    const sent = this.rowsByChat.get(this.chatId) || [];
    return this.shown !== null && this.jobs.length === 0 && sent.length === 0
      && !this.list.querySelector(".document");
  }

  // A chat deleted elsewhere: its uploads are not shown again.
  forget(chatId) {
    this.rowsByChat.delete(chatId);
    this.goneChats.add(chatId);
  }

  // The names of the open chat's files not indexed yet (uploading, being read or indexed in the background):
  // a question asked now does not search them.
  pendingNames() {
    const rows = (this.rowsByChat.get(this.chatId) || [])
      .filter((row) => ["waiting", "uploading", "indexing", "retrying"].includes(row.node.dataset.state));
    return [...new Set([...rows.map((row) => row.name), ...this.jobs.map((job) => job.name)])];
  }

  render({ documents, jobs }) {
    const rows = documents.map((doc) => el("li", { class: "document", dataset: { documentId: doc.id } },
      el("span", { class: "document-name", dir: "auto", title: doc.name }, doc.name),
      el("span", { class: "document-meta" },
        `${formatCount(doc.page_count, "page")} · ${formatCount(doc.chunk_count, "chunk")}`),
      el("button", {
        type: "button", class: "icon-button", "aria-label": `Delete ${doc.name}`, title: "Delete",
        onclick: () => this.remove(doc),
      }, icon("trash"))));
    const indexing = jobs.map((job) => {
      const { state, text, title } = jobProgress(job);
      return el("li", { class: "document indexing", dataset: { state } },
        el("span", { class: "document-name", dir: "auto" }, job.name),
        el("span", { class: "document-meta", title }, text),
        el("button", {
          type: "button", class: "link-button", "aria-label": `Stop indexing ${job.name}`,
          onclick: () => this.cancel(job, this.chatId),
        }, "Stop"));
    });
    if (rows.length + indexing.length === 0) {
      rows.push(el("li", { class: "empty-note" }, "No documents yet. Answers come only from what you add here."));
    }
    this.list.replaceChildren(...rows, ...indexing);
  }

  // Files go one after another: the server indexes one at a time anyway, and each row shows its own progress.
  add(files) {
    const chatId = this.chatId;
    const rows = this.rowsByChat.get(chatId) || [];
    this.rowsByChat.set(chatId, rows);
    for (const file of files) {
      const row = new UploadRow(file, (dismissed) => {
        rows.splice(rows.indexOf(dismissed), 1);
        dismissed.node.remove();
      });
      rows.push(row);
      this.uploads.append(row.node);
      this.queue = this.queue.then(() => this.upload(chatId, file, row));
    }
  }

  // A PDF refused for its password asks for it in its row, and goes again with the one typed in (kept by the
  // page for that upload only).
  async upload(chatId, file, row, password = null) {
    if (this.goneChats.has(chatId)) return;
    row.show("uploading", "Uploading… 0%", 0);
    try {
      const body = await api.upload(chatId, file, (percent) => {
        // Once the bytes are sent, a small file is read and indexed within the same request.
        if (percent < 100) row.show("uploading", `Uploading… ${percent}%`, percent);
        else row.show("indexing", "Reading and indexing…", null);
      }, password);
      if (body.failed.length > 0) throw Object.assign(new Error(body.failed[0].error.message), body.failed[0].error);
      if (body.jobs.length > 0) await this.follow(chatId, body.jobs[0], row);
      else {
        const result = body.uploaded[0];
        row.show("ready", result.duplicate ? "Already in this chat" : readyText(result), 100);
      }
    } catch (error) {
      const refusal = PASSWORD_REFUSALS[error.details?.reason];
      row.show("failed", refusal || error.message);
      if (refusal) {
        row.askPassword((typed) => {
          row.show("waiting", "Waiting…", 0); // its try goes after the files queued before it
          this.queue = this.queue.then(() => this.upload(chatId, file, row, typed));
        }, password !== null, error.details.reason === "wrong_password");
      }
      if (refusedAsDeleted(error)) this.onRefusedAsGone(chatId, file.name);
    }
    this.onChanged();
    if (chatId === this.chatId) await this.refresh();
  }

  async follow(chatId, job, row) {
    row.offerStop(() => this.cancel(job, chatId));
    for (;;) {
      const { state, text, title } = jobProgress(job);
      row.show(state, text, job.percent, title);
      if (job.status === "ready") {
        row.show("ready", readyText(job), 100);
        return;
      }
      if (job.status === "failed") throw Object.assign(new Error(job.error.message), job.error);
      if (job.status === "cancelled") {
        row.show("cancelled", "Cancelled: nothing of it was kept.");
        return;
      }
      job = await this.nextState(chatId, job, row);
    }
  }

  // The job's state a moment later. A job's id answers even after a restart (it is gone only with its chat),
  // and the job goes on once the server is back: while it cannot be reached the row waits, rather than saying
  // the file failed.
  async nextState(chatId, job, row) {
    for (;;) {
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
      try {
        return await api.documentState(chatId, job.id);
      } catch (error) {
        if (error.status === 404) throw new Error("Indexing stopped: its chat was deleted.");
        if (!isAway(error.status)) throw error;
        row.show("indexing", "Axiom cannot be reached: waiting for it to come back…");
      }
    }
  }

  async cancel(job, chatId) {
    if (!(await confirmAction(`Stop indexing “${job.name}”? Nothing of it will be kept.`, "Stop"))) return;
    try {
      await api.deleteDocument(chatId, job.id);
    } catch (error) {
      this.onError(error);
      return;
    }
    this.onChanged();
    if (chatId === this.chatId) await this.refresh();
  }

  async remove(doc) {
    if (!(await confirmAction(`Remove “${doc.name}” from this chat? Answers will no longer use it.`, "Remove"))) return;
    try {
      await api.deleteDocument(this.chatId, doc.id);
    } catch (error) {
      this.onError(error);
      return;
    }
    this.onChanged();
    await this.refresh();
  }
}
