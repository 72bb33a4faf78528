import assert from "node:assert/strict";
import { test } from "node:test";

import {
  hasNoHistory, mayMeanChatGone, oneAtATime, ownKey, reconcile, refusedAsDeleted, titleFromQuestion,
} from "../assets/js/catchup.js";

const message = (id, role, content) => ({ id, role, content, metadata: {} });
const stored = [message("m1", "user", "hi"), message("m2", "assistant", "Hello!")];

test("a chat as POST /chats made it has no history", () => {
  const made = { id: "c1", title: "New chat", created_at: 100.5, updated_at: 100.5 };
  assert.equal(hasNoHistory(made, new Map()), true);
  assert.equal(hasNoHistory({ ...made, updated_at: 101 }, new Map()), false); // asked in or renamed since
  assert.equal(hasNoHistory({ ...made, title: "Taxes" }, new Map()), false);
});

test("a history found empty stays known empty until the chat is updated", () => {
  const chat = { id: "c1", title: "Taxes", created_at: 100, updated_at: 120 };
  const emptyAt = new Map([["c1", 120]]);
  assert.equal(hasNoHistory(chat, emptyAt), true);
  assert.equal(hasNoHistory({ ...chat, updated_at: 130 }, emptyAt), false); // a message moved it
  assert.equal(hasNoHistory({ ...chat, id: "c2" }, emptyAt), false);
});

test("a 404 or 410 may mean the chat is gone; other failures do not", () => {
  assert.equal(mayMeanChatGone({ status: 404 }), true);
  assert.equal(mayMeanChatGone({ status: 410 }), true);
  assert.equal(mayMeanChatGone({ status: 503 }), false);
  assert.equal(mayMeanChatGone({ status: 0 }), false);
});

test("an upload or a question is refused as sent to a deleted chat by its code, not by a 404", () => {
  assert.equal(refusedAsDeleted({ status: 410, code: "CHAT_DELETED" }), true);
  assert.equal(refusedAsDeleted({ status: 410, code: "CHAT_DELETED", details: { chat_id: "c1" } }), true);
  // A session of another chat: the chat asked in is still there.
  assert.equal(refusedAsDeleted({ status: 404, code: "NOT_FOUND", details: { session_id: "s", chat_id: "c1" } }), false);
  assert.equal(refusedAsDeleted({ status: 503, code: "SERVICE_BUSY" }), false);
});

test("the same stored messages are no change", () => {
  assert.deepEqual(reconcile(stored, new Set(["m1", "m2"]), []), { changed: false, own: [] });
});

test("a message stored elsewhere is a change", () => {
  const more = [...stored, message("m3", "user", "and?")];
  assert.equal(reconcile(more, new Set(["m1", "m2"]), []).changed, true);
});

test("a message shown but no longer stored (cleared elsewhere) is a change", () => {
  assert.equal(reconcile([], new Set(["m1", "m2"]), []).changed, true);
});

test("what this tab asked and was answered is no change once stored; what is not stored yet is kept", () => {
  const own = [ownKey("user", "hi"), ownKey("assistant", "Hello!"), ownKey("user", "stopped")];
  const result = reconcile(stored, new Set(), own);
  assert.equal(result.changed, false);
  assert.deepEqual(result.own, [ownKey("user", "stopped")]);
});

test("the same text asked here and elsewhere is matched once", () => {
  const twice = [message("m1", "user", "hi"), message("m2", "user", "hi")];
  assert.equal(reconcile(twice, new Set(), [ownKey("user", "hi")]).changed, true);
});

test("requests during a run make one more run, never two at once", async () => {
  let runs = 0;
  let active = 0;
  let release;
  const task = oneAtATime(async () => {
    runs += 1;
    active += 1;
    assert.equal(active, 1);
    if (runs === 1) await new Promise((resolve) => { release = resolve; });
    active -= 1;
  });
  const first = task();
  await Promise.resolve();
  task();
  task();
  release();
  await first;
  assert.equal(runs, 2);
  await task();
  assert.equal(runs, 3);
});

test("a title taken from a question is cut at a word, with an ellipsis only when cut", () => {
  assert.equal(titleFromQuestion("  What  is\nthis? "), "What is this?");
  const long = "What did the committee decide about the proposed budget for the new library building?";
  assert.equal(titleFromQuestion(long), "What did the committee decide about the proposed budget for…");
  assert.equal(titleFromQuestion(`${"a".repeat(59)} bc`), `${"a".repeat(59)}…`); // the word ends at 60: kept
  assert.equal(titleFromQuestion("x".repeat(80)), `${"x".repeat(60)}…`); // one long word: cut inside it
});
