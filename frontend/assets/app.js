// Wires the chat list, the conversation and the documents panel together. The open chat is kept in the URL
// (#chat=ID), so a reload comes back to it and Back returns to the chat before. Other tabs' changes are caught up
// with (js/tabs.js).
import { api, whenBack } from "./js/api.js";
import { oneAtATime } from "./js/catchup.js";
import { ChatList } from "./js/chats.js";
import { Conversation } from "./js/conversation.js";
import { DocumentsPanel } from "./js/documents.js";
import { $, composing, showNotice } from "./js/dom.js";
import { TabSync } from "./js/tabs.js";

const layout = $("layout");
const question = $("question");
const wide = window.matchMedia("(min-width: 1100px)");
const phone = window.matchMedia("(max-width: 719px)");
// A touch screen's keyboard: there Enter is a new line and the Send button (or Ctrl+Enter) sends, as in a phone's
// messaging apps (a question of several lines could not be typed otherwise); with a keyboard and mouse, Enter sends.
const touch = window.matchMedia("(pointer: coarse)");
const PANELS = {
  documents: { panel: "documents-panel", toggle: "show-documents", slides: () => !wide.matches },
  chats: { panel: "sidebar", toggle: "show-chats", slides: () => phone.matches },
};

// On narrow screens the side panels slide over the conversation: a closed one is inert (out of the Tab order),
// an opened one takes the focus, and closing it gives the focus back to the button that opened it.
function setPanel(name, open) {
  const { panel, toggle, slides } = PANELS[name];
  const wasOpen = layout.classList.contains(`${name}-open`);
  layout.classList.toggle(`${name}-open`, open);
  $(toggle).setAttribute("aria-expanded", String(open));
  coverPage();
  if (!slides() || open === wasOpen) return;
  if (open) $(panel).querySelector("button, [tabindex]")?.focus();
  else if ($(panel).contains(document.activeElement) || document.activeElement === document.body) $(toggle).focus();
}

// A panel slid open covers the rest of the page with the scrim, and that is inert, as behind a dialog: the
// Tab key stays in the panel rather than moving on to what cannot be seen.
function coverPage() {
  const isOpen = (name) => layout.classList.contains(`${name}-open`);
  const over = Object.keys(PANELS).find((name) => PANELS[name].slides() && isOpen(name));
  for (const [name, { panel, slides }] of Object.entries(PANELS)) {
    $(panel).inert = over ? name !== over : slides() && !isOpen(name);
  }
  $("conversation").inert = over !== undefined;
  $("scrim").hidden = over === undefined;
}

function relayout() {
  setPanel("documents", wide.matches);
  setPanel("chats", false);
}

function chatHash(chat) {
  return `#chat=${encodeURIComponent(chat.id)}`;
}

// A chat in the URL (Back, Forward, a bookmark) that is no longer there: another one is open instead.
function notOpened(chatId) {
  const title = chats.gone.get(chatId);
  showNotice(title ? `“${title}” was deleted, so it cannot be opened again.`
    : "The chat at that address cannot be found: it may have been deleted.");
}

function chatInUrl() {
  return new URLSearchParams(window.location.hash.slice(1)).get("chat");
}

// The page's place in the browser's history: each entry it adds is numbered (history.state.position), so a Back
// or Forward knows which way it went, and can go on over an entry of the chat already open (one a dead chat's
// entry became, or one left next to it when the open chat was deleted), where it would seem to do nothing.
let position = window.history.state?.position ?? 0;
// The history's length as last seen: an entry without a number that came with a change of it is a new one, after
// the page's (an address typed in the address bar). One that came without it is an old one (left by a version of
// the page that numbered none, and kept across reloads): where it lies is not known, so it is not stepped over.
let entries = window.history.length;
// The way a Back or Forward is going on over the open chat's entries: only that way, so it always ends.
let skipping = 0;
// The chat a Back or Forward is opening (the list is asked for again first): where a Back or Forward meanwhile
// lands is compared with it, not with the chat still shown, whose entry it would go on over, out of the page.
let opening = null;

// One load at a time: a Retry clicked as Axiom comes back is the same load as the one that its coming back starts.
let loading = null;

function loadChats() {
  const chatId = chatInUrl();
  loading ??= chats.load(chatId).then((found) => {
    if (chatId && !found) notOpened(chatId);
  }).catch(loadFailed).finally(() => {
    loading = null;
  });
}

// Without the list there is no chat to show: the error says so, with a Retry, and Axiom coming back (any request
// it answers, or its health check) loads the list again by itself.
function loadFailed(error) {
  conversation.showLoadError(error, loadChats);
  whenBack(error, loadChats);
}

// A problem shown in the notice. That Axiom was away goes away by itself once it is back.
function showError(error) {
  whenBack(error, showNotice(error.message));
}

// The list, then the open chat's documents (whose listing says whether the chat is gone), then its conversation.
// Best effort: on a failure what is shown stays, and the next focus or announcement tries again.
const catchUp = oneAtATime(async () => {
  if (!chats.current) return; // still loading: what loads is current
  try {
    await chats.sync();
    // A refusal noted before the listing was asked for, of a chat the listing finds, was no deletion after all.
    const before = refused;
    if (await documents.refresh() && refused === before) refused = null;
    await conversation.refresh();
  } catch {
    // kept as it was
  }
});
const tabs = new TabSync(catchUp);
const announce = () => tabs.announce();

// A question or a file refused as sent to the open chat because it was deleted (410 CHAT_DELETED, by its
// code) before this tab knew: catching up tells whether the chat is really gone, and its notice then says
// what was not sent; a chat it finds still there (made again meanwhile) drops the note, and so does opening
// another chat, so a later deletion does not report it. A refusal in a chat not open (an answer or upload
// that went on after the person left it) is not noted: catching up takes the chat off the list.
let refused = null; // {chatId, question, files}

function refusedAsGone(chatId, { question: asked, file }) {
  if (chatId === chats.currentId) {
    const before = refused?.chatId === chatId ? refused : { chatId, question: null, files: [] };
    // A new note each time: a catch-up whose listing was asked for before this refusal keeps it (catchUp).
    const files = file ? [...before.files, file] : before.files;
    refused = { chatId, question: asked || before.question, files };
  }
  catchUp();
}

// The question goes back in the box (unless something else is being typed there): nothing typed is lost.
function notSent({ question: asked, files }) {
  const sentences = files.map((name) => `“${name}” was not added.`);
  if (asked && !question.value.trim()) {
    question.value = asked;
    composerChanged();
    sentences.push("Your question was not sent: it is back in the question box.");
  } else if (asked) sentences.push(`Your question “${asked}” was not sent.`);
  return sentences;
}

// Said once, when the open chat's routes first answer that it is gone; the chat list then leaves it.
function chatDeletedElsewhere(chatId) {
  const chat = chats.chats.find((listed) => listed.id === chatId);
  const refusedHere = refused?.chatId === chatId ? refused : null;
  if (refusedHere) refused = null;
  if (!chat || chats.deleting.has(chatId)) return;
  conversation.forget(chatId);
  documents.forget(chatId);
  const unsent = refusedHere ? notSent(refusedHere) : [];
  const deleted = `“${chat.title}” was deleted in another tab or window, so it is no longer open here.`;
  showNotice([deleted, ...unsent].join(" "));
  chats.leave(chatId).catch(loadFailed);
}

const conversation = new Conversation({
  onChanged: announce,
  onRefusedAsGone: (chatId, asked) => refusedAsGone(chatId, { question: asked }),
  onAsked: (text) => chats.noteQuestion(text),
  pendingDocuments: () => documents.pendingNames(),
  // The panel shows each file's progress; on a wide screen it is open already, so the button opens the picker.
  onAddDocuments: () => {
    setPanel("documents", true);
    $("file-input").click();
  },
});

const documents = new DocumentsPanel({
  onChanged: announce,
  onChatGone: chatDeletedElsewhere,
  onRefusedAsGone: (chatId, name) => refusedAsGone(chatId, { file: name }),
  onError: showError,
  onChange: (count) => {
    $("document-count").textContent = String(count);
    conversation.setDocumentCount(count);
  },
});

function showTitle(chat) {
  $("chat-title").textContent = chat.title;
  document.title = `${chat.title} — Axiom`;
}

const chats = new ChatList({
  onChanged: announce,
  onChatMaybeGone: catchUp,
  // An answer still being written into it would only be refused at its end, holding the model till then;
  // files still queued for it would be refused one by one.
  onDeleted: (chatId) => {
    conversation.forget(chatId);
    documents.forget(chatId);
  },
  onError: showError,
  onReselect: () => setPanel("chats", false),
  openChatEmpty: () => conversation.empty && documents.empty,
  onRenamed: showTitle,
  onSelect: (chat, { replace }) => {
    const hash = chatHash(chat);
    if (replace || !window.location.hash) window.history.replaceState({ position }, "", hash);
    else if (window.location.hash !== hash) window.history.pushState({ position: ++position }, "", hash);
    entries = window.history.length;
    refused = null; // the chat left's: it is no longer for a notice here
    showTitle(chat);
    setPanel("chats", false);
    conversation.show(chat);
    documents.show(chat.id);
  },
});

function submitQuestion() {
  const text = question.value.trim();
  if (!text || conversation.busy || !conversation.chat) return;
  question.value = "";
  composerChanged();
  conversation.ask(text);
}

function composerChanged() {
  question.style.height = "auto";
  const borders = question.offsetHeight - question.clientHeight; // its height counts them (border-box)
  question.style.height = `${Math.min(question.scrollHeight + borders, 200)}px`;
  // Near the limit the composer says how much room is left; at it, that the rest (of a paste) was cut off.
  const count = $("composer-count");
  const [length, max] = [question.value.length, question.maxLength];
  count.hidden = length < 0.9 * max;
  count.classList.toggle("full", length >= max);
  count.textContent = length >= max
    ? `A question can have at most ${max.toLocaleString()} characters: anything past that was cut off.`
    : `${length.toLocaleString()} of ${max.toLocaleString()} characters`;
}

// The question box's hint fits on its one line: a narrow box (a small phone) shows a shorter one. Should even
// that not fit (large text), the box grows to show it whole, as it grows with a question.
const PLACEHOLDERS = [question.placeholder, "Ask a question…"];
const measure = document.createElement("canvas").getContext("2d");

function fitPlaceholder() {
  const style = getComputedStyle(question);
  const room = question.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
  measure.font = `${style.fontStyle} ${style.fontWeight} ${style.fontSize} ${style.fontFamily}`; // not all give .font
  const fitting = PLACEHOLDERS.find((text) => measure.measureText(text).width <= room);
  question.placeholder = fitting ?? PLACEHOLDERS.at(-1);
  composerChanged();
}

$("composer").addEventListener("submit", (event) => {
  event.preventDefault();
  submitQuestion();
});

// Ctrl+Enter (⌘+Enter on Apple's devices) sends everywhere: a tablet with a keyboard counts as a touch screen too.
const SEND_KEYS = /Mac|iPhone|iPad/.test(navigator.platform) ? "⌘+Enter" : "Ctrl+Enter";

function describeEnter() {
  $("composer-hint").textContent = touch.matches
    ? `Enter starts a new line; ${SEND_KEYS} or the Send button sends.`
    : `Enter sends; Shift+Enter starts a new line; ${SEND_KEYS} sends too.`;
}

question.addEventListener("keydown", (event) => {
  if (event.key !== "Enter" || composing(event)) return;
  if (event.ctrlKey || event.metaKey || (!event.shiftKey && !touch.matches)) {
    event.preventDefault();
    submitQuestion();
  }
});
question.addEventListener("input", composerChanged);

$("show-documents").addEventListener("click", () => setPanel("documents", !layout.classList.contains("documents-open")));
$("hide-documents").addEventListener("click", () => setPanel("documents", false));
$("show-chats").addEventListener("click", () => setPanel("chats", !layout.classList.contains("chats-open")));
$("scrim").addEventListener("click", () => {
  setPanel("documents", false);
  setPanel("chats", false);
});
$("dismiss-notice").addEventListener("click", () => {
  $("notice").hidden = true;
});
$("clear-conversation").addEventListener("click", () => conversation.clear());
// Not the Escape that closes a dialog opened from a panel (a deletion's confirmation): that panel stays open.
document.addEventListener("keydown", (event) => {
  if (event.key === "Escape" && !wide.matches && !document.querySelector("dialog[open]")) {
    setPanel("documents", false);
    setPanel("chats", false);
  }
});

relayout();
describeEnter();
fitPlaceholder();
window.addEventListener("resize", fitPlaceholder);
touch.addEventListener("change", describeEnter);
wide.addEventListener("change", relayout);
phone.addEventListener("change", relayout);

// Back and Forward open the chat in the URL, unless it was deleted since, here or elsewhere (the list is asked
// again first): then the open chat stays, its URL takes the place of the dead one, and a notice says why.
window.addEventListener("popstate", async () => {
  const chatId = chatInUrl();
  const to = window.history.state?.position;
  const step = to === undefined ? 0 : Math.sign(to - position);
  const skipped = skipping;
  skipping = 0;
  if (to !== undefined) position = to;
  else if (window.history.length !== entries) {
    window.history.replaceState({ position: ++position }, "", window.location.hash);
  }
  entries = window.history.length;
  if (!chatId || !chats.current) return; // still loading: what loads is current
  if (chatId === (opening ?? chats.currentId)) {
    if (step !== 0 && skipped !== -step) {
      skipping = step;
      window.history.go(step);
      return;
    }
    if (opening) return; // the Back or Forward opening it goes on
  } else {
    opening = chatId;
    try {
      await chats.sync();
    } catch {
      // the list as it was; a chat on it that is gone says so once opened (chatDeletedElsewhere)
    }
    if (opening === chatId) opening = null;
    if (chatInUrl() !== chatId || !chats.current) return; // Back or Forward again meanwhile
  }
  if (chats.chats.some((chat) => chat.id === chatId)) chats.select(chatId);
  else {
    window.history.replaceState({ position }, "", chatHash(chats.current));
    notOpened(chatId);
  }
});

// Leaving or reloading the page closes an answer's stream, which stops it on the server and keeps nothing of it,
// not even its question: the browser asks first.
window.addEventListener("beforeunload", (event) => {
  if (conversation.runs.size > 0) event.preventDefault();
});

// Files dropped anywhere on the page go to the open chat, not to a browser tab that would open them.
document.addEventListener("dragover", (event) => event.preventDefault());
document.addEventListener("drop", (event) => {
  event.preventDefault();
  if (event.dataTransfer?.files.length && conversation.chat) {
    setPanel("documents", true);
    documents.add([...event.dataTransfer.files]);
  }
});

// Which models answer and search; asked again once Axiom answers, when it could not be reached at first.
function showEngine() {
  api.health()
    .then((health) => {
      $("engine-info").textContent = `Answers by ${health.llm.split(":").pop()} · search by ${health.embedding.model}`;
    })
    .catch((error) => whenBack(error, showEngine));
}

showEngine();

loadChats();
