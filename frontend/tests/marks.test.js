import assert from "node:assert/strict";
import { test } from "node:test";

import { answerMark, retryStatus, unsearchedNote } from "../assets/js/marks.js";

const cited = [{ filename: "a.pdf", passages: [{ source_number: 1, page: 1, excerpt: "x" }] }];

test("each kind of answer gets its own plain mark", () => {
  assert.equal(answerMark("not_found", true, [])[0], "not-found");
  assert.equal(answerMark("extractive", true, cited)[0], "extractive");
  assert.equal(answerMark("generated", false, cited)[0], "ungrounded");
  assert.equal(answerMark("transformed", false, cited)[0], "ungrounded");
  assert.equal(answerMark("generated", true, cited)[0], "grounded");
});

test("a fixed reply or an uncited answer claims nothing", () => {
  assert.equal(answerMark("fixed", true, []), null);
  assert.equal(answerMark("generated", true, []), null);
  assert.equal(answerMark("transformed", true, cited), null);
});

test("quotes shown because the model was busy say so", () => {
  assert.equal(answerMark("extractive", true, cited, "busy")[0], "extractive");
  assert.match(answerMark("extractive", true, cited, "busy")[1], /busy/);
  assert.match(answerMark("extractive", true, cited, "unsupported")[1], /could not be checked/);
});

test("closest passages after a not-found are labelled as no answer", () => {
  const mark = answerMark("not_found", true, cited, "closest");
  assert.equal(mark[0], "not-answered");
  assert.match(mark[1], /Not in your documents/);
  assert.match(mark[1], /do not answer/);
});

test("a file still indexing is noted once: not when the answer already names it", () => {
  assert.equal(unsearchedNote([], "Anything."), null);
  assert.equal(unsearchedNote(["a.pdf"], "Paris [Source 1]."),
    "“a.pdf” was still being indexed when you asked, so this answer may not include it. Ask again when it is ready.");
  assert.equal(unsearchedNote(["a.pdf"], "“a.pdf” is still being indexed, so it was not searched yet."), null);
  assert.match(unsearchedNote(["a.pdf", "b.pdf", "c.pdf"], "“a.pdf” is still being indexed."),
    /^“b.pdf”, “c.pdf” were still being indexed when you asked, so this answer may not include them\./);
});

test("only a rewrite, which waits for the model, gets a retry status", () => {
  assert.equal(retryStatus("Not supported.", "rewrite"), "Rewriting the answer: Not supported.");
  assert.equal(retryStatus("Showing the relevant passages instead.", "extractive"), "");
  assert.equal(retryStatus("A document this answer cites was removed from the chat.", "sources_removed"), "");
});
