"""Many people asking at once: a real `axiom serve`, a real PDF, concurrent answer streams (issue 10).

Usage: .venv/bin/python bench/load.py [--concurrency 1,5,10,50] [--chats 5] [--rounds 1] [--busy]
                                      [--env AXIOM_ANSWER_MAX_TOKENS=96 ...] [--keep-data DIR] [--json FILE]
       .venv/bin/python bench/load.py --url http://127.0.0.1:8000 [--pid PID] ...

Starts `axiom serve` (from this Python's bin directory) on a free loopback port with a fresh data directory,
makes ``--chats`` chats and uploads the SQuAD paper into each, then for each concurrency level N sends N
answer streams at once, spread over the chats, and reads every event. Times are from each request's start to
the first `sources`, `evidence` and `token` events and to `done`. A stream counts as done when it ends in
`done` with no `error` event; an HTTP error, a stream that ends without `done`, or one still open after
``--stream-timeout`` is a failure. Queue `status` events (stage "queued") are counted and their positions must
never rise within a stream. The server's RSS (with its child processes; shared pages counted once per process)
is sampled every 100 ms and its peak reported per level. ``--busy`` then asks one question while two
CPU-burning processes run. Events a server does not send are shown as "—", so the benchmark works before and
after the queue/evidence protocol change.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path

import httpx
from httpx_sse import EventSource

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import RssSampler, free_port, shared_data

import backend
from backend.eval.metrics import percentile

PDF_NAME = "academic_2col_squad_rajpurkar2016.pdf"
# Real questions about the SQuAD paper, and two it cannot answer (these should end as not_found, no error).
QUESTIONS = [
    "How many question-answer pairs does SQuAD contain?",
    "How much were the crowdworkers paid per hour?",
    "What F1 score does the logistic regression model achieve?",
    "What is human performance on SQuAD in F1?",
    "How many Wikipedia articles are in the dataset?",
    "How were the Wikipedia articles selected?",
    "What does the exact match metric measure?",
    "How is the dataset split into training, development and test sets?",
    "What F1 score does the sliding window baseline get?",
    "Which crowdsourcing platform was used to collect the questions?",
    "Which features does the logistic regression model use?",
    "How does performance change as syntactic divergence grows?",
    "Which GPU was used to train the logistic regression model?",
    "What did the authors conclude about reading comprehension in Chinese?",
]
HEALTH_POLL_SECONDS = 0.2
JOB_POLL_SECONDS = 0.5
# SIGINT lets uvicorn finish responses and close the stores; a server ignoring it is terminated, then killed.
STOP_GRACE_SECONDS = (30, 10)
BURNERS = 2


@dataclass
class Stream:
    """One asker's stream; times are seconds from the request's start, None when the event never came."""

    level: str
    chat_id: str
    session_id: str
    question: str
    http_status: int | None = None
    sources_s: float | None = None
    evidence_s: float | None = None
    first_token_s: float | None = None
    done_s: float | None = None
    error: str | None = None  # the `error` event's code
    error_s: float | None = None
    error_message: str | None = None
    failure: str | None = None  # what ended the stream otherwise: HTTP status, timeout, transport, no `done`
    answer_kind: str | None = None
    evidence_reason: str | None = None
    queued_positions: list[int | None] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.done_s is not None and self.error is None and self.failure is None

    @property
    def position_rose(self) -> bool:
        known = [p for p in self.queued_positions if p is not None]
        return any(later > earlier for earlier, later in itertools.pairwise(known))

    def take(self, kind: str, data: dict, at: float) -> None:
        if kind == "sources" and self.sources_s is None:
            self.sources_s = at
        elif kind == "evidence" and self.evidence_s is None:
            self.evidence_s = at
        elif kind == "token" and self.first_token_s is None:
            self.first_token_s = at
        elif kind == "status" and data.get("stage") == "queued":
            self.queued_positions.append(data.get("position"))
        elif kind == "done":
            self.done_s = at
            self.answer_kind = data.get("answer_kind")
            self.evidence_reason = data.get("evidence_reason")
        elif kind == "error":
            self.error, self.error_s = data.get("error", "unnamed"), at
            self.error_message = data.get("message")


@dataclass
class Level:
    name: str
    streams: list[Stream]
    peak_rss_mib: float | None


@contextmanager
def axiom_serve(data_dir: Path, env: dict[str, str], startup_timeout: float) -> Iterator[tuple[str, int]]:
    """A real `axiom serve` from this venv on a free loopback port: yields its URL and pid, then stops it."""
    port = free_port()
    axiom = Path(sys.executable).with_name("axiom")
    command = [str(axiom), "serve", "--host", "127.0.0.1", "--port", str(port)]
    log_path = data_dir / "serve.log"
    # Run from the data directory, so no .env of the repository is read: only the environment and --env apply.
    with log_path.open("ab") as log:
        logged_before = log.tell()  # a kept data directory's log holds earlier runs too
        process = subprocess.Popen(
            command, cwd=data_dir, env={**os.environ, **env, "AXIOM_DATA_DIR": str(data_dir)},
            stdout=log, stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_healthy(url, process, log_path, startup_timeout)
        yield url, process.pid
    finally:
        _stop(process)
        tracebacks = log_path.read_bytes()[logged_before:].count(b"Traceback")
        print(f"server log {log_path}: {tracebacks} tracebacks", file=sys.stderr)


def _wait_healthy(url: str, process: subprocess.Popen, log_path: Path, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            log_tail = log_path.read_text(errors="replace")[-3000:]
            sys.exit(f"axiom serve exited with {process.returncode}:\n{log_tail}")
        try:
            if httpx.get(f"{url}/health", timeout=5).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(HEALTH_POLL_SECONDS)
    sys.exit(f"axiom serve did not answer /health within {timeout:.0f} s")


def _stop(process: subprocess.Popen) -> None:
    for send, grace in ((lambda: process.send_signal(signal.SIGINT), STOP_GRACE_SECONDS[0]),
                        (process.terminate, STOP_GRACE_SECONDS[1])):
        if process.poll() is None:
            send()
        try:
            process.wait(timeout=grace)
            return
        except subprocess.TimeoutExpired:
            pass
    process.kill()
    process.wait()


async def prepare_chats(client: httpx.AsyncClient, pdf: Path, chats: int, timeout: float) -> list[str]:
    """``chats`` new chats, each holding the PDF, indexed. Prints how long the uploads took."""
    data = pdf.read_bytes()
    chat_ids, seconds = [], []
    for k in range(chats):
        created = await client.post("/chats", json={"title": f"load bench {k + 1}"})
        created.raise_for_status()
        chat_id = created.json()["id"]
        started = time.perf_counter()
        document = await _upload(client, chat_id, pdf.name, data, timeout)
        seconds.append(time.perf_counter() - started)
        chat_ids.append(chat_id)
    later = f", the other {chats - 1}: p50 {percentile(seconds[1:], 50):.1f} s" if chats > 1 else ""
    size = f"{document['chunk_count']} chunks, {document['page_count']} pages"
    first = f"first upload {seconds[0]:.1f} s"
    print(f"setup: {pdf.name} ({size}) into {chats} chats; {first}{later}", file=sys.stderr)
    return chat_ids


async def _upload(client: httpx.AsyncClient, chat_id: str, name: str, data: bytes, timeout: float) -> dict:
    files = [("files", (name, data, "application/pdf"))]
    response = await client.post(f"/chat/{chat_id}/documents", files=files)
    if response.status_code not in (200, 202):
        sys.exit(f"upload into {chat_id} failed: HTTP {response.status_code} {response.text}")
    body = response.json()
    if body["uploaded"]:
        return body["uploaded"][0]
    # A file whose text is over AXIOM_BACKGROUND_INGEST_CHARS became a job: poll it by id until it is ready (docs/api.md).
    job_id = body["jobs"][0]["id"]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        state = (await client.get(f"/chat/{chat_id}/documents/{job_id}")).json()
        if state["status"] == "ready":
            return state
        if state["status"] == "failed":
            sys.exit(f"indexing {name} into {chat_id} failed: {state['error']}")
        await asyncio.sleep(JOB_POLL_SECONDS)
    sys.exit(f"indexing {name} into {chat_id} did not finish within {timeout:.0f} s")


async def ask(client: httpx.AsyncClient, stream: Stream, timeout: float) -> Stream:
    """Sends the question and reads its stream to the end, recording when each event came."""
    started = time.perf_counter()
    body = {"message": stream.question, "session_id": stream.session_id}
    try:
        async with asyncio.timeout(timeout):
            async with client.stream("POST", f"/chat/{stream.chat_id}/stream", json=body) as response:
                stream.http_status = response.status_code
                if response.status_code != 200:
                    code = _error_code(await response.aread())
                    stream.failure = f"HTTP {response.status_code} {code}".strip()
                    return stream
                async for sse in EventSource(response).aiter_sse():
                    data = json.loads(sse.data) if sse.data else {}
                    stream.take(data.get("type", sse.event), data, time.perf_counter() - started)
    except TimeoutError:
        stream.failure = f"timeout {timeout:.0f} s"
    except httpx.HTTPError as error:
        stream.failure = f"transport {type(error).__name__}"
    if stream.failure is None and stream.done_s is None and stream.error is None:
        stream.failure = "ended without done"
    return stream


def _error_code(body: bytes) -> str:
    try:
        return json.loads(body).get("error", "")
    except (ValueError, AttributeError):
        return ""


async def run_level(
    client: httpx.AsyncClient, name: str, size: int, rounds: int, chat_ids: list[str], deadline: float,
    stream_timeout: float,
) -> list[Stream]:
    streams: list[Stream] = []
    for round_ in range(rounds):
        timeout = min(stream_timeout, deadline - time.monotonic())
        if timeout <= 0:
            print(f"level {name}: run time limit reached, round {round_ + 1} not run", file=sys.stderr)
            break
        # Askers take turns over the chats and the questions, each in a new session (no shared history).
        batch = [
            Stream(name, chat_ids[i % len(chat_ids)], uuid.uuid4().hex, QUESTIONS[k % len(QUESTIONS)])
            for i, k in enumerate(range(round_ * size, (round_ + 1) * size))
        ]
        streams += await asyncio.gather(*(ask(client, stream, timeout) for stream in batch))
    return streams


@contextmanager
def cpu_burners(seconds: float) -> Iterator[None]:
    """Pure-Python busy loops in processes of their own, each ending by itself after ``seconds`` at most."""
    code = f"import time\nend = time.monotonic() + {seconds:.0f}\nwhile time.monotonic() < end:\n    pass\n"
    burners = [subprocess.Popen([sys.executable, "-c", code]) for _ in range(BURNERS)]
    try:
        yield
    finally:
        for burner in burners:
            burner.kill()
            burner.wait()


async def measure(
    args: argparse.Namespace, url: str, sampler: RssSampler | None, deadline: float
) -> list[Level]:
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=None)
    async with httpx.AsyncClient(base_url=url, timeout=args.stream_timeout, limits=limits) as client:
        chat_ids = await prepare_chats(client, args.pdf, args.chats, args.stream_timeout)

        async def level(name: str, size: int, rounds: int) -> Level:
            if sampler:
                sampler.take_peak_mib()
            streams = await run_level(client, name, size, rounds, chat_ids, deadline, args.stream_timeout)
            print(f"level {name}: {sum(s.ok for s in streams)}/{len(streams)} done", file=sys.stderr)
            return Level(name, streams, sampler.take_peak_mib() if sampler else None)

        levels = [await level(str(size), size, args.rounds) for size in args.concurrency]
        if args.busy:
            with cpu_burners(max(0.0, deadline - time.monotonic())):
                levels.append(await level(f"1, {BURNERS} CPU burners", 1, 1))
    return levels


def _seconds(values: list[float | None], streams: int) -> str:
    known = [v for v in values if v is not None]
    if not known:
        return "—"
    text = f"{percentile(known, 50):.2f} / {percentile(known, 95):.2f}"
    return text if len(known) == streams else f"{text} (of {len(known)})"


def _counts(values: list[str], none: str) -> str:
    return ", ".join(f"{value} {n}" for value, n in Counter(values).most_common()) or none


def _queue(streams: list[Stream]) -> str:
    waited = [s for s in streams if s.queued_positions]
    if not waited:
        return "—"
    positions = [p for s in waited for p in s.queued_positions if p is not None]
    top = f", max position {max(positions)}" if positions else ""
    rose = sum(s.position_rose for s in waited)
    return f"{len(waited)} streams{top}, rose in {rose}"


def table(levels: list[Level]) -> str:
    columns = [
        "level", "streams", "done w/o error", "errors", "answer kinds", "sources p50/p95 s",
        "evidence p50/p95 s", "first token p50/p95 s", "done p50/p95 s", "queued", "peak RSS MiB",
    ]
    rows = [columns, ["---"] * len(columns)]
    for level in levels:
        s = level.streams
        kinds = [
            (x.answer_kind or "?") + (f" ({x.evidence_reason})" if x.evidence_reason else "")
            for x in s if x.done_s is not None
        ]
        rows.append([
            level.name, str(len(s)), str(sum(x.ok for x in s)),
            _counts([x.error for x in s if x.error] + [x.failure for x in s if x.failure], "0"),
            _counts(kinds, "—"),
            _seconds([x.sources_s for x in s], len(s)),
            _seconds([x.evidence_s for x in s], len(s)),
            _seconds([x.first_token_s for x in s], len(s)),
            _seconds([x.done_s if x.ok else None for x in s], len(s)),
            _queue(s),
            f"{level.peak_rss_mib:.0f}" if level.peak_rss_mib is not None else "—",
        ])
    return "\n".join("| " + " | ".join(row) + " |" for row in rows)


def _commit() -> str:
    """The commit of the code the server runs: the ``backend`` this venv imports (maybe another checkout)."""
    source = Path(backend.__file__).resolve().parents[1]
    described = subprocess.run(
        ["git", "-C", str(source), "describe", "--always", "--dirty"],
        capture_output=True, text=True, check=False,
    )
    return described.stdout.strip() or "unknown"


def _env_pair(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key, value


def _levels(text: str) -> list[int]:
    try:
        sizes = [int(part) for part in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected numbers separated by commas, got {text!r}") from None
    if any(size < 1 for size in sizes):
        raise argparse.ArgumentTypeError("every concurrency level must be at least 1")
    return sizes


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--concurrency", type=_levels, default=[1, 5, 10, 50], help="levels, e.g. 1,5,10,50")
    parser.add_argument("--chats", type=int, default=5, help="chats the askers of a level are spread over")
    parser.add_argument("--rounds", type=int, default=1, help="times each level is run (more samples)")
    parser.add_argument("--busy", action="store_true", help="finally one question while two CPU burners run")
    parser.add_argument("--pdf", type=Path, default=None, help=f"default: {PDF_NAME} from the public data")
    parser.add_argument("--env", type=_env_pair, action="append", default=[], metavar="KEY=VALUE",
                        help="a setting for the server started here (repeatable)")
    parser.add_argument("--keep-data", type=Path, default=None, metavar="DIR",
                        help="use and keep this data directory (the next run reuses it), not a fresh one")
    parser.add_argument("--url", default=None, help="an already running server instead of starting one")
    parser.add_argument("--pid", type=int, default=None, help="with --url: the server's pid, for its RSS")
    parser.add_argument("--stream-timeout", type=float, default=900,
                        help="seconds before an open stream is a failure")
    parser.add_argument("--startup-timeout", type=float, default=300, help="seconds for the server to answer")
    parser.add_argument("--max-minutes", type=float, default=180, help="bound on the whole run")
    parser.add_argument("--json", type=Path, default=None, help="write every stream's record here")
    args = parser.parse_args()
    if args.chats < 1 or args.rounds < 1:
        parser.error("--chats and --rounds must be at least 1")
    if args.url and (args.env or args.keep_data):
        parser.error("--env and --keep-data configure the server started here; not with --url")
    if args.url and not args.url.startswith(("http://127.0.0.1", "http://localhost")):
        parser.error("--url must be a loopback address")
    args.pdf = args.pdf or shared_data() / "pdfs" / PDF_NAME
    return args


def main() -> None:
    args = parse_args()
    deadline = time.monotonic() + args.max_minutes * 60
    header = [
        f"command: {shlex.join(sys.orig_argv)}",
        f"commit: {_commit()}; server: {args.url or 'started here'}"
        + "".join(f" {key}={value}" for key, value in args.env),
        "load average at start: {:.2f} {:.2f} {:.2f} ({} cores)".format(*os.getloadavg(), os.cpu_count()),
    ]
    with ExitStack() as stack:
        if args.url:
            url, pid = args.url.rstrip("/"), args.pid
            try:
                httpx.get(f"{url}/health", timeout=30).raise_for_status()
            except httpx.HTTPError as error:
                sys.exit(f"no healthy Axiom at {url}: {error}")
        else:
            if args.keep_data:
                args.keep_data.mkdir(parents=True, exist_ok=True)
                data_dir = args.keep_data.resolve()
            else:
                data_dir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="axiom-load-")))
            url, pid = stack.enter_context(axiom_serve(data_dir, dict(args.env), args.startup_timeout))
        sampler = stack.enter_context(RssSampler(pid)) if pid else None
        levels = asyncio.run(measure(args, url, sampler, deadline))
    print("\n".join(header) + "\n\n" + table(levels))
    if args.json:
        records = [{**asdict(stream), "ok": stream.ok} for level in levels for stream in level.streams]
        args.json.write_text(json.dumps({"header": header, "streams": records}, indent=1))


if __name__ == "__main__":
    main()
