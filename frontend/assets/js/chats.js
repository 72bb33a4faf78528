// The chat list: create, select, rename (inline), delete (confirmed), and catch up with other tabs' changes.
import { api } from "./api.js";
import { UNTITLED, mayMeanChatGone, titleFromQuestion } from "./catchup.js";
import { $, composing, confirmAction, el, icon } from "./dom.js";

const TITLE_MAX = 100;

export class ChatList {
  constructor({ onSelect, onReselect, onRenamed, onError, onChanged, onChatMaybeGone, onDeleted, openChatEmpty }) {
    this.chats = [];
    this.currentId = null;
    this.edits = 0; // changes made here; a listing read while one was made is older than the list it would replace
    this.renaming = false;
    this.deleting = new Set(); // ids being deleted here: a 404 that a catch-up meanwhile meets is no news
    this.gone = new Map(); // id → title of the chats deleted, here or elsewhere, since the page was opened
    this.onSelect = onSelect;
    this.onReselect = onReselect;
    this.onRenamed = onRenamed;
    this.onError = onError;
    this.onChanged = onChanged;
    this.onChatMaybeGone = onChatMaybeGone;
    this.onDeleted = onDeleted;
    this.openChatEmpty = openChatEmpty; // the open chat is known to have no conversation and no documents
    this.list = $("chat-list");
    $("new-chat").addEventListener("click", () => this.create());
  }

  get current() {
    return this.chats.find((chat) => chat.id === this.currentId) || null;
  }

  async load(preferredId) {
    this.chats = (await api.listChats()).chats;
    if (this.chats.length === 0) this.chats = [await api.createChat()];
    const chosen = this.chats.find((chat) => chat.id === preferredId) || this.chats[0];
    this.select(chosen.id, { replace: true }); // the page's own entry in the browser's history
    return chosen.id === preferredId;
  }

  // The server's list, as other tabs or clients left it. The chats shown keep their objects (the conversation
  // holds the open one); the open chat stays even when unlisted (a chat with only a conversation is not listed):
  // only its own routes can say it is gone (leave). Nothing is drawn again when nothing changed, nor while a
  // title is being edited.
  async sync() {
    const edits = this.edits;
    const listed = (await api.listChats()).chats;
    if (edits !== this.edits) return;
    const before = this.signature();
    const shown = new Map(this.chats.map((chat) => [chat.id, chat]));
    const current = this.current;
    const title = current?.title;
    const chats = listed.map((chat) => Object.assign(shown.get(chat.id) || {}, chat));
    if (current && !chats.includes(current)) {
      chats.splice(Math.min(this.chats.indexOf(current), chats.length), 0, current);
    }
    for (const chat of this.chats) if (!chats.includes(chat)) this.forget(chat.id);
    this.chats = chats;
    if (current && current.title !== title) this.onRenamed(current);
    if (this.signature() !== before && !this.renaming) this.render();
  }

  signature() {
    return JSON.stringify(this.chats.map((chat) => [chat.id, chat.title]));
  }

  // A chat deleted elsewhere: gone from the list; when it was open, the next one opens (a new one if none is left).
  async leave(chatId) {
    this.edits += 1;
    this.forget(chatId);
    if (chatId !== this.currentId) {
      this.render();
      return;
    }
    this.currentId = null;
    if (this.chats.length === 0) this.chats = [await api.createChat()];
    this.select(this.chats[0].id, { replace: true }); // Back then leads to the chat before, not the one gone
  }

  // An open chat that is new and unused (still untitled, nothing asked, no documents) is the new chat asked
  // for: it is kept, rather than another just like it piled on top.
  async create() {
    if (this.current?.title === UNTITLED && this.openChatEmpty()) {
      this.onReselect();
      $("question").focus();
      return;
    }
    this.edits += 1;
    try {
      const chat = await api.createChat();
      this.chats.unshift(chat);
      this.onChanged();
      this.select(chat.id);
      $("question").focus();
    } catch (error) {
      this.onError(error);
    }
  }

  // `replace`: the chat shown takes the place of the open one in the browser's history, rather than adding to it.
  select(chatId, { replace = false } = {}) {
    if (chatId === this.currentId) {
      this.onReselect();
      return;
    }
    this.currentId = chatId;
    this.render();
    this.onSelect(this.current, { replace });
  }

  // Off the list, its title kept for a Back or Forward that leads to it.
  forget(chatId) {
    const chat = this.chats.find((listed) => listed.id === chatId);
    if (chat) this.gone.set(chatId, chat.title);
    this.chats = this.chats.filter((listed) => listed !== chat);
  }

  // The chat asked in moves to the top (the server orders by the newest message too); a chat still called
  // "New chat" takes its first question as its title.
  async noteQuestion(question) {
    const chat = this.current;
    if (!chat) return;
    this.edits += 1;
    chat.updated_at = Date.now() / 1000; // asked in: no longer unused (catchup.js), its history is read again
    this.chats = [chat, ...this.chats.filter((other) => other !== chat)];
    if (!this.renaming) this.render();
    if (chat.title === UNTITLED) {
      await this.rename(chat, titleFromQuestion(question), { asking: true });
    }
  }

  async rename(chat, title, { asking = false } = {}) {
    this.edits += 1;
    try {
      Object.assign(chat, await api.renameChat(chat.id, title));
      this.onChanged();
    } catch (error) {
      // Deleted elsewhere, most likely: catching up says so (and leaves it) if it is. The question being asked
      // is refused too, and says so with what was not sent.
      if (!mayMeanChatGone(error)) this.onError(error);
      else if (!asking) this.onChatMaybeGone();
    }
    // Not while another chat's title is being edited (this was the rename after a question): drawing the list
    // again would take its input away, which saves what was typed so far. Its end draws the list.
    if (!this.renaming) this.render();
    if (chat.id === this.currentId) this.onRenamed(chat);
  }

  focusChat(chat) {
    this.list.querySelector(`[data-chat-id="${chat.id}"] .chat-select`)?.focus();
  }

  async remove(chat) {
    const confirmed = await confirmAction(
      `Delete “${chat.title}”? Its documents and conversation are removed from Axiom. This cannot be undone.`,
    );
    if (!confirmed) return;
    this.edits += 1;
    this.deleting.add(chat.id);
    try {
      await api.deleteChat(chat.id);
    } catch (error) {
      // Deleted elsewhere meanwhile: it is gone all the same.
      if (!mayMeanChatGone(error)) {
        this.deleting.delete(chat.id);
        this.onError(error);
        return;
      }
    }
    const place = this.chats.indexOf(chat);
    this.onDeleted(chat.id);
    this.forget(chat.id);
    try {
      if (this.chats.length === 0) this.chats = [await api.createChat()];
      if (chat.id === this.currentId) this.select(this.chats[0].id, { replace: true });
      else this.render();
    } catch (error) {
      // No chat left and none could be made: the list shows none (+ New chat tries again); the deletion is done.
      this.render();
      this.onError(error);
    } finally {
      this.deleting.delete(chat.id);
      this.onChanged(); // after the new chat, so another tab left empty opens it rather than making its own
    }
    // The focus was on its Delete button, gone with it: it goes to the chat that took its place in the list (the
    // open one when a catch-up took it off the list while the dialog was open), not back to the page's start.
    if (document.activeElement !== document.body) return;
    const next = place >= 0 ? this.chats[Math.min(place, this.chats.length - 1)] : this.current;
    if (next) this.focusChat(next);
  }

  startRename(item, chat) {
    const input = el("input", {
      class: "rename-input", value: chat.title, maxlength: TITLE_MAX, "aria-label": `New name for “${chat.title}”`,
    });
    let finished = false;
    const finish = (save) => {
      if (finished) return;
      finished = true;
      this.renaming = false; // only here: the rename after a question leaves an edit going on meanwhile alone
      const title = input.value.trim();
      if (save && title && title !== chat.title) this.rename(chat, title).then(() => this.focusChat(chat));
      else {
        this.render();
        this.focusChat(chat);
      }
    };
    input.addEventListener("keydown", (event) => {
      if (event.key === "Enter" && !composing(event)) finish(true);
      if (event.key === "Escape") {
        event.stopPropagation(); // cancels the rename only, not the drawer around it
        finish(false);
      }
    });
    input.addEventListener("blur", () => finish(true));
    this.renaming = true;
    item.replaceChildren(input);
    input.focus();
    input.select();
  }

  render() {
    this.list.replaceChildren(
      ...this.chats.map((chat) => {
        const current = chat.id === this.currentId;
        const item = el("li", { class: current ? "chat-item current" : "chat-item", dataset: { chatId: chat.id } });
        item.append(
          el("button", {
            type: "button", class: "chat-select", dir: "auto", "aria-current": current ? "page" : null,
            onclick: () => this.select(chat.id),
          }, chat.title),
          el("button", {
            type: "button", class: "icon-button", "aria-label": `Rename “${chat.title}”`, title: "Rename",
            onclick: () => this.startRename(item, chat),
          }, icon("pencil")),
          el("button", {
            type: "button", class: "icon-button", "aria-label": `Delete “${chat.title}”`, title: "Delete",
            onclick: () => this.remove(chat),
          }, icon("trash")),
        );
        return item;
      }),
    );
  }
}
