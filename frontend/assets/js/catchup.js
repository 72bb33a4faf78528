// Pure rules for catching up with changes made elsewhere (another tab, window or client): no DOM here.

export const UNTITLED = "New chat"; // the title POST /chats gives
const QUESTION_TITLE_MAX = 60;

// A chat's title taken from its first question: one line, cut at the last word that fits, with "…" when cut.
export function titleFromQuestion(question) {
  const line = question.replace(/\s+/g, " ").trim();
  if (line.length <= QUESTION_TITLE_MAX) return line;
  const lastSpace = line.slice(0, QUESTION_TITLE_MAX + 1).lastIndexOf(" ");
  return `${lastSpace > 0 ? line.slice(0, lastSpace) : line.slice(0, QUESTION_TITLE_MAX)}…`;
}

// Whether the chat's history is known to be empty, so asking for it would only be the documented 404 (which the
// browser's console shows as an error): a chat as POST /chats made it, never renamed nor asked in (its list
// entry still has its first timestamp), or one whose history was found empty when its updated_at was what it
// still is (`emptyAt`: chat id → that updated_at). A message added moves updated_at (docs/api.md), so a chat
// asked in since is read again.
export function hasNoHistory(chat, emptyAt) {
  const unused = chat.title === UNTITLED && chat.updated_at === chat.created_at;
  return unused || emptyAt.get(chat.id) === chat.updated_at;
}

// An error from a chat's own route that can mean the chat no longer exists: a 404 of its documents list (which
// says so for sure), of `PATCH` or `DELETE /chats/{id}`, or a 410.
export function mayMeanChatGone(error) {
  return error.status === 404 || error.status === 410;
}

// An upload or a question refused because its chat was deleted (410, or a stream's `error` event): by its code,
// since a 404 there means something else (a session of another chat) in a chat that still exists.
export function refusedAsDeleted(error) {
  return error.code === "CHAT_DELETED";
}

// Whether the stored conversation changed in a way this tab did not make: a stored message it does not show, or
// one it shows that is gone. `shownIds` are the ids of the stored messages on screen; `own` the "role\ncontent"
// keys (ownKey) of messages this tab added since, which are on screen but without their ids. Returns `changed`
// and the own keys not stored yet (a stopped question never is).
export function reconcile(stored, shownIds, own) {
  const storedIds = new Set(stored.map((message) => message.id));
  const unmatched = [...own];
  if ([...shownIds].some((id) => !storedIds.has(id))) return { changed: true, own: unmatched };
  for (const message of stored) {
    if (shownIds.has(message.id)) continue;
    const index = unmatched.indexOf(ownKey(message.role, message.content));
    if (index < 0) return { changed: true, own: unmatched };
    unmatched.splice(index, 1);
  }
  return { changed: false, own: unmatched };
}

export function ownKey(role, content) {
  return `${role}\n${content}`;
}

// `task` run one at a time: a request while it runs (a change announced after its reads began) runs it once more
// when it ends; any number of such requests make one more run, not one each.
export function oneAtATime(task) {
  let running = false;
  let again = false;
  return async () => {
    if (running) {
      again = true;
      return;
    }
    running = true;
    try {
      do {
        again = false;
        await task();
      } while (again);
    } finally {
      running = false;
    }
  };
}
