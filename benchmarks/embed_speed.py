"""Indexing speed: sentence-transformers against the ONNX graph (float32) and its int8 copies.

On the same 512 TIL chunks (the first 512 in path order, the text `vault embed` reads):
chunks per second (median of --runs runs, model already loaded) for each backend x
threads x batch size, batches cut from length-sorted texts or in vault order; and how
well each backend's vectors agree with sentence-transformers' (min and mean cosine).
With --scifact, also SciFact semantic nDCG@10 with each candidate's vectors as the
index and the float32 query model answering (what `vault search` does).

    python -m benchmarks.embed_speed [--runs 5] [--scifact]

sentence-transformers (torch) is the reference here, which no test or command needs:
install it with `pip install torch==2.13.0 -e '.[reference]'` (the CPU build named first).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from benchmarks.reference import SentenceTransformerEmbedder
from cli_org.vault import onnx_graph
from cli_org.vault.embedders import OnnxEmbedder, _model_dir
from cli_org.vault.markdown import parse_note
from cli_org.vault.scan import chunk_embed_text, markdown_files

from .common import SHARED, WORK, median

N_CHUNKS = 512
MODELS = WORK / "embed-models"
VARIANTS = {  # file, and how it was made
    "onnx-fp32": "model.onnx",
    "onnx-int8": "model.int8-all.onnx",  # every weight product in int8
    "onnx-int8-mixed": "model.int8.onnx",  # the feed-forward outputs kept in float32 (the default)
}


def til_chunks(n: int = N_CHUNKS) -> list[str]:
    root = SHARED / "til"
    texts: list[str] = []
    for rel in sorted(markdown_files(root)):
        note = parse_note((root / rel).read_text(errors="replace"), rel)
        texts += [chunk_embed_text(note.title, c.heading, c.content) for c in note.chunks]
        if len(texts) >= n:
            break
    return texts[:n]


def build_models() -> None:
    MODELS.mkdir(parents=True, exist_ok=True)
    fp32 = MODELS / VARIANTS["onnx-fp32"]
    if not fp32.exists():
        onnx_graph.build(_model_dir(), fp32)
    for name, mixed in (("onnx-int8", False), ("onnx-int8-mixed", True)):
        if not (MODELS / VARIANTS[name]).exists():
            onnx_graph.quantize(fp32, MODELS / VARIANTS[name], float_ffn_output=mixed)


def st_run(model: SentenceTransformerEmbedder, texts: list[str], threads: int, batch: int, ordered: bool):
    import torch

    torch.set_num_threads(threads)
    model.batch_size = batch
    if ordered:  # sentence-transformers sorts by length within one call
        return model.embed(texts)
    return np.concatenate([model.embed(texts[i : i + batch]) for i in range(0, len(texts), batch)])


def onnx_run(model: OnnxEmbedder, texts: list[str], batch: int, ordered: bool):
    model.batch = batch
    if ordered:  # one call: the embedder sorts by token count and cuts batches
        return model.embed(texts)
    return np.concatenate([model.embed(texts[i : i + batch]) for i in range(0, len(texts), batch)])


def two_workers(model: OnnxEmbedder, texts: list[str], batch: int):
    """Two Python threads sharing one single-threaded session (the run releases the GIL)."""
    model.batch = batch
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    halves = [order[0::2], order[1::2]]
    with ThreadPoolExecutor(2) as pool:
        parts = list(pool.map(lambda h: model.embed([texts[i] for i in h]), halves))
    out = np.zeros((len(texts), 384), np.float32)
    for half, part in zip(halves, parts, strict=True):
        out[half] = part
    return out


def agreement(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    cos = (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    return float(cos.min()), float(cos.mean())


def speed(runs: int) -> list[dict]:
    """Every setting once per round, rounds repeated: load from other work on the machine
    falls on all settings alike, and the median over rounds is reported."""
    texts = til_chunks()
    reference = SentenceTransformerEmbedder()
    ref = reference.embed(texts)
    onnx = {(b, t): OnnxEmbedder(MODELS / f, threads=t) for b, f in VARIANTS.items() for t in (1, 2)}
    # Every backend at threads 2, batch 32, length-sorted; the other settings on the int8
    # model with the feed-forward outputs in float32 (the default): a fuller grid took
    # longer than this shared machine had to give.
    # (backend, threads, batch, length-sorted, run). sentence-transformers sorts by length
    # inside one call; its unsorted row is the old `vault embed` path (calls of 64 chunks
    # in vault order).
    settings: list[tuple] = [
        ("onnx-int8-mixed", 2, 32, True, lambda: onnx_run(onnx["onnx-int8-mixed", 2], texts, 32, True)),
        ("sentence-transformers", 2, 32, True, lambda: st_run(reference, texts, 2, 32, True)),
        ("onnx-fp32", 2, 32, True, lambda: onnx_run(onnx["onnx-fp32", 2], texts, 32, True)),
        ("onnx-int8", 2, 32, True, lambda: onnx_run(onnx["onnx-int8", 2], texts, 32, True)),
        ("sentence-transformers", 2, 64, False, lambda: st_run(reference, texts, 2, 64, False)),
    ]
    default, one = onnx["onnx-int8-mixed", 2], onnx["onnx-int8-mixed", 1]
    settings += [
        ("onnx-int8-mixed", 2, 32, False, lambda: onnx_run(default, texts, 32, False)),
        ("onnx-int8-mixed", 1, 32, True, lambda: onnx_run(one, texts, 32, True)),
        ("onnx-int8-mixed", "2 workers x 1", 32, True, lambda: two_workers(one, texts, 32)),
        *[("onnx-int8-mixed", 2, b, True, lambda b=b: onnx_run(default, texts, b, True)) for b in (16, 64)],
    ]
    # The first call of each model allocates: warm each up on a few texts, unmeasured.
    st_run(reference, texts[:32], 2, 32, True)
    for model in onnx.values():
        model.embed(texts[:32])
    rates: list[list[float]] = [[] for _ in settings]
    vectors: list = [None] * len(settings)
    for round_ in range(runs):
        for i, (backend, threads, batch, ordered, run) in enumerate(settings):
            started = time.perf_counter()
            vectors[i] = run()
            rates[i].append(N_CHUNKS / (time.perf_counter() - started))
            lo, mean = agreement(vectors[i], ref)
            print(
                f"round {round_ + 1}: {backend} threads={threads} batch={batch} sorted={ordered}: "
                f"{rates[i][-1]:.1f}/s cos min {lo:.4f} mean {mean:.4f}",
                file=sys.stderr,
                flush=True,
            )
    rows = []
    for (backend, threads, batch, ordered, _), rate, v in zip(settings, rates, vectors, strict=True):
        lo, mean = agreement(v, ref)
        rows.append(
            {
                "backend": backend,
                "threads": threads,
                "batch": batch,
                "length_sorted": ordered,
                "chunks_per_s": round(median(rate), 1),
                "min_max": f"{min(rate):.1f}-{max(rate):.1f}",
                "cos_min": round(lo, 4),
                "cos_mean": round(mean, 4),
            }
        )
    for model in onnx.values():
        model.close()
    return rows


def scifact(candidates: list[str]) -> list[dict]:
    """Semantic nDCG@10 on SciFact with each candidate's vectors in the index."""
    from cli_org.db.connect import connect
    from cli_org.vault import search as vs
    from cli_org.vault.embed import embed_pending
    from cli_org.vault.scan import scan

    from .common import bench_settings, ndcg_at
    from .scifact import load_queries, ranked_ids, write_vault

    write_vault()
    queries, qrels = load_queries()
    query_model = OnnxEmbedder(MODELS / VARIANTS["onnx-fp32"])
    out = []
    for name in candidates:
        if name == "sentence-transformers":
            embedder = SentenceTransformerEmbedder()
        else:
            embedder = OnnxEmbedder(MODELS / VARIANTS[name], threads=2, batch=32)
        settings = bench_settings(f"embed_{name.replace('-', '_')}", fresh=True)
        with connect(settings) as conn:
            scan(conn, WORK / "scifact-vault", replace=True)
            done = embed_pending(conn, embedder)
            ranked = {
                q: ranked_ids(vs.search(conn, text, mode="semantic", limit=10, embedder=query_model))
                for q, text in queries.items()
            }
        embedder.close()
        nd = sum(ndcg_at(ranked[q], qrels[q]) for q in queries) / len(queries)
        out.append({"index_backend": name, "semantic_ndcg@10": round(nd, 4), "embed": done.line()})
        print(json.dumps(out[-1]), file=sys.stderr, flush=True)
    return out


def markdown(rows: list[dict]) -> str:
    head = list(rows[0])
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    lines += ["| " + " | ".join(str(r[h]) for h in head) + " |" for r in rows]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5, help="timed runs per setting (median reported)")
    parser.add_argument("--scifact", action="store_true", help="also SciFact semantic nDCG@10 per backend")
    parser.add_argument("--no-speed", action="store_true", help="skip the speed grid")
    parser.add_argument("--candidates", default=",".join(["sentence-transformers", *VARIANTS]), help="for --scifact")
    args = parser.parse_args()
    build_models()
    result: dict[str, list[dict]] = {}
    if not args.no_speed:
        result["speed"] = speed(args.runs)
        print(markdown(result["speed"]))
    if args.scifact:
        result["scifact"] = scifact(args.candidates.split(","))
        print(markdown(result["scifact"]))
    out = Path(WORK / f"embed-speed-{int(time.time())}.json")
    out.write_text(json.dumps(result, indent=1))
    print(f"saved to {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
