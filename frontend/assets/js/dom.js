// Small DOM helpers. Text always goes in as text nodes, never as HTML: answers and file names are untrusted.
// Text that people or documents wrote (questions, answers, titles, file names) is set dir="auto": Arabic or Hebrew
// then reads right to left, with its punctuation and its cut-off end where they belong.

export function el(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else if (name === "class") node.className = value;
    else if (name === "dataset") Object.assign(node.dataset, value);
    else node.setAttribute(name, value === true ? "" : value);
  }
  node.append(...children.flat().filter((child) => child !== null && child !== undefined && child !== false));
  return node;
}

const SVG = "http://www.w3.org/2000/svg";
// Drawn, not emoji: a machine without an emoji font would show empty boxes.
const ICON_PATHS = {
  trash: "M4 7h16M9 7V4h6v3M6 7l1 13h10l1-13M10 11v6M14 11v6",
  pencil: "M4 20h4L19 9l-4-4L4 16v4zM13 7l4 4",
};

export function icon(name) {
  const svg = document.createElementNS(SVG, "svg");
  svg.setAttribute("viewBox", "0 0 24 24");
  svg.setAttribute("aria-hidden", "true");
  svg.setAttribute("class", "icon");
  const path = document.createElementNS(SVG, "path");
  path.setAttribute("d", ICON_PATHS[name]);
  svg.append(path);
  return svg;
}

// The Enter (or other key) that confirms an input method's word (Japanese, Chinese, Korean) is the input method's,
// not the person's: Safari ends the composition before that keydown, which then says so only by its keyCode.
export function composing(event) {
  return event.isComposing || event.keyCode === 229;
}

export function $(id) {
  return document.getElementById(id);
}

// Resolves true when the person confirms; the dialog is a real <dialog>, so focus and Escape behave natively.
export function confirmAction(text, confirmLabel = "Delete") {
  const dialog = $("confirm-dialog");
  $("confirm-text").textContent = text;
  $("confirm-yes").textContent = confirmLabel;
  dialog.returnValue = "";
  dialog.showModal();
  return new Promise((resolve) => {
    dialog.addEventListener("close", () => resolve(dialog.returnValue === "confirm"), { once: true });
  });
}

let noticesShown = 0;

// A problem that belongs to no message (a chat that cannot be deleted yet, a list that failed to load). Returns
// what takes this notice away again, which leaves a later notice shown in its place alone.
export function showNotice(text) {
  const shown = ++noticesShown;
  $("notice-text").textContent = text;
  $("notice").hidden = false;
  return () => {
    if (shown === noticesShown) $("notice").hidden = true;
  };
}

// What a screen reader says of the conversation (its status, an answer once written), said once: the
// conversation itself is not a live region, as it would read the whole streamed answer again at each frame.
// A modal dialog makes the rest of the page inert, its live regions too: while one is open, its own says it.
// Once said, a text is taken away again (as react-aria's announcer does): a screen reader reading the page
// through would otherwise meet it a second time at its end (a whole answer) or out of place (another chat's).
const SAID_MS = 7000;
let unsay;

export function announceToScreenReader(text) {
  const region = document.querySelector("dialog:modal .announcer") ?? $("announcer");
  for (const other of document.querySelectorAll(".announcer")) other.textContent = "";
  region.textContent = text;
  clearTimeout(unsay);
  unsay = setTimeout(() => {
    region.textContent = "";
  }, SAID_MS);
}

export function showPassage(label, title, excerpt) {
  $("passage-label").textContent = label;
  $("passage-title").textContent = title;
  $("passage-excerpt").textContent = excerpt;
  $("passage-dialog").showModal();
}

export function formatCount(count, singular, plural = `${singular}s`) {
  return `${count.toLocaleString()} ${count === 1 ? singular : plural}`;
}
