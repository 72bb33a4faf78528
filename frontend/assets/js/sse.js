// Server-sent events over a POST response. EventSource can only GET, and a question is a POST body, so the
// stream is read with fetch and parsed here (https://html.spec.whatwg.org/multipage/server-sent-events.html).

export class SSEParser {
  constructor(onEvent) {
    this.onEvent = onEvent;
    this.buffer = "";
    this.eventName = "";
    this.dataLines = [];
  }

  push(text) {
    this.buffer += text;
    // A chunk may end between the "\r" and "\n" of one line ending: hold a trailing "\r" back, or the "\n"
    // arriving next would read as an empty line and dispatch the event early.
    const complete = this.buffer.endsWith("\r") ? this.buffer.length - 1 : this.buffer.length;
    const lines = this.buffer.slice(0, complete).split(/\r\n|\r|\n/);
    this.buffer = lines.pop() + this.buffer.slice(complete);
    for (const line of lines) this.line(line);
  }

  line(line) {
    if (line === "") {
      this.dispatch();
      return;
    }
    if (line.startsWith(":")) return; // a keep-alive comment
    const colon = line.indexOf(":");
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "event") this.eventName = value;
    else if (field === "data") this.dataLines.push(value);
  }

  dispatch() {
    if (this.dataLines.length > 0) {
      this.onEvent({ event: this.eventName || "message", data: this.dataLines.join("\n") });
    }
    this.eventName = "";
    this.dataLines = [];
  }
}
