// What kind of answer this is, said plainly next to it: [css name, text], or null for a plain reply (a greeting).

export function answerMark(kind, isGrounded, sources, evidenceReason = null) {
  if (kind === "not_found" && evidenceReason === "closest") {
    return ["not-answered", "Not in your documents: the closest passages are shown, and they do not answer it"];
  }
  if (kind === "not_found") return ["not-found", "Not in your documents"];
  if (kind === "extractive" && evidenceReason === "busy") {
    return ["extractive", "Quoted from your documents: the model was busy with other questions"];
  }
  if (kind === "extractive") {
    return ["extractive", "Quoted from your documents: the model's own answer could not be checked against them"];
  }
  if (isGrounded === false) return ["ungrounded", "Not fully supported by your documents: check the sources"];
  if (kind === "generated" && sources.length > 0) return ["grounded", "Checked against your documents"];
  return null;
}

// Files still uploading or indexing when the question was asked: this answer may not have searched them. A file
// the answer itself already names (Axiom says so of files its background jobs index) is not said twice.
export function unsearchedNote(names, answer) {
  const unnamed = names.filter((name) => !answer.includes(`“${name}”`));
  if (unnamed.length === 0) return null;
  const quoted = unnamed.map((name) => `“${name}”`).join(", ");
  const [verb, pronoun] = unnamed.length === 1 ? ["was", "it"] : ["were", "them"];
  return `${quoted} ${verb} still being indexed when you asked, so this answer may not include ${pronoun}. `
    + "Ask again when it is ready.";
}

// The status shown when the text streamed so far is dropped (a `retry` event), until the next token: only a
// rewrite waits for the model. Any other retry's reply follows at once and says itself what happened (the
// passages quoted instead, or the removed documents named), so a status would never be seen.
export function retryStatus(reason, code) {
  return code === "rewrite" ? `Rewriting the answer: ${reason}` : "";
}
