// Other tabs and windows of this browser on the same Axiom: each announces what it changed (a chat created,
// renamed or deleted, an answer finished, documents added or removed) on a BroadcastChannel, and every other tab
// catches up. A tab shown or focused again catches up too, for changes made where no announcement reaches (another
// browser, the API, the CLI) or where BroadcastChannel is missing (then announcing does nothing).
const CHANNEL = "axiom-changes";

export class TabSync {
  constructor(onStale) {
    this.channel = typeof BroadcastChannel === "function" ? new BroadcastChannel(CHANNEL) : null;
    this.channel?.addEventListener("message", () => onStale());
    document.addEventListener("visibilitychange", () => {
      if (document.visibilityState === "visible") onStale();
    });
    window.addEventListener("focus", () => onStale());
  }

  announce() {
    this.channel?.postMessage("changed");
  }
}
