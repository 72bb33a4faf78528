import assert from "node:assert/strict";
import { test } from "node:test";

import { SSEParser } from "../assets/js/sse.js";

function parse(chunks) {
  const events = [];
  const parser = new SSEParser((event) => events.push(event));
  for (const chunk of chunks) parser.push(chunk);
  return events;
}

test("reads named events with JSON data and skips keep-alive comments", () => {
  const events = parse([
    'event: status\r\ndata: {"type": "status"}\r\n\r\n',
    ": ping - 2026-11-22 15:04:36\r\n\r\n",
    'event: token\r\ndata: {"type": "token", "content": "Hi"}\r\n\r\n',
  ]);
  assert.deepEqual(events, [
    { event: "status", data: '{"type": "status"}' },
    { event: "token", data: '{"type": "token", "content": "Hi"}' },
  ]);
});

test("an event split anywhere across chunks, even between \\r and \\n, arrives whole", () => {
  const stream = 'event: token\r\ndata: {"content": "a"}\r\n\r\nevent: done\r\ndata: {"x": 1}\r\n\r\n';
  for (let cut = 1; cut < stream.length; cut += 1) {
    assert.deepEqual(parse([stream.slice(0, cut), stream.slice(cut)]), [
      { event: "token", data: '{"content": "a"}' },
      { event: "done", data: '{"x": 1}' },
    ], `cut at ${cut}`);
  }
});

test("multi-line data is joined with newlines; an unnamed event is a message", () => {
  assert.deepEqual(parse(["data: one\ndata: two\n\n"]), [{ event: "message", data: "one\ntwo" }]);
});

test("an event without its blank line is not dispatched yet", () => {
  assert.deepEqual(parse(['event: token\ndata: {"content": "partial"}\n']), []);
});
