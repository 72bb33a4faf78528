// Answers and quoted evidence as formatted text (lists, emphasis, code, tables), never as markup from a model
// or a document. Two layers: marked renders the markdown with raw HTML escaped into text, links kept only for
// http(s)/mailto and images shown as their alt text; DOMPurify then keeps only an allow-list of tags and
// attributes of what the browser parsed. [Source N] markers become the caller's citation chips afterwards.
import { Marked } from "../vendor/marked/marked.esm.js";
import DOMPurify from "../vendor/dompurify/purify.es.mjs";
import { splitCitations } from "./citations.js";

const LINK_SCHEMES = /^(?:https?|mailto):/i;
const ALLOWED = {
  ALLOWED_TAGS: [
    "p", "br", "strong", "em", "del", "code", "pre", "blockquote", "ul", "ol", "li", "hr",
    "h1", "h2", "h3", "h4", "h5", "h6", "table", "thead", "tbody", "tr", "th", "td", "a",
  ],
  ALLOWED_ATTR: ["href", "title", "start"],
  ALLOWED_URI_REGEXP: LINK_SCHEMES,
  ALLOW_DATA_ATTR: false,
  ALLOW_ARIA_ATTR: false,
  RETURN_DOM_FRAGMENT: true,
};

const ESCAPES = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

function escapeHtml(text) {
  return text.replace(/[&<>"']/g, (character) => ESCAPES[character]);
}

// [Source N] is a token of its own: markdown cannot make a citation a link (`[Source 1](url)`).
const citation = {
  name: "citation",
  level: "inline",
  start: (source) => source.indexOf("[Source "),
  tokenizer(source) {
    const match = /^\[Source \d+\]/.exec(source);
    return match ? { type: "citation", raw: match[0] } : undefined;
  },
  renderer: ({ raw }) => raw,
};

const markdown = new Marked({
  gfm: true,
  extensions: [citation],
  breaks: true, // a line break the model wrote stays one, as it did when answers were plain text
  renderer: {
    // Raw HTML, block or inline, is shown as the text it is: escaped, not sanitised into something else.
    html({ text, block }) {
      return block ? `<p>${escapeHtml(text.trimEnd()).replaceAll("\n", "<br>")}</p>` : escapeHtml(text);
    },
    // A link elsewhere than the web or mail is only its text; returning false lets marked render the rest.
    link({ href, tokens }) {
      return LINK_SCHEMES.test(href) ? false : this.parser.parseInline(tokens);
    },
    // Text must never make the page load a URL: an image is its description.
    image({ text }) {
      return escapeHtml(text);
    },
  },
});

// The first layer alone (no DOM needed): markdown to HTML with no raw HTML, script links or images in it.
export function markdownHtml(text) {
  return markdown.parse(text, { async: false });
}

// Text nodes outside code, where a [Source N] marker becomes a chip.
function citableTextNodes(root) {
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT, {
    acceptNode: (node) => (node.parentElement?.closest("code, pre")
      ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_ACCEPT),
  });
  const nodes = [];
  while (walker.nextNode()) nodes.push(walker.currentNode);
  return nodes;
}

// The rendered text as a DocumentFragment; chip(n) makes the element that stands for [Source n].
export function renderMarkdown(text, chip) {
  const fragment = DOMPurify.sanitize(markdownHtml(text), ALLOWED);
  for (const link of fragment.querySelectorAll("a")) {
    link.target = "_blank";
    link.rel = "noopener noreferrer";
  }
  for (const node of citableTextNodes(fragment)) {
    const pieces = splitCitations(node.data);
    if (pieces.length === 1 && pieces[0].text !== undefined) continue;
    node.replaceWith(...pieces.map((piece) => (piece.text !== undefined ? piece.text : chip(piece.source))));
  }
  return fragment;
}
