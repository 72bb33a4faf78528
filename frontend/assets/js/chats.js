// The chat list: create, select, rename (inline), delete (confirmed).
import { api } from "./api.js";
import { $, confirmAction, el, icon } from "./dom.js";

const UNTITLED = "New chat";
const TITLE_MAX = 100;

export class ChatList {
  constructor({ onSelect, onReselect, onRenamed, onError }) {
    this.chats = [];
    this.currentId = null;
    this.onSelect = onSelect;
    this.onReselect = onReselect;
    this.onRenamed = onRenamed;
    this.onError = onError;
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
    this.select(chosen.id);
  }

  async create() {
    try {
      const chat = await api.createChat();
      this.chats.unshift(chat);
      this.select(chat.id);
      $("question").focus();
    } catch (error) {
      this.onError(error);
    }
  }

  select(chatId) {
    if (chatId === this.currentId) {
      this.onReselect();
      return;
    }
    this.currentId = chatId;
    this.render();
    this.onSelect(this.current);
  }

  // The chat asked in moves to the top (the server orders by the newest message too); a chat still called
  // "New chat" takes its first question as its title.
  async noteQuestion(question) {
    const chat = this.current;
    if (!chat) return;
    this.chats = [chat, ...this.chats.filter((other) => other !== chat)];
    this.render();
    if (chat.title === UNTITLED) await this.rename(chat, question.replace(/\s+/g, " ").trim().slice(0, 60));
  }

  async rename(chat, title) {
    try {
      Object.assign(chat, await api.renameChat(chat.id, title));
    } catch (error) {
      this.onError(error);
    }
    this.render();
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
    try {
      await api.deleteChat(chat.id);
    } catch (error) {
      this.onError(error);
      return;
    }
    this.chats = this.chats.filter((other) => other.id !== chat.id);
    if (this.chats.length === 0) this.chats = [await api.createChat()];
    if (chat.id === this.currentId) this.select(this.chats[0].id);
    else this.render();
  }

  startRename(item, chat) {
    const input = el("input", {
      class: "rename-input", value: chat.title, maxlength: TITLE_MAX, "aria-label": `New name for “${chat.title}”`,
    });
    let finished = false;
    const finish = (save) => {
      if (finished) return;
      finished = true;
      const title = input.value.trim();
      if (save && title && title !== chat.title) this.rename(chat, title).then(() => this.focusChat(chat));
      else {
        this.render();
        this.focusChat(chat);
      }
    };
    input.addEventListener("keydown", (event) => {
      if (event.key === "Enter") finish(true);
      if (event.key === "Escape") {
        event.stopPropagation(); // cancels the rename only, not the drawer around it
        finish(false);
      }
    });
    input.addEventListener("blur", () => finish(true));
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
