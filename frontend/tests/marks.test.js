import assert from "node:assert/strict";
import { test } from "node:test";

import { answerMark } from "../assets/js/marks.js";

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
