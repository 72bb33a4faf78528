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

// {filename, page, excerpt} for source number N, or null when the answer's sources do not have it.
export function citedPassage(sources, number) {
  for (const source of sources || []) {
    const passage = (source.passages || []).find((p) => p.source_number === number);
    if (passage) {
      return { filename: source.filename, page: passage.page, excerpt: passage.excerpt };
    }
  }
  return null;
}
