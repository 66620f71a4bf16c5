"""Throughput and latency of ``mluke serve`` under concurrent clients, batching on against off, and its memory.

Two ``python -m mluke serve`` processes run side by side on 127.0.0.1 (``--batching`` and ``--no-batching``,
the same model, kb and thread count); for each level, in ``--repeats`` interleaved rounds (best round kept,
every round's ratio recorded), the script sends to each in turn ``POST /link`` requests of one
short English sentence each (the kb's capitals and countries, ``candidates=0``) from 1, 8 and 32 concurrent
clients (asyncio in this process, one keep-alive connection each), ``--requests`` per level after ``--warmup``
unmeasured ones, and records requests/s and the p50 / p99 latency. The answers of the two modes are compared
(the mentions' spans and keys of every text must be equal). Then, on the batching server, it records the
server's RSS (VmRSS from /proc) after ``--rss-early`` requests and after ``--rss-late`` requests (8 clients):
flat memory means no growth per request. The 1-minute load average before and after is recorded: this machine is shared.

    python benchmarks/serve_load.py [--requests 400] [--repeats 2] [--rss-early 100] [--rss-late 10000] [--model DIR]
                                    [--world N] [--out benchmarks/results/serve_load.json] [--smoke]

``--world N`` (with a checkpoint of :func:`common.make_checkpoint`, e.g. the mluke-base shape): serve a kb of N
generated entities over the checkpoint's own vocabulary (:func:`common.world_kb`: made-up names, some shared by 2-3
entities) and send generated sentences of 12 words with 3 of its names, so that every request needs the model
(with the embedded kb, no candidate is in such a checkpoint's vocabulary and the prior alone decides).

``--smoke``: the tiny demo model, 12 requests per level, RSS after 10 and 40 requests, nothing written.
"""

from __future__ import annotations

import asyncio
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

from common import add_smoke, bench_threads, demo_folder, script_parser, world_kb, world_texts

HERE = Path(__file__).resolve().parent
SENTENCES = [
    "Tokyo is the capital of Japan.",
    "Paris is the capital of France.",
    "Berlin is the capital of Germany.",
    "Madrid is the capital of Spain.",
    "Rome is the capital of Italy.",
    "Cairo is the capital of Egypt.",
    "Ottawa is the capital of Canada.",
    "Lima is the capital of Peru.",
    "Nairobi is the capital of Kenya.",
    "Hanoi is the capital of Vietnam.",
    "Oslo is the capital of Norway.",
    "Athens is the capital of Greece.",
]
LEVELS = (1, 8, 32)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(
    model: Path, batching: bool, threads: int, db: Path | None = None
) -> tuple[subprocess.Popen[bytes], str]:
    """``python -m mluke serve`` on 127.0.0.1 (a free port), once its /health answers."""
    import httpx

    port = free_port()
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads)}
    command = [sys.executable, "-m", "mluke", "serve", "--port", str(port), "--model", str(model)]
    command += ["--batching" if batching else "--no-batching", "--queue-texts", "4096"]
    command += ["--db", str(db)] if db is not None else []
    proc = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"the server exited: {proc.stderr.read().decode()[-3000:] if proc.stderr else ''}")
        try:
            if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                return proc, url
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    proc.kill()
    raise SystemExit("the server did not start within 600 s")


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


class Connection:
    """One keep-alive HTTP/1.1 connection to the server, as lean as a client can be (the load generator shares
    the machine with the server: httpx's own cost per request would be part of the figures)."""

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def post(self, path: str, body: dict) -> tuple[int, bytes]:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        assert self.reader is not None
        data = json.dumps(body).encode()
        head = f"POST {path} HTTP/1.1\r\nHost: {self.host}\r\nContent-Type: application/json\r\n"
        self.writer.write(f"{head}Content-Length: {len(data)}\r\n\r\n".encode() + data)
        await self.writer.drain()
        status = int((await self.reader.readline()).split()[1])
        length = 0
        while (line := await self.reader.readline()) not in (b"\r\n", b""):
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        return status, await self.reader.readexactly(length)

    async def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            await self.writer.wait_closed()


async def load(
    url: str, clients: int, requests: int, start: int = 0, texts: list[str] = SENTENCES
) -> tuple[list[float], dict[int, list]]:
    """``requests`` POST /link from ``clients`` concurrent clients (one connection each): the latencies and each
    text's answer."""
    host, port = url.removeprefix("http://").split(":")
    latencies: list[float] = []
    answers: dict[int, list] = {}
    counter = iter(range(start, start + requests))

    async def client() -> None:
        connection = Connection(host, int(port))
        try:
            for i in counter:
                text = texts[i % len(texts)]
                t0 = time.perf_counter()
                status, body = await connection.post("/link", {"text": text, "lang": "en"})
                latencies.append(time.perf_counter() - t0)
                if status != 200:
                    raise SystemExit(f"request {i}: {status} {body[:300]!r}")
                mentions = json.loads(body)["results"][0]["mentions"]
                answers[i % len(texts)] = [(m["start"], m["end"], m["key"]) for m in mentions]
        finally:
            await connection.close()

    await asyncio.gather(*(client() for _ in range(clients)))
    return latencies, answers


def measure(url: str, clients: int, requests: int, warmup: int, texts: list[str]) -> tuple[dict, dict[int, list]]:
    asyncio.run(load(url, clients, warmup, texts=texts))
    t0 = time.perf_counter()
    latencies, answers = asyncio.run(load(url, clients, requests, texts=texts))
    wall = time.perf_counter() - t0
    q = statistics.quantiles(latencies, n=100, method="inclusive")
    row = {
        "clients": clients,
        "requests": requests,
        "requests_per_s": round(requests / wall, 2),
        "p50_ms": round(q[49] * 1000, 1),
        "p99_ms": round(q[98] * 1000, 1),
    }
    return row, answers


def main() -> None:
    ap = script_parser(__doc__, requests=400, warmup=16, rss_early=100, rss_late=10_000, repeats=2)
    add_smoke(ap)
    ap.add_argument("--model", type=Path, default=None, help="checkpoint folder (default: the demo model)")
    ap.add_argument("--out", type=Path, default=HERE / "results" / "serve_load.json")
    ap.add_argument("--world", type=int, default=0, help="serve a kb of this many generated entities (see above)")
    args = ap.parse_args()
    if args.smoke:
        args.requests, args.warmup, args.rss_early, args.rss_late, args.repeats = 12, 2, 10, 40, 1
    model = args.model or demo_folder(args.smoke, progress=True)
    threads = bench_threads()
    load_before = os.getloadavg()[0]
    results: dict = {"modes": {}, "threads": threads, "model": str(model)}
    db, texts = None, SENTENCES
    if args.world:
        import tempfile

        db = Path(tempfile.mkdtemp(prefix="serve-world-")) / "world.sqlite"
        texts = world_texts(world_kb(db, args.world), 64, words=12, mentions=3)
        results["world"] = {"entities": args.world, "texts": len(texts), "words": 12, "mentions": 3}
    answers: dict[str, dict[int, list]] = {}
    modes = {"batching": True, "no-batching": False}
    servers = {mode: start_server(model, batching, threads, db) for mode, batching in modes.items()}
    try:
        rounds: dict[str, dict[int, list[dict]]] = {m: {c: [] for c in LEVELS} for m in modes}
        for _ in range(args.repeats):  # interleaved: both modes see the same machine load
            for clients in LEVELS:
                for mode, (_, url) in servers.items():
                    row, seen = measure(url, clients, args.requests, args.warmup, texts)
                    answers.setdefault(mode, {}).update(seen)
                    rounds[mode][clients].append(row)
                    print(json.dumps({"mode": mode, **row}), flush=True)
        best = {m: [max(rounds[m][c], key=lambda r: r["requests_per_s"]) for c in LEVELS] for m in modes}
        results["modes"] = best
        results["rounds"] = rounds
        proc, url = servers["batching"]
        asyncio.run(load(url, 8, args.rss_early, texts=texts))
        early = rss_mb(proc.pid)
        asyncio.run(load(url, 8, args.rss_late - args.rss_early, start=args.rss_early, texts=texts))
        late = rss_mb(proc.pid)
        results["rss_mb"] = {f"after_{args.rss_early}": round(early, 1), f"after_{args.rss_late}": round(late, 1)}
        print(json.dumps({"rss_mb": results["rss_mb"]}), flush=True)
    finally:
        for proc, _ in servers.values():
            proc.terminate()
            proc.wait(timeout=60)
    if answers["batching"] != answers["no-batching"]:
        raise SystemExit("the answers with and without batching differ")
    results["answers_equal"] = True
    on, off = results["modes"]["batching"], results["modes"]["no-batching"]
    results["speedup"] = {
        str(a["clients"]): round(a["requests_per_s"] / b["requests_per_s"], 2) for a, b in zip(on, off)
    }
    results["speedup_per_round"] = {
        str(c): [
            round(a["requests_per_s"] / b["requests_per_s"], 2)
            for a, b in zip(rounds["batching"][c], rounds["no-batching"][c])
        ]
        for c in LEVELS
    }
    results["load_1min"] = [round(load_before, 2), round(os.getloadavg()[0], 2)]
    results["machine"] = f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores"
    print(json.dumps({"speedup": results["speedup"]}), flush=True)
    if not args.smoke:
        args.out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
