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

// {filename, page, excerpt, ocr} for source number N, or null when the answer's sources do not have it. `ocr`: the
// passage's text was recognised in a scanned page or an image, so it may hold recognition errors.
export function citedPassage(sources, number) {
  for (const source of sources || []) {
    const passage = (source.passages || []).find((p) => p.source_number === number);
    if (passage) {
      return { filename: source.filename, page: passage.page, excerpt: passage.excerpt, ocr: Boolean(passage.ocr) };
    }
  }
  return null;
}

// Where a cited passage comes from, as the passage dialog says it: "file.pdf — page 3 · recognised text".
export function passageOrigin(passage) {
  const origin = `${passage.filename} — page ${passage.page}`;
  return passage.ocr ? `${origin} · recognised text` : origin;
}
