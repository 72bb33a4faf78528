// "[Source N]" markers in an answer, and the passage each one cites (the `sources` of docs/api.md).

const MARKER = /\[Source (\d+)\]/g;

// The answer as text and citation pieces, in order: [{text}, {source: 2}, {text}, ...].
export function splitCitations(answer) {
  const pieces = [];
  let last = 0;
  for (const match of answer.matchAll(MARKER)) {
    if (match.index > last) pieces.push({ text: answer.slice(last, match.index) });
    pieces.push({ source: Number(match[1]) });
    last = match.index + match[0].length;
  }
  if (last < answer.length) pieces.push({ text: answer.slice(last) });
  return pieces;
}

// How a passage's page is named: its `page_label` ("Slide 3", "Sheet “Q3 sales”", a chapter's title), or
// "Page N" for a page without one and for answers stored before labels.
export function pageLabel(passage) {
  return passage.page_label || `Page ${passage.page}`;
}

// {filename, page, label, excerpt, ocr} for source number N, or null when the answer's sources do not have it.
// `ocr`: the passage's text was recognised in a scanned page or an image, so it may hold recognition errors.
export function citedPassage(sources, number) {
  for (const source of sources || []) {
    const passage = (source.passages || []).find((p) => p.source_number === number);
    if (passage) {
      return {
        filename: source.filename, page: passage.page, label: pageLabel(passage), excerpt: passage.excerpt,
        ocr: Boolean(passage.ocr),
      };
    }
  }
  return null;
}

// Where a cited passage comes from, as the passage dialog says it: "file.pdf — Page 3 · recognised text",
// "deck.pptx — Slide 2".
export function passageOrigin(passage) {
  const origin = `${passage.filename} — ${passage.label}`;
  return passage.ocr ? `${origin} · recognised text` : origin;
}
