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
