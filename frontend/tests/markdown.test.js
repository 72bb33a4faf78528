// The markdown layer of markdown.js (marked with its strict renderer). DOMPurify and the citation chips
// need a DOM: tests/frontend/test_markdown_safety.py runs renderMarkdown itself in Chromium.
import assert from "node:assert/strict";
import { test } from "node:test";

import { markdownHtml } from "../assets/js/markdown.js";

test("lists, emphasis and code render as their elements", () => {
  assert.equal(markdownHtml("- one\n- two").trim(), "<ul>\n<li>one</li>\n<li>two</li>\n</ul>");
  assert.equal(markdownHtml("1. first\n2. second").trim(), "<ol>\n<li>first</li>\n<li>second</li>\n</ol>");
  assert.match(markdownHtml("**bold** and *slanted*"), /<strong>bold<\/strong> and <em>slanted<\/em>/);
  assert.match(markdownHtml("run `make run` now"), /<code>make run<\/code>/);
  assert.match(markdownHtml("```\nx = 1\n```"), /<pre><code>x = 1\n<\/code><\/pre>/);
});

test("a line break the model wrote is kept", () => {
  assert.equal(markdownHtml("first line\nsecond line").trim(), "<p>first line<br>second line</p>");
});

test("the extractive answer's quotes are a list with their citations in the items", () => {
  const html = markdownHtml("- “Paid $9 per hour.” [Source 1]\n- “Each took 4 minutes.” [Source 2]");
  assert.equal(html.trim(),
    "<ul>\n<li>“Paid $9 per hour.” [Source 1]</li>\n<li>“Each took 4 minutes.” [Source 2]</li>\n</ul>");
});

test("citations stay citations, never links", () => {
  const html = markdownHtml("[Source 1]: https://a.org\n\nSee [Source 1] and [Source 2](https://a.org).");
  assert.match(html, /See \[Source 1\] and \[Source 2\]/);
  assert.doesNotMatch(html, /<a[^>]*>Source/);
});

test("raw HTML is escaped into text, inline and in blocks", () => {
  assert.equal(markdownHtml("Look <img src=x onerror=alert(1)> here").trim(),
    "<p>Look &lt;img src=x onerror=alert(1)&gt; here</p>");
  assert.equal(markdownHtml("<script>alert(1)</script>").trim(),
    "<p>&lt;script&gt;alert(1)&lt;/script&gt;</p>");
  assert.equal(markdownHtml("<div onclick=\"alert(1)\">\nhi\n</div>").trim(),
    "<p>&lt;div onclick=&quot;alert(1)&quot;&gt;<br>hi<br>&lt;/div&gt;</p>");
  assert.match(markdownHtml("a <b onmouseover=alert(1)>b</b> c"),
    /a &lt;b onmouseover=alert\(1\)&gt;b&lt;\/b&gt; c/);
  assert.doesNotMatch(markdownHtml("<iframe src=https://example.org></iframe>"), /<iframe/);
});

test("links only to the web or mail; any other is its text", () => {
  for (const hostile of [
    "[x](javascript:alert(1))", "[x](JAVASCRIPT:alert(1))", "[x](jav&#x61;script:alert(1))",
    "[x](data:text/html,<script>alert(1)</script>)", "[x](vbscript:msgbox)", "[x](//example.org)"]) {
    const html = markdownHtml(hostile);
    assert.doesNotMatch(html, /<a /, hostile);
    assert.match(html, /<p>x<\/p>/, hostile);
  }
  assert.doesNotMatch(markdownHtml("<javascript:alert(1)>"), /<a /);
  assert.match(markdownHtml("[the site](https://a.org)"), /<a href="https:\/\/a.org">the site<\/a>/);
  assert.match(markdownHtml("<mailto:a@example.org>"), /<a href="mailto:a@example.org">/);
});

test("an image is its description: nothing is loaded", () => {
  assert.equal(markdownHtml("![a chart](https://example.org/x.png)").trim(), "<p>a chart</p>");
  assert.equal(markdownHtml("![<img src=x onerror=alert(1)>](x)").trim(),
    "<p>&lt;img src=x onerror=alert(1)&gt;</p>");
});

test("code keeps markup as text", () => {
  assert.match(markdownHtml("`<img src=x onerror=alert(1)>`"),
    /<code>&lt;img src=x onerror=alert\(1\)&gt;<\/code>/);
});
