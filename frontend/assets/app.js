// Wires the chat list, the conversation and the documents panel together. The open chat is kept in the URL
// (#chat=ID), so a reload comes back to it.
import { api } from "./js/api.js";
import { ChatList } from "./js/chats.js";
import { Conversation } from "./js/conversation.js";
import { DocumentsPanel } from "./js/documents.js";
import { $, showNotice } from "./js/dom.js";

const layout = $("layout");
const question = $("question");
const wide = window.matchMedia("(min-width: 1100px)");

function setPanel(name, open) {
  layout.classList.toggle(`${name}-open`, open);
  $(name === "documents" ? "show-documents" : "show-chats").setAttribute("aria-expanded", String(open));
  $("scrim").hidden = wide.matches || !layout.matches(".documents-open, .chats-open");
}

function showError(error) {
  showNotice(error.message);
}

const conversation = new Conversation({
  onAsked: (text) => chats.titleFromQuestion(text),
  onOpenDocuments: () => setPanel("documents", true),
});

const documents = new DocumentsPanel({
  onChange: (count) => {
    $("document-count").textContent = String(count);
    conversation.setDocumentCount(count);
  },
});

const chats = new ChatList({
  onError: showError,
  onSelect: (chat) => {
    window.history.replaceState(null, "", `#chat=${encodeURIComponent(chat.id)}`);
    $("chat-title").textContent = chat.title;
    document.title = `${chat.title} — Axiom`;
    setPanel("chats", false);
    conversation.show(chat);
    documents.show(chat.id);
  },
});

function submitQuestion() {
  const text = question.value.trim();
  if (!text || conversation.busy) return;
  question.value = "";
  fitComposer();
  conversation.ask(text);
}

function fitComposer() {
  question.style.height = "auto";
  question.style.height = `${Math.min(question.scrollHeight, 200)}px`;
}

$("composer").addEventListener("submit", (event) => {
  event.preventDefault();
  submitQuestion();
});
question.addEventListener("keydown", (event) => {
  // Enter sends; Shift+Enter is a new line; Enter that confirms an input method's composition is left alone.
  if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
    event.preventDefault();
    submitQuestion();
  }
});
question.addEventListener("input", fitComposer);

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
document.addEventListener("keydown", (event) => {
  if (event.key === "Escape" && !wide.matches) {
    setPanel("documents", false);
    setPanel("chats", false);
  }
});

setPanel("documents", wide.matches);
wide.addEventListener("change", () => setPanel("documents", wide.matches));

api.health()
  .then((health) => {
    $("engine-info").textContent = `Offline · ${health.llm.split(":").pop()} · ${health.embedding.model}`;
  })
  .catch(() => {});

const preferred = new URLSearchParams(window.location.hash.slice(1)).get("chat");
chats.load(preferred).catch(showError);
