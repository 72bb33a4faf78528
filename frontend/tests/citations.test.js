import assert from "node:assert/strict";
import { test } from "node:test";

import { citedPassage, pageLabel, passageOrigin, splitCitations } from "../assets/js/citations.js";

test("splits an answer into text and citation pieces", () => {
  assert.deepEqual(splitCitations("Cats purr [Source 1]. Dogs bark [Source 12]"), [
    { text: "Cats purr " }, { source: 1 }, { text: ". Dogs bark " }, { source: 12 },
  ]);
  assert.deepEqual(splitCitations("no citations"), [{ text: "no citations" }]);
  assert.deepEqual(splitCitations("half a marker [Sour"), [{ text: "half a marker [Sour" }]);
});

test("finds the cited passage by its source number across documents", () => {
  const sources = [
    { filename: "a.pdf", document_id: "d1", passages: [{ source_number: 1, page: 2, excerpt: "alpha" }] },
    { filename: "b.pdf", document_id: "d2", passages: [
      { source_number: 2, page: 7, excerpt: "beta" }, { source_number: 3, page: 9, excerpt: "gamma" }] },
  ];
  assert.deepEqual(citedPassage(sources, 3), {
    filename: "b.pdf", page: 9, label: "Page 9", excerpt: "gamma", ocr: false,
  });
  assert.equal(citedPassage(sources, 4), null);
  assert.equal(citedPassage(undefined, 1), null);
});

test("says when a cited passage is recognised text", () => {
  const sources = [{ filename: "scan.pdf", document_id: "d1", ocr: true, passages: [
    { source_number: 1, page: 2, excerpt: "alpha", ocr: true }] }];
  const passage = citedPassage(sources, 1);
  assert.equal(passage.ocr, true);
  assert.equal(passageOrigin(passage), "scan.pdf — Page 2 · recognised text");
  assert.equal(passageOrigin({ filename: "a.pdf", page: 4, label: "Page 4", ocr: false }), "a.pdf — Page 4");
});

test("names a page by its label: a slide, a sheet, a chapter; an answer stored before labels by its number", () => {
  const sources = [{ filename: "deck.pptx", document_id: "d1", passages: [
    { source_number: 1, page: 2, page_label: "Slide 2", excerpt: "alpha" }] }];
  const passage = citedPassage(sources, 1);
  assert.equal(passage.label, "Slide 2");
  assert.equal(passageOrigin(passage), "deck.pptx — Slide 2");
  assert.equal(pageLabel({ page: 3, page_label: "Sheet “Q3 sales”" }), "Sheet “Q3 sales”");
  assert.equal(pageLabel({ page: 5 }), "Page 5");
});
