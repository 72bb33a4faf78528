"""`axiom serve | ingest | search | ask | keys create | list | revoke | eval retrieval | groundedness | router |
answerability` — the command line, over the same services as the API."""

from __future__ import annotations

import argparse
import difflib
import getpass
import json
import logging
import os
import signal
import sys
import tempfile
import time
from pathlib import Path

from dotenv import dotenv_values
from pydantic import ValidationError

from backend.config import ENV_PREFIX, Settings, masked_url
from backend.errors import AxiomError
from backend.ids import ID_RULE, validate_id


def _serve(args: argparse.Namespace, settings: Settings) -> int:
    import uvicorn

    from backend.api.app import create_app
    from backend.api.auth import check_exposure
    from backend.api.settings import ApiSettings
    from backend.container import build_services
    from backend.memory import limit_heap_arenas
    from backend.startup import check_port, wait_for_servers, warn_if_the_model_server_is_away

    stopping = _Stopping()
    # Every check that can fail comes before the models load, and each fails as one line (main): the services
    # are built here, not in the server's start-up, which would print a failure as a traceback.
    api_settings = ApiSettings()
    check_port(args.host, args.port)
    wait_for_servers(settings)
    warn_if_the_model_server_is_away(settings)
    check_exposure(args.host, settings)
    limit_heap_arenas(2)  # before the services start their threads (backend/memory.py says why)
    stopping.deferring = True
    try:
        services = build_services(settings)
    finally:
        stopping.deferring = False
    try:
        stopping.stop_if_asked()
        app = create_app(settings, services=services, api_settings=api_settings)
        uvicorn.run(app, host=args.host, port=args.port, log_level="info")
        stopping.stop_if_asked()  # uvicorn.run swallows the KeyboardInterrupt of a Ctrl+C it raised again
    finally:
        services.close()
    return 0


class _Stopping:
    """How `axiom serve` ends on SIGTERM (`docker stop`, status 143) or Ctrl+C (130): by an exception, so the
    services built are closed (their reader processes too); uvicorn, once it has shut down, raises the signal
    again for this handler. While the services are built a first signal is only remembered, and acted on once
    they are: raised there, it could land in llama.cpp's log callback as the model loads, where ctypes drops
    it and the server would start anyway, or halfway through building, which nothing would close."""

    def __init__(self) -> None:
        self.received: int | None = None
        self.deferring = False
        for number in (signal.SIGTERM, signal.SIGINT):
            signal.signal(number, self._receive)

    def _receive(self, number: int, _frame) -> None:
        again, self.received = self.received is not None, number
        if self.deferring and not again:
            log.warning("Stopping once the services are built (a second signal stops at once)")
            return
        self.stop_if_asked()

    def stop_if_asked(self) -> None:
        if self.received == signal.SIGINT:
            raise KeyboardInterrupt
        if self.received is not None:
            raise SystemExit(128 + self.received)


def _ingest(args: argparse.Namespace, settings: Settings) -> int:
    from backend.container import build_services

    password = _password(args.password)
    services = build_services(settings)
    failures = 0
    try:
        if args.user:
            _give_chat(services, args.chat, args.user)
        # An operator storing in a deleted chat makes it again (docs/api.md): its files are stored, not refused.
        services.chats.forget_deletion(args.chat)
        for path in args.files:
            try:
                result = services.ingestion.ingest(args.chat, path.name, path.read_bytes(), password=password)
            except AxiomError as error:
                failures += 1
                print(f"FAILED  {path.name}: {error.message}")
                continue
            note = " (already in this chat)" if result.duplicate else ""
            print(f"ok      {result.filename}: {result.page_count} pages, {result.chunk_count} chunks, "
                  f"id {result.document_id}{note}")
    finally:
        services.close()
    return 1 if failures else 0


def _password(given: str | None) -> str | None:
    """``--password``'s value; "-": asked for without echoing it (or one line of standard input, when that is not a
    terminal), so it stays off the command line; "" or nothing: none."""
    if given == "-":
        given = getpass.getpass("PDF password: ") if sys.stdin.isatty() else sys.stdin.readline().rstrip("\r\n")
    return given or None


def _give_chat(services, chat_id: str, user_name: str) -> None:
    """The chat becomes ``user_name``'s (with AXIOM_AUTH=api-key only its owner reaches it): a new one, or one
    without an owner; another user's is refused."""
    from backend.errors import NotFound

    user = services.users.user_named(user_name)
    if user is None:
        raise NotFound(f"No user is called {user_name}; `axiom keys create --user {user_name}` makes one.")
    if services.chats.claim(chat_id, user.user_id, title=chat_id)[0].owner != user.user_id:
        raise NotFound(f"Chat {chat_id} belongs to another user.", chat_id=chat_id)


def _search(args: argparse.Namespace, settings: Settings) -> int:
    from backend.container import build_services

    _require_text(args.query, "query")
    result = build_services(settings).retriever.retrieve(args.chat, args.query)
    if not result.relevant:
        print("Nothing in this chat's documents passes the relevance threshold.")
    for rank, passage in enumerate(result.relevant, start=1):
        preview = " ".join(passage.parent.text.split())[:200]
        recognised = ", recognised text" if passage.parent.ocr else ""
        print(f"[{rank}] {passage.parent.filename} ({passage.parent.cited_page}{recognised}) "
              f"score {passage.score:.3f}\n    {preview}")
    return 0


def _ask(args: argparse.Namespace, settings: Settings) -> int:
    from backend.container import build_services
    from backend.conversations import Conversations

    _require_text(args.question, "question")
    services = build_services(settings)
    try:
        # The same rule as the API: a session answers for the chat it was started in only.
        session_id = Conversations(services.memory, services.chats, services.documents).session_for(
            args.chat, args.session or args.chat
        )
        # An operator asking in a deleted chat makes it again (docs/api.md): its answer is saved, not refused.
        services.chats.forget_deletion(args.chat)
        return _print_answer(services.pipeline.stream(args.question, chat_id=args.chat, session_id=session_id))
    finally:
        # Every generation has been joined by now (its stream is closed); the model is freed before exit, not by
        # the interpreter's teardown.
        services.close()


def _require_text(text: str, name: str) -> None:
    """The API's rule for a message, checked before the models load."""
    from backend.api.answers import HAS_TEXT_RULE, has_text
    from backend.errors import ValidationFailed

    if not has_text(text):
        raise ValidationFailed(f"The {name} {HAS_TEXT_RULE}.", field=name)


def _print_answer(events) -> int:
    for event in events:
        if event["type"] == "token":
            print(event["content"], end="", flush=True)
        elif event["type"] == "status":
            print(f"[{event['message']}]", file=sys.stderr, flush=True)
        elif event["type"] == "evidence":
            print(f"[From your documents:]\n{event['text']}\n", file=sys.stderr, flush=True)
        elif event["type"] == "retry":
            print(f"\n[{event['reason']}]\n", file=sys.stderr, flush=True)
        elif event["type"] == "result":
            result = event["result"]
            print(f"\n\n{result.answer}" if result.answer_kind in ("generated", "extractive") else "")
            for source in result.sources:
                pages = ", ".join(source["page_labels"])
                numbers = ", ".join(str(n) for n in source["source_numbers"])
                print(f"  [Source {numbers}] {source['filename']} ({pages})")
            grounded = "grounded" if result.is_grounded else "NOT grounded"
            print(f"  ({result.answer_kind}, {grounded}, intent {result.intent}, {result.processing_time_ms} ms)",
                  file=sys.stderr)
    return 0


def _user_store(settings: Settings):
    from backend.stores.database import open_database
    from backend.stores.users import UserStore

    return UserStore(open_database(settings))


def _keys_create(args: argparse.Namespace, settings: Settings) -> int:
    made = _user_store(settings).create_key(args.user)
    print(f"API key {made.record.key_id} for {made.record.user} (shown only now; it is stored hashed):\n\n"
          f"    {made.key}\n\nClients send it as `Authorization: Bearer {made.key}` (AXIOM_AUTH=api-key).")
    return 0


def _keys_list(args: argparse.Namespace, settings: Settings) -> int:
    keys = _user_store(settings).api_keys()  # first: a database that cannot be opened prints no heading
    print(f"{'KEY ID':<14}{'USER':<24}{'CREATED':<22}REVOKED")
    for key in keys:
        print(f"{key.key_id:<14}{key.user:<24}{_when(key.created_at):<22}{_when(key.revoked_at) or '-'}")
    return 0


def _keys_revoke(args: argparse.Namespace, settings: Settings) -> int:
    revoked = _user_store(settings).revoke(args.key_id)
    print(f"API key {revoked.key_id} of {revoked.user} revoked: it no longer works.")
    return 0


def _when(timestamp: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(timestamp)) if timestamp is not None else ""


def _eval_retrieval(args: argparse.Namespace, settings: Settings) -> int:
    from backend.container import build_services
    from backend.eval.beir import load_beir
    from backend.eval.retrieval import evaluate_retrieval

    dataset = load_beir(args.beir, args.split)
    if args.max_queries:
        dataset = dataset.first_queries(args.max_queries)
    log = (lambda message: print(message, file=sys.stderr)) if not args.quiet else (lambda _: None)
    with tempfile.TemporaryDirectory(prefix="axiom-eval-") as work_dir:
        report = evaluate_retrieval(build_services(_fresh_index(settings, work_dir)), dataset, depth=args.depth, log=log)
    print(json.dumps(report.as_dict(), indent=2) if args.json else report.table())
    return 0


def _fresh_index(settings: Settings, work_dir: str) -> Settings:
    """The settings with every store in ``work_dir``: a fresh index every run. The embedding cache stays the
    user's, so re-running does not re-embed."""
    stores = {
        "chroma_path", "bm25_dir", "database_url", "docstore_path", "memory_db_path", "chats_db_path",
        "chroma_host", "data_dir",
    }
    return Settings(**settings.model_dump(exclude=stores), data_dir=Path(work_dir), chroma_host=None)


def _eval_answerability(args: argparse.Namespace, settings: Settings) -> int:
    from backend.container import answerability_policy, build_services
    from backend.eval.answerability import run_answerability_eval, sweep, sweep_policies

    policy = answerability_policy(settings)
    with tempfile.TemporaryDirectory(prefix="axiom-eval-") as work_dir:
        services = build_services(_fresh_index(settings, work_dir))
        report, retrieved = run_answerability_eval(
            services, args.questions, args.shared_data, split=args.split, policy=policy,
            distractors=args.distractors, log=lambda message: print(message, file=sys.stderr),
            judge_mode=args.judge, limit=args.limit,
        )
        print(json.dumps(report.as_dict(), indent=2) if args.json else report.table())
        if args.sweep:
            print(f"{'coverage':>9}{'similarity':>11}{'margin':>8}{'context':>8}{'title':>6}{'answered':>10}"
                  f"{'not-found':>11}")
            for tried, answered, not_found in sweep(retrieved, sweep_policies(), services.embedder):
                print(f"{tried.min_coverage:>9.2f}{tried.min_similarity:>11.2f}{tried.relevance_margin:>8.2f}"
                      f"{tried.context_weight:>8.2f}{tried.title_weight:>6.2f}"
                      f"{answered:>10.3f}{not_found:>11.3f}")
    return 0


def _eval_groundedness(args: argparse.Namespace, settings: Settings) -> int:
    from backend.eval.groundedness import run_groundedness_eval

    if not args.halueval and not args.labelled:
        print("axiom eval groundedness: give --halueval, --labelled or both", file=sys.stderr)
        return 2
    print(run_groundedness_eval(args.halueval, args.json, args.labelled))
    return 0


def _eval_router(args: argparse.Namespace, settings: Settings) -> int:
    from backend.eval.router import run_router_eval

    print(run_router_eval(args.clinc, args.json, use_llm=args.llm))
    return 0


def _port(value: str) -> int:
    """A TCP port: uvicorn would take 99999 as another port (modulo 65536) and fail late on a negative one."""
    try:
        port = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a port number") from None
    if not 1 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{port} is not a port: give 1-65535")
    return port


def _id(value: str) -> str:
    """A chat or session id, checked before anything is loaded (a bad chat id was one FAILED line per file)."""
    try:
        return validate_id(value, field="id")
    except AxiomError:
        raise argparse.ArgumentTypeError(f"{value!r} is not an id: it should be {ID_RULE}") from None


def _existing_file(value: str) -> Path:
    """A file to read, checked before anything is loaded: a typo is one line and status 2, not a traceback once
    the models are loaded."""
    path = Path(value)
    if not path.is_file():
        problem = "is a folder, not a file" if path.is_dir() else "no such file"
        raise argparse.ArgumentTypeError(f"{value}: {problem}")
    return path


def _existing_folder(value: str) -> Path:
    path = Path(value)
    if not path.is_dir():
        problem = "is a file, not a folder" if path.exists() else "no such folder"
        raise argparse.ArgumentTypeError(f"{value}: {problem}")
    return path


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="axiom", description=__doc__,
        epilog="Settings are AXIOM_* environment variables, or lines of a .env file in the current folder "
        "(README.md lists them).",
    )
    commands = parser.add_subparsers(dest="command", required=True)

    serve = commands.add_parser(
        "serve", help="run the HTTP service",
        description="Serves the API and the web chat. Before the models load it waits up to "
        "AXIOM_STARTUP_WAIT_SECONDS for the database server and the Chroma server the settings name.",
    )
    serve.add_argument(
        "--host", default="127.0.0.1",
        help="address to listen on (default: %(default)s, this machine only; any other needs AXIOM_AUTH)",
    )
    serve.add_argument("--port", type=_port, default=8000, help="TCP port (default: %(default)s)")
    serve.set_defaults(run=_serve)

    ingest = commands.add_parser("ingest", help="add files to a chat's documents")
    ingest.add_argument("--chat", required=True, type=_id, help="chat id")
    ingest.add_argument(
        "--user", help="the user the chat belongs to (AXIOM_AUTH=api-key); without it, a chat made here has no "
        "owner, and no user reaches it while keys are on",
    )
    ingest.add_argument(
        "--password", help="opens the PDFs among the files that need a password to open (others ignore it). "
        "A password written here is visible to other users of this computer (ps) and kept in the shell's "
        "history: give \"-\" to be asked for it instead (or to read it from the first line of standard input)",
    )
    ingest.add_argument("files", nargs="+", type=_existing_file)
    ingest.set_defaults(run=_ingest)

    search = commands.add_parser("search", help="show the passages a question retrieves")
    search.add_argument("--chat", required=True, type=_id, help="chat id")
    search.add_argument("query", help="what to look for")
    search.set_defaults(run=_search)

    ask = commands.add_parser("ask", help="ask a chat's documents a question; the answer streams in")
    ask.add_argument("--chat", required=True, type=_id, help="chat id")
    ask.add_argument(
        "--session", type=_id,
        help="conversation id; without it every `axiom ask` in a chat continues one conversation (the chat's own, "
        "as in the web chat), so a follow-up question can refer to the previous answer. A session belongs to the "
        "chat it was started in: another chat's is refused",
    )
    ask.add_argument("question", help="the question, in quotes")
    ask.set_defaults(run=_ask)

    keys = commands.add_parser("keys", help="API keys, for AXIOM_AUTH=api-key")
    key_commands = keys.add_subparsers(dest="keys_command", required=True)
    create = key_commands.add_parser("create", help="make a key for a user (made on their first key); shown once")
    create.add_argument("--user", required=True, help=f"user name: {ID_RULE}")
    create.set_defaults(run=_keys_create)
    key_commands.add_parser("list", help="every key: id, user, created, revoked").set_defaults(run=_keys_list)
    revoke = key_commands.add_parser("revoke", help="stop a key from working (it stays listed)")
    revoke.add_argument("key_id", help="the key's id, from `axiom keys list`")
    revoke.set_defaults(run=_keys_revoke)

    evaluate = commands.add_parser("eval", help="measure quality on public datasets")
    evals = evaluate.add_subparsers(dest="eval_command", required=True)
    retrieval = evals.add_parser("retrieval", help="nDCG/recall/MRR/latency on a BEIR-format folder")
    retrieval.add_argument(
        "--beir", type=_existing_folder, required=True, help="folder with corpus.jsonl, queries.jsonl, qrels/"
    )
    retrieval.add_argument("--split", default="test")
    retrieval.add_argument("--max-queries", type=int, default=0, help="score only the first N queries")
    retrieval.add_argument("--depth", type=int, default=300, help="chunks taken from each retriever")
    retrieval.add_argument("--json", action="store_true", help="print the report as JSON")
    retrieval.add_argument("--quiet", action="store_true", help="no progress on stderr")
    retrieval.set_defaults(run=_eval_retrieval)
    groundedness = evals.add_parser(
        "groundedness", help="precision/recall of the groundedness check on HaluEval and/or labelled answers"
    )
    groundedness.add_argument(
        "--halueval", type=_existing_file, help="HaluEval qa_one-turn_data.json (three answer forms)"
    )
    groundedness.add_argument(
        "--labelled", type=_existing_file, help="labelled answers, JSON lines (e.g. bench/data/grounding_answers.jsonl)"
    )
    groundedness.add_argument("--json", action="store_true", help="print the report as JSON")
    groundedness.set_defaults(run=_eval_groundedness)
    router = evals.add_parser("router", help="intent router accuracy per class on CLINC150")
    router.add_argument("--clinc", type=_existing_file, required=True, help="CLINC150 data_full.json")
    router.add_argument("--llm", action="store_true", help="also use the configured LLM as the third layer")
    router.add_argument("--json", action="store_true", help="print the report as JSON")
    router.set_defaults(run=_eval_router)
    answerability = evals.add_parser(
        "answerability",
        help="honest not-found on unanswerable, answered on answerable questions (no LLM unless --judge says)",
    )
    answerability.add_argument(
        "--questions", type=_existing_file, default="bench/data/answerability.jsonl", help="the labelled questions"
    )
    answerability.add_argument(
        "--shared-data", type=_existing_folder, required=True, help="folder holding pdfs/ and beir-*/"
    )
    answerability.add_argument("--split", choices=("dev", "test", "test2", "test3", "test4", "all"), default="test")
    answerability.add_argument("--distractors", type=int, default=50, help="other abstracts per BEIR chat")
    answerability.add_argument("--sweep", action="store_true", help="also score a grid of policies (choose on dev)")
    answerability.add_argument("--json", action="store_true", help="print the report as JSON")
    answerability.add_argument(
        "--judge", choices=("evidence", "model", "both"), default="evidence",
        help="who decides (AXIOM_ANSWERABILITY_JUDGE): the rules, the configured LLM, or the LLM when the rules say no",
    )
    answerability.add_argument("--limit", type=int, help="only the split's first N questions (for a slow model)")
    answerability.set_defaults(run=_eval_answerability)
    return parser


# Settings read from the environment (AXIOM_…): a wrong value is the user's to fix, told as such, not a traceback.
_SETTINGS_MODELS = ("Settings", "ApiSettings")
log = logging.getLogger(__name__)


def _warn_of_misspelt_settings() -> None:
    """An AXIOM_ variable (or .env line) that is no setting but nearly one's name is ignored, as any other; the
    operator is told, so AXIOM_DATABSE_URL does not leave the chats in SQLite unnoticed. Names far from every
    setting (the tests' AXIOM_SHARED_DATA) are not settings mistyped, and pass quietly."""
    from backend.api.settings import ApiSettings

    settings = [ENV_PREFIX + name.upper() for model in (Settings, ApiSettings) for name in model.model_fields]
    given = {name.upper() for name in [*os.environ, *dotenv_values(".env")] if name.upper().startswith(ENV_PREFIX)}
    for name in sorted(given - set(settings)):
        if close := difflib.get_close_matches(name, settings, n=1, cutoff=0.8):
            log.warning("%s is not a setting, so it is ignored: did you mean %s?", name, close[0])


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    args = build_parser().parse_args(argv)
    _warn_of_misspelt_settings()
    try:
        return args.run(args, Settings())
    except AxiomError as error:
        print(f"error: {error.message}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # Ctrl+C while serve waits for its servers or loads, or while a command runs
        print("interrupted", file=sys.stderr)
        return 130
    except OSError as error:  # a file that went away since the start, or one a dataset names, cannot be read
        where = f"{error.filename}: " if error.filename else ""
        print(f"error: {where}{error.strerror or error}", file=sys.stderr)
        return 2
    except json.JSONDecodeError as error:  # an eval's dataset file that is not the JSON (lines) it should be
        print(f"error: the dataset file given is not JSON: {error}", file=sys.stderr)
        return 2
    except ValidationError as error:
        if error.title not in _SETTINGS_MODELS:
            raise
        for problem in error.errors():
            name = ENV_PREFIX + "_".join(map(str, problem["loc"])).upper()
            value = problem.get("input")
            shown = repr(masked_url(value) if isinstance(value, str) else value)  # a database URL's password
            print(f"error: the setting {name}={shown} is wrong: {problem['msg']}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
