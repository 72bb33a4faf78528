// The conversation: history, the streaming answer, Stop, citations that open their passage, errors with a retry.
import { api, ApiError, LOST, whenBack } from "./api.js";
import { hasNoHistory, ownKey, reconcile, refusedAsDeleted } from "./catchup.js";
import { citedPassage, pageLabel, passageOrigin } from "./citations.js";
import { $, announceToScreenReader, confirmAction, el, showPassage } from "./dom.js";
import { renderMarkdown } from "./markdown.js";
import { answerMark, retryStatus, unsearchedNote } from "./marks.js";


const ERROR_TITLES = {
  SYNTHESIS_FAILED: "The language model did not answer.",
  RETRIEVAL_FAILED: "Searching your documents failed.",
  VALIDATION_ERROR: "That question could not be sent.",
  UNREACHABLE: "No connection.",
  CONNECTION_LOST: "The connection was lost.",
  SERVER_BUSY: "Axiom is busy.",
  CHAT_DELETED: "This chat is no longer there.",
};

function openPassage(sources, number) {
  const passage = citedPassage(sources, number);
  if (passage) showPassage(`Source ${number}`, passageOrigin(passage), passage.excerpt);
}

function citationChip(sources, number) {
  const passage = citedPassage(sources, number);
  return el("button", {
    type: "button", class: "cite", dataset: { source: number }, disabled: !passage,
    "aria-label": passage ? `Source ${number}: ${passage.filename}, ${passage.label}` : `Source ${number}`,
    title: passage ? `${passage.filename}, ${passage.label}` : null,
    onclick: () => openPassage(sources, number),
  }, String(number));
}

// Markdown rendered safely (markdown.js), with its [Source N] citations as chips that open the passage.
function formatted(text, sources) {
  return renderMarkdown(text, (number) => citationChip(sources, number));
}

// One assistant message, live while it streams or rebuilt from history.
class AnswerView {
  constructor() {
    this.text = "";
    this.pendingFrame = undefined; // a render of the streamed text waiting for the next frame
    this.sources = [];
    this.statusLine = el("p", { class: "status-line" });
    this.body = el("div", { class: "answer-text", dir: "auto" });
    // What the documents say, shown as soon as the search is done, while the written answer waits for the model.
    this.evidence = el("section", { class: "evidence", "aria-label": "From your documents", hidden: true });
    this.footer = el("div", { class: "answer-footer" });
    this.node = el("article", { class: "message assistant", "aria-label": "Answer" },
      this.statusLine, this.body, this.evidence, this.footer);
  }

  static fromHistory(message) {
    const view = new AnswerView();
    const meta = message.metadata || {};
    view.finish({
      answer: message.content, answer_kind: meta.answer_kind, is_grounded: meta.is_grounded,
      evidence_reason: meta.evidence_reason, sources: meta.sources || [],
    });
    return view;
  }

  showEvidence(text) {
    this.evidence.replaceChildren(
      el("h3", { class: "evidence-title" }, "From your documents"),
      el("div", { class: "evidence-text", dir: "auto" }, formatted(text, this.sources)),
    );
    this.evidence.hidden = false;
  }

  streaming() {
    this.node.setAttribute("aria-busy", "true");
    this.node.classList.add("streaming");
    this.status("Thinking…");
  }

  // Said too while the answer is on screen (not one going on in another chat).
  status(text) {
    this.statusLine.textContent = text;
    this.statusLine.hidden = !text;
    if (text && this.node.isConnected) announceToScreenReader(text);
  }

  // The answer as a screen reader hears it once it is written: its text, then its notes (what kind of answer
  // it is, files it may not have searched).
  spoken() {
    const notes = [...this.footer.querySelectorAll(".mark")].map((mark) => mark.textContent);
    return [this.body.textContent, ...notes].filter(Boolean).join(" ");
  }

  // Tokens can come faster than frames: the markdown is rendered again at most once a frame.
  token(content) {
    this.status("");
    this.text += content;
    this.pendingFrame ??= requestAnimationFrame(() => this.renderText());
  }

  retry(reason, code) {
    this.text = "";
    this.renderText();
    this.status(retryStatus(reason, code));
  }

  renderText() {
    cancelAnimationFrame(this.pendingFrame);
    this.pendingFrame = undefined;
    this.body.replaceChildren(formatted(this.text, this.sources));
  }

  // The final answer replaces what streamed; the evidence shown meanwhile is either in it (quotes) or in its
  // cited sources below, as it is when the conversation is read back from history.
  finish(done) {
    const sources = done.sources || this.sources;
    this.sources = sources;
    this.text = done.answer;
    this.renderText();
    this.evidence.replaceChildren();
    this.evidence.hidden = true;
    this.end();
    const mark = answerMark(done.answer_kind, done.is_grounded, sources, done.evidence_reason);
    if (mark) {
      this.node.classList.add(mark[0]);
      this.footer.append(el("p", { class: `mark mark-${mark[0]}` }, mark[1]));
    }
    // A long file name is cut short in its chip, never the page after it.
    const cited = sources.flatMap((source) => (source.passages || []).map((passage) => el("li", {},
      el("button", {
        type: "button", class: "source-chip", dataset: { source: passage.source_number },
        title: `${source.filename} · ${pageLabel(passage)}`,
        onclick: () => openPassage(sources, passage.source_number),
      }, `${passage.source_number} · `, el("span", { class: "source-name", dir: "auto" }, source.filename),
      ` · ${pageLabel(passage)}`))));
    // Passages listed with a not-found answer are the closest found, not its sources.
    const label = done.answer_kind === "not_found" ? "Closest passages, not an answer" : "Sources";
    if (cited.length > 0) this.footer.append(el("ul", { class: "sources", "aria-label": label }, cited));
  }

  noteUnsearched(names, answer) {
    const note = unsearchedNote(names, answer);
    if (note) this.footer.append(el("p", { class: "mark mark-unsearched" }, note));
  }

  // With a Retry when trying again can help: not for a deleted chat, whose notice says what became of it.
  fail(error, onRetry) {
    this.end();
    this.node.classList.add("failed");
    this.node.setAttribute("role", "alert");
    const title = ERROR_TITLES[error.code] || "Something went wrong.";
    this.footer.append(
      el("p", { class: "error-title" }, title),
      el("p", { class: "error-message" }, error.message),
      !refusedAsDeleted(error) && el("button", { type: "button", class: "button", onclick: onRetry },
        "Retry"),
    );
  }

  stopped() {
    this.end();
    this.node.classList.add("stopped");
    this.footer.append(el("p", { class: "mark mark-stopped" }, "Stopped. Neither this question nor its unfinished answer is saved."));
  }

  end() {
    if (this.pendingFrame !== undefined) this.renderText();
    this.status("");
    this.node.classList.remove("streaming");
    this.node.removeAttribute("aria-busy");
  }
}

// An answer being streamed: it keeps going when the person switches to another chat (it is saved when it ends,
// as if they had stayed), and its messages are shown again if they come back before it ends.
class Run {
  constructor(nodes) {
    this.controller = new AbortController();
    this.nodes = nodes;
  }
}

export class Conversation {
  constructor({ onAsked, pendingDocuments, onAddDocuments, onChanged, onRefusedAsGone }) {
    this.chat = null;
    this.documentCount = 0;
    this.runs = new Map(); // chat id → its Run
    // What the open chat shows of its stored conversation (null while it loads): the ids of the stored messages
    // drawn, and the ownKey of each message asked or answered here since (drawn, but without its id).
    this.shownIds = null;
    this.own = [];
    this.draws = 0; // each time this tab redraws the conversation itself: a refresh read before one is stale
    this.emptyAt = new Map(); // chat id → its updated_at when its history was found empty (hasNoHistory)
    this.onAsked = onAsked;
    this.pendingDocuments = pendingDocuments;
    this.onAddDocuments = onAddDocuments;
    this.onChanged = onChanged;
    this.onRefusedAsGone = onRefusedAsGone;
    this.log = $("messages");
    this.send = $("send");
    this.stop = $("stop");
    this.clearButton = $("clear-conversation");
    // The conversation follows what is added to it (the evidence, the streamed answer, its final form with its
    // sources, an error) while it is scrolled to its end; a person who scrolled up to read is left there. The
    // end is judged before each change, so one large addition (the evidence, the final answer) is followed too.
    this.atEnd = true;
    this.log.addEventListener("scroll", () => {
      this.atEnd = this.log.scrollHeight - this.log.scrollTop - this.log.clientHeight < 160;
    });
    new MutationObserver(() => {
      if (this.atEnd) this.log.scrollTop = this.log.scrollHeight;
    }).observe(this.log, { childList: true, subtree: true, characterData: true });
    // Stop takes Send's place under the pointer: the second click of a double-click on Send is not a Stop.
    this.stop.addEventListener("click", (event) => {
      if (event.detail < 2) this.currentRun?.controller.abort();
    });
    // Nor is the repeat of an Enter held on Send, which lands on Stop once the focus moved there.
    this.stop.addEventListener("keydown", (event) => {
      if (event.repeat) event.preventDefault();
    });
  }

  get currentRun() {
    return this.chat ? this.runs.get(this.chat.id) : undefined;
  }

  // Loaded, with nothing asked (nor being asked).
  get empty() {
    return this.shownIds !== null && !this.log.querySelector(".message.user");
  }

  get busy() {
    return this.currentRun !== undefined;
  }

  async show(chat) {
    this.chat = chat;
    this.draws += 1;
    this.shownIds = null;
    this.showRunning();
    this.log.replaceChildren(el("p", { class: "loading" }, "Loading the conversation…"));
    this.showClearable();
    let messages;
    try {
      messages = await this.stored(chat);
    } catch (error) {
      if (this.chat !== chat) return;
      this.log.replaceChildren();
      const failed = this.appendError(error, () => this.show(chat));
      // Axiom away: it loads by itself once Axiom is back, while that error is all it shows: not once it was left
      // or drawn again (Retry), nor once asked in (loading it would wipe a question that failed, and its text).
      whenBack(error, () => {
        if (this.chat === chat && failed.isConnected && this.log.childElementCount === 1) this.show(chat);
      });
      return;
    }
    if (this.chat !== chat) return;
    this.shownIds = new Set(messages.map((message) => message.id));
    this.own = [];
    this.log.replaceChildren(...messages.map((message) => this.storedMessage(message)));
    const run = this.runs.get(chat.id);
    if (run) this.log.append(...run.nodes);
    this.renderWelcome();
    this.scrollToEnd();
  }

  // A chat's stored messages; none asked for when it is known to have none (catchup.js).
  async stored(chat) {
    if (hasNoHistory(chat, this.emptyAt)) return [];
    const messages = await api.history(chat.session_id);
    if (messages.length === 0) this.emptyAt.set(chat.id, chat.updated_at);
    return messages;
  }

  // Catching up with changes made elsewhere: the conversation is drawn again only when its stored messages are not
  // what is shown (another tab's answer, a conversation cleared elsewhere), never while an answer streams here; a
  // reader scrolled up stays where they were. Errors are the caller's: what is shown stays.
  async refresh() {
    const [chat, draws] = [this.chat, this.draws];
    if (!chat || this.busy || this.shownIds === null) return;
    const messages = await this.stored(chat);
    if (this.chat !== chat || this.draws !== draws || this.busy) return;
    const { changed, own } = reconcile(messages, this.shownIds, this.own);
    this.shownIds = new Set(messages.map((message) => message.id));
    this.own = own;
    if (!changed) return;
    const { scrollTop } = this.log;
    this.log.replaceChildren(...messages.map((message) => this.storedMessage(message)));
    this.renderWelcome();
    if (this.atEnd) this.scrollToEnd();
    else this.log.scrollTop = scrollTop;
  }

  // A chat deleted elsewhere: an answer still streaming into it stops (it could not be kept).
  forget(chatId) {
    this.runs.get(chatId)?.controller.abort();
  }

  // When the list of chats could not be loaded there is no conversation to show: say so, with a way out.
  showLoadError(error, onRetry) {
    this.log.replaceChildren();
    this.appendError(error, onRetry);
  }

  setDocumentCount(count) {
    this.documentCount = count;
    this.renderWelcome();
  }

  // Each change to what the conversation shows ends here (the welcome comes and goes with the messages).
  renderWelcome() {
    this.showClearable();
    const existing = this.log.querySelector(".welcome");
    const empty = !this.log.querySelector(".message");
    if (!empty) {
      existing?.remove();
      return;
    }
    const hint = this.documentCount === 0
      ? [el("p", {}, "Add PDF, Word, PowerPoint, Excel, CSV, web pages, EPUB, text or Markdown files, or images of text, then ask about them. Answers come only from your files, with the page each claim comes from."),
        el("button", { type: "button", class: "button primary", onclick: this.onAddDocuments }, "Add documents")]
      : [el("p", {}, "Ask a question about your documents. Each answer cites the file and page it comes from, and says so when your files do not contain the answer.")];
    existing?.remove();
    this.log.append(el("div", { class: "welcome" }, el("h2", {}, "Chat with your documents"), ...hint));
  }

  // Clear is offered only when there is a conversation to clear (a question asked, answered or not). The focus
  // on it when it goes off (the conversation just cleared) moves to the question box, not back to the page's start.
  showClearable() {
    const focused = document.activeElement === this.clearButton;
    this.clearButton.disabled = !this.log.querySelector(".message.user");
    if (focused && this.clearButton.disabled) $("question").focus();
  }

  storedMessage(message) {
    if (message.role === "assistant") return AnswerView.fromHistory(message).node;
    const unanswered = message.metadata?.answered === false;
    return this.userMessage(message.content, unanswered);
  }

  userMessage(text, unanswered = false) {
    const node = el("article", { class: "message user", "aria-label": "Your question" }, el("p", { dir: "auto" }, text));
    if (unanswered) {
      node.append(el("p", { class: "mark mark-unanswered" }, "Not answered. ",
        el("button", { type: "button", class: "link-button", onclick: () => this.ask(text) }, "Ask again")));
    }
    return node;
  }

  appendError(error, onRetry) {
    const view = new AnswerView();
    view.fail(error, onRetry);
    this.log.append(view.node);
    return view.node;
  }

  async ask(question) {
    if (this.busy || !this.chat) return;
    const chat = this.chat;
    const asked = this.userMessage(question);
    const view = new AnswerView();
    const run = new Run([asked, view.node]);
    this.runs.set(chat.id, run);
    this.log.append(asked, view.node);
    this.renderWelcome();
    view.streaming();
    this.showRunning();
    this.scrollToEnd();
    this.onAsked(question);
    const unsearched = this.pendingDocuments();
    let ended = false;
    let answer = null;
    try {
      await api.streamAnswer(chat.id, question, chat.session_id, run.controller.signal, (type, data) => {
        if (type === "status") view.status(data.message);
        else if (type === "token") view.token(data.content);
        else if (type === "retry") view.retry(data.reason, data.code);
        else if (type === "sources") view.sources = data.sources;
        else if (type === "evidence") view.showEvidence(data.text);
        else if (type === "done") {
          answer = data.answer;
          view.finish(data);
          if (data.answer_kind !== "fixed") view.noteUnsearched(unsearched, data.answer);
          if (view.node.isConnected) announceToScreenReader(view.spoken());
          ended = true;
        } else if (type === "error") {
          // The chat deleted while this answer was written is gone, as a 410 would say; anything else is busy.
          throw new ApiError(data.error === "CHAT_DELETED" ? 410 : 503, data);
        }
      });
      if (!ended) throw new ApiError(0, LOST);
    } catch (error) {
      if (ended) {
        // Stopped after the answer was complete: it is saved and shown as it is.
      } else if (run.controller.signal.aborted) {
        view.stopped();
        // What became of it, not its unfinished text again.
        if (view.node.isConnected) announceToScreenReader(view.footer.textContent);
      } else {
        view.fail(error, () => {
          if (this.busy) return;
          asked.remove();
          view.node.remove();
          this.ask(question);
        });
        if (refusedAsDeleted(error)) this.onRefusedAsGone(chat.id, question);
      }
    } finally {
      this.runs.delete(chat.id);
      if (this.chat === chat) {
        this.own.push(ownKey("user", question));
        if (answer !== null) this.own.push(ownKey("assistant", answer));
        this.showRunning();
      }
      this.onChanged();
    }
  }

  // Send or Stop, for the chat on screen; focus follows only if it was on the button that went away.
  showRunning() {
    const running = this.busy;
    const focusWasOnButton = [this.send, this.stop, document.body].includes(document.activeElement);
    this.send.hidden = running;
    this.stop.hidden = !running;
    if (focusWasOnButton) (running ? this.stop : $("question")).focus();
  }

  async clear() {
    if (!this.chat) return;
    const confirmed = await confirmAction(
      "Clear this conversation? The questions and answers are removed; the documents stay.", "Clear",
    );
    if (!confirmed) return;
    this.currentRun?.controller.abort();
    try {
      await api.clearHistory(this.chat.session_id);
    } catch (error) {
      if (error.status !== 404) {
        this.appendError(error, () => this.clear());
        return;
      }
    }
    this.draws += 1;
    this.emptyAt.set(this.chat.id, this.chat.updated_at);
    this.shownIds = new Set();
    this.own = [];
    this.log.replaceChildren();
    this.renderWelcome();
    this.onChanged();
  }

  scrollToEnd() {
    this.atEnd = true;
    this.log.scrollTop = this.log.scrollHeight;
  }
}
