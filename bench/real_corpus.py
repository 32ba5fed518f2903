"""A real corpus for the vector benchmarks: commit messages of public repositories, embedded
by the local model (multilingual-e5-small, 4-bit).

Why: the test fake embedder's vectors are nearly isotropic; a real model's are not (high mutual
cosine), and binary codes, int8 and ANN indexes behave differently on them, so vector figures
are taken on a real model's vectors. Commit messages are human-written developer
text close to what agents store as memories: decisions, errors fixed, constraints.

Everything lives outside the repository, in ``~/.cache/agent-memory-bench/`` (``--cache``):

* ``corpus.jsonl``: one ``{"i", "repo", "commit", "text"}`` per line, ``--size`` texts. A text
  is a commit's subject line (30 to 200 characters, trailers and ``[ci skip]`` dropped,
  duplicates dropped): memory-sized statements ("Avoid needless Array#flatten calls"), and
  short enough that 100,000 embed in hours on one core, which whole messages are not.
* ``queries.jsonl``: 200 held-out queries ``{"q", "query", "target", "commit"}``: the first
  paragraph of a commit's body (80-300 characters, the why of the change), whose target is
  that commit's subject line in the corpus. Subjects that appear verbatim in their body are
  not chosen, so the query never contains its target.
* ``vectors.f32`` / ``queries.f32``: raw little-endian float32 rows of 384 (``np.fromfile``),
  with ``*.done`` progress markers: ``embed`` appends and can be stopped and resumed.
* ``manifest.json``: sources (pinned commits), counts, and the sha256 of the two jsonl files.

Commands::

    python -m bench.real_corpus build --git git=/path/git.git --git rails=/path/rails.git
    nohup python -m bench.real_corpus embed --threads 1 > ~/.cache/agent-memory-bench/embed.log &
    python -m bench.real_corpus stats            # neighbour cosines of real queries
    python -m bench.real_corpus draw --count 1000000   # "around real" vectors, noise calibrated

Deterministic: the same sources at the same pinned commits give byte-identical jsonl files
(the manifest's hashes say so); the order is a hash of repository and commit, so any prefix of
the corpus is an unbiased sample of both repositories.
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench._common import clip

DEFAULT_CACHE = Path.home() / ".cache" / "agent-memory-bench"
DIMENSION = 384

# The sources: public repositories whose history is long and whose messages are written by
# people (few bots), pinned at the commit the corpus was built from.
SOURCES = {
    "git": "1a3e64c6c4a623626ff0687008732a8e007e2a1c",  # github.com/git/git
    "rails": "2a2db1e8d6d104ee0611efcae7eb023af65cff34",  # github.com/rails/rails
}
DEFAULT_SIZE = 100_000
QUERY_COUNT = 200
MIN_CHARS = 30  # shorter subjects are "Fix typo", "The 16th batch": not memories
MAX_CHARS = 200
QUERY_MIN_CHARS = 80
QUERY_MAX_CHARS = 300
EMBED_CHUNK = 256  # texts per appended block (one progress mark each)

_TRAILER = re.compile(
    r"^\s*(?:[A-Z][A-Za-z-]*-by|Co-authored-by|Change-Id|Cc|CC|git-svn-id|Closes|Fixes|Ref|"
    r"Refs|References|Bug|Link|Reported-at|Noticed-by|Thanks-to)\s*:.*$"
)
_CI_SKIP = re.compile(r"\s*\[(?:ci|skip)[ -](?:skip|ci)\]", re.IGNORECASE)


@dataclass(frozen=True)
class Commit:
    repo: str
    commit: str
    subject: str
    body: str


def _clean_body(body: str) -> str:
    """The body without trailers (sign-offs, svn ids) and with blank-line runs collapsed."""
    lines = [ln.rstrip() for ln in body.splitlines() if not _TRAILER.match(ln)]
    text = "\n".join(lines)
    text = re.sub(r"\n{3,}", "\n\n", text)
    return _CI_SKIP.sub("", text).strip()


def read_commits(repo: str, git_dir: str, pin: str) -> Iterator[Commit]:
    """Non-merge commits reachable from the pinned commit, as git prints them."""
    fmt = "%H%x1f%s%x1f%b%x1e"
    out = subprocess.run(
        ["git", f"--git-dir={git_dir}", "log", "--no-merges", "--no-color", f"--format={fmt}", pin],
        check=True,
        capture_output=True,
    ).stdout.decode("utf-8", errors="replace")
    for record in out.split("\x1e"):
        record = record.strip("\n")
        if not record:
            continue
        sha, subject, body = record.split("\x1f", 2)
        yield Commit(repo, sha, _CI_SKIP.sub("", subject).strip(), _clean_body(body))


def _key(*parts: str) -> str:
    return hashlib.sha256(":".join(parts).encode()).hexdigest()


def _norm(text: str) -> str:
    return " ".join(text.casefold().split())


def _first_paragraph(body: str) -> str:
    """The body's first paragraph on one line, clipped: the motivation a person writes."""
    return clip(" ".join(body.split("\n\n", 1)[0].split()), QUERY_MAX_CHARS)


def _query_candidate(c: Commit) -> bool:
    """A subject that names one change, and a body whose first paragraph explains it."""
    para = _first_paragraph(c.body)
    return (
        len(c.subject.split()) >= 4
        and not c.subject.startswith(("Merge", "Revert"))
        and len(para) >= QUERY_MIN_CHARS
        and _norm(c.subject) not in _norm(c.body)
    )


def build(
    sources: dict[str, str],
    cache: Path,
    size: int,
    queries: int,
    pins: dict[str, str] = SOURCES,
) -> dict[str, Any]:
    """Write corpus.jsonl, queries.jsonl and manifest.json; return the manifest.

    ``sources`` maps a source name to its git directory, ``pins`` to the commit to read from.
    """
    commits: list[Commit] = []
    for repo, git_dir in sorted(sources.items()):
        commits.extend(read_commits(repo, git_dir, pins[repo]))
    commits.sort(key=lambda c: _key(c.repo, c.commit))
    chosen = _choose(commits, size)
    held = sorted(
        (i for i, (c, _) in enumerate(chosen) if _query_candidate(c)),
        key=lambda i: _key("query", chosen[i][0].commit),
    )[:queries]
    cache.mkdir(parents=True, exist_ok=True)
    corpus_path, queries_path = cache / "corpus.jsonl", cache / "queries.jsonl"
    _write_rows(
        corpus_path,
        (
            {"i": i, "repo": c.repo, "commit": c.commit, "text": text}
            for i, (c, text) in enumerate(chosen)
        ),
    )
    _write_rows(
        queries_path,
        (
            {
                "q": q,
                "query": _first_paragraph(chosen[i][0].body),
                "target": i,
                "commit": chosen[i][0].commit,
            }
            for q, i in enumerate(sorted(held))
        ),
    )
    by_repo: dict[str, int] = {}
    for c, _ in chosen:
        by_repo[c.repo] = by_repo.get(c.repo, 0) + 1
    manifest = {
        "sources": {r: {"pinned": pins[r], "non_merge_commits": 0} for r in sources},
        "texts": len(chosen),
        "texts_by_repo": by_repo,
        "mean_chars": round(sum(len(t) for _, t in chosen) / len(chosen), 1),
        "queries": len(held),
        "min_chars": MIN_CHARS,
        "max_chars": MAX_CHARS,
        "corpus_sha256": _sha256(corpus_path),
        "queries_sha256": _sha256(queries_path),
        "dimension": DIMENSION,
    }
    for c in commits:
        manifest["sources"][c.repo]["non_merge_commits"] += 1
    (cache / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    return manifest


def _choose(commits: list[Commit], size: int) -> list[tuple[Commit, str]]:
    """The first ``size`` commits whose clipped subject is long enough and not seen before,
    each with that subject."""
    chosen: list[tuple[Commit, str]] = []
    seen: set[str] = set()
    for c in commits:
        text = clip(c.subject, MAX_CHARS)
        norm = _norm(text)
        if len(text) < MIN_CHARS or norm in seen:
            continue
        seen.add(norm)
        chosen.append((c, text))
        if len(chosen) == size:
            return chosen
    raise SystemExit(f"only {len(chosen)} texts in the sources, {size} asked")


def _write_rows(path: Path, rows: Iterator[dict[str, Any]]) -> None:
    with path.open("w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def load_texts(path: Path, field: str) -> list[str]:
    with path.open(encoding="utf-8") as f:
        return [json.loads(line)[field] for line in f]


def _read_done(marker: Path) -> int:
    try:
        return int(marker.read_text().strip() or 0)
    except FileNotFoundError:
        return 0


def _write_done(marker: Path, count: int) -> None:
    tmp = marker.with_suffix(".tmp")
    tmp.write_text(f"{count}\n")
    os.replace(tmp, marker)


def embed_file(texts: list[str], out: Path, *, query: bool, threads: int, log: Any) -> int:
    """Append the vectors of texts[done:] to ``out``; resumable through ``out``.done.

    The marker is written after each block is flushed to disk, and on start the file is cut
    back to the marker, so a kill at any point loses at most one block and never misaligns.
    """
    from agent_memory.embedders.local import LocalModel

    marker = out.with_suffix(out.suffix + ".done")
    # One writer per file: a second job (say one left running after its files were deleted)
    # would move the marker under the first one's feet.
    lock = open(out.with_suffix(out.suffix + ".lock"), "w")  # noqa: SIM115 (held to the end)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise SystemExit(f"another job is embedding into {out}") from None
    done = _read_done(marker)
    row_bytes = DIMENSION * 4
    with out.open("ab") as f:
        f.truncate(done * row_bytes)
    if done >= len(texts):
        return done
    model = LocalModel(num_threads=threads, batch_size=64)
    reason = model.unavailable_reason()
    if reason:
        raise SystemExit(reason)
    start, t0 = done, time.monotonic()
    with out.open("ab") as f:
        while done < len(texts):
            block = texts[done : done + EMBED_CHUNK]
            vectors = model.encode_array(block, query=query)
            f.write(vectors.astype("<f4", copy=False).tobytes())
            f.flush()
            os.fsync(f.fileno())
            done += len(block)
            _write_done(marker, done)
            rate = (done - start) / max(time.monotonic() - t0, 1e-9)
            eta = (len(texts) - done) / rate if rate else 0
            print(
                f"{out.name}: {done}/{len(texts)} {rate:.1f} texts/s, eta {eta / 60:.1f} min",
                file=log,
                flush=True,
            )
    return done


def verify(texts: list[str], out: Path, *, query: bool, sample: int, repair: bool) -> dict:
    """Check the rows the marker vouches for: every row unit length, and a seeded sample of
    rows equal to a fresh embedding of its text. ``repair`` re-embeds the rows that fail, in
    place (rows below the marker are never written by ``embed``, so this is safe beside it).
    """
    import numpy as np

    from agent_memory.embedders.local import LocalModel

    vectors = load_vectors(out)
    norms = np.linalg.norm(np.asarray(vectors), axis=1)
    bad = [int(i) for i in np.flatnonzero(np.abs(norms - 1.0) > 1e-3)]
    model = LocalModel(num_threads=1)
    rng = np.random.default_rng(11)
    picked = sorted(rng.choice(len(vectors), size=min(sample, len(vectors)), replace=False))
    fresh = model.encode_array([texts[i] for i in picked], query=query)
    diff = np.abs(fresh - np.asarray(vectors[picked])).max(axis=1)
    bad = sorted(set(bad) | {int(i) for i, d in zip(picked, diff, strict=True) if d > 1e-5})
    report = {
        "rows": len(vectors),
        "not_unit": int((np.abs(norms - 1.0) > 1e-3).sum()),
        "sampled": len(picked),
        "sample_max_abs_diff": float(diff.max(initial=0.0)),
        "bad": len(bad),
    }
    if repair and bad:
        with out.open("r+b") as f:
            for start in range(0, len(bad), 256):
                rows = bad[start : start + 256]
                for i, vec in zip(
                    rows, model.encode_array([texts[i] for i in rows], query=query), strict=True
                ):
                    f.seek(i * DIMENSION * 4)
                    f.write(vec.astype("<f4").tobytes())
            f.flush()
            os.fsync(f.fileno())
        report["repaired"] = len(bad)
    return report


def load_vectors(path: Path, rows: int | None = None) -> Any:
    """The float32 rows that the progress marker vouches for (memory-mapped)."""
    import numpy as np

    marker = path.with_suffix(path.suffix + ".done")
    done = _read_done(marker)
    if rows is not None:
        done = min(done, rows)
    return np.memmap(path, dtype="<f4", mode="r", shape=(done, DIMENSION))


def neighbour_cosines(
    base: Any, queries: Any, ranks: tuple[int, ...] = (1, 10, 11), *, skip_self: bool = False
) -> dict:
    """Mean cosine of the k-th nearest neighbour of each query, exact (vectors normalised).

    ``skip_self``: the queries are rows of ``base``; their own row (cosine 1) is not counted.
    """
    import numpy as np

    k = max(ranks) + int(skip_self)
    best = np.full((len(queries), k), -np.inf, dtype=np.float32)
    step = 100_000
    for s in range(0, len(base), step):
        sims = np.asarray(base[s : s + step], dtype=np.float32) @ queries.T  # (step, q)
        top = -np.partition(-sims, k - 1, axis=0)[:k].T if len(sims) > k else sims.T
        best = -np.sort(-np.concatenate([best, top], axis=1), axis=1)[:, :k]
    return {f"nn{r}": round(float(best[:, r - 1 + int(skip_self)].mean()), 4) for r in ranks}


def corpus_sample(real: Any, count: int = 1000, seed: int = 7) -> Any:
    """Rows of the real set used as queries: how close a memory's nearest memories are."""
    import numpy as np

    rows = np.random.default_rng(seed).choice(len(real), size=min(count, len(real)), replace=False)
    return np.asarray(real[np.sort(rows)], dtype=np.float32)


def retrieval(base: Any, queries: Any, targets: list[int]) -> dict:
    """Where each held-out query's own target ranks among all texts (exact cosine)."""
    import numpy as np

    sims = queries @ np.asarray(base, dtype=np.float32).T
    own = sims[np.arange(len(targets)), targets]
    ranks = (sims > own[:, None]).sum(axis=1) + 1
    return {
        "queries": len(targets),
        "recall@1": float((ranks <= 1).mean()),
        "recall@10": float((ranks <= 10).mean()),
        "recall@100": float((ranks <= 100).mean()),
        "mrr@10": float(np.where(ranks <= 10, 1.0 / ranks, 0.0).mean()),
        "median_rank": float(np.median(ranks)),
    }


def exact_topk(base: Any, queries: Any, k: int = 10) -> Any:
    """Row numbers of each query's k nearest rows by cosine, best first (the reference)."""
    import numpy as np

    sims = queries @ np.asarray(base, dtype=np.float32).T
    top = np.argpartition(-sims, k - 1, axis=1)[:, :k]
    order = np.argsort(-np.take_along_axis(sims, top, axis=1), axis=1)
    return np.take_along_axis(top, order, axis=1)


def binary_rerank_recall(
    base: Any, queries: Any, candidates: tuple[int, ...] = (100, 500, 1000), k: int = 10
) -> dict:
    """recall@k against exact of: sign bits + Hamming distance for candidates, then exact
    float32 re-rank; raw, and after subtracting the mean vector (the notes' remedy for
    anisotropic models). A preview for the vector-search issue, on real vectors."""
    import numpy as np

    base = np.asarray(base, dtype=np.float32)
    truth = exact_topk(base, queries, k)
    report: dict[str, Any] = {}
    for name, shift in (("raw", 0.0), ("centered", base.mean(axis=0))):
        codes = np.packbits(base - shift > 0, axis=1)
        qcodes = np.packbits(queries - shift > 0, axis=1)
        hits = dict.fromkeys(candidates, 0)
        for q in range(len(queries)):
            dist = np.bitwise_count(codes ^ qcodes[q]).sum(axis=1, dtype=np.int32)
            for c in candidates:
                cand = np.argpartition(dist, c - 1)[:c]
                sims = base[cand] @ queries[q]
                found = cand[np.argpartition(-sims, k - 1)[:k]]
                hits[c] += len(set(found.tolist()) & set(truth[q].tolist()))
        for c in candidates:
            report[f"{name}_c{c}"] = round(hits[c] / (k * len(queries)), 4)
    return report


def draw(real: Any, count: int, sigma: float, seed: int, out: Path | None = None) -> Any:
    """``count`` unit vectors, each a real row (round robin over a seeded permutation) plus
    N(0, sigma^2) per component, renormalised. Written to ``out`` when given."""
    import numpy as np

    rng = np.random.default_rng(seed)
    order = rng.permutation(len(real))
    result = (
        np.lib.format.open_memmap(out, mode="w+", dtype=np.float32, shape=(count, DIMENSION))
        if out is not None
        else np.empty((count, DIMENSION), dtype=np.float32)
    )
    step = 50_000
    for s in range(0, count, step):
        n = min(step, count - s)
        rows = np.asarray(real[order[np.arange(s, s + n) % len(real)]], dtype=np.float32)
        rows += rng.standard_normal(rows.shape, dtype=np.float32) * np.float32(sigma)
        rows /= np.linalg.norm(rows, axis=1, keepdims=True)
        result[s : s + n] = rows
    if out is not None:
        result.flush()
    return result


def calibrate(real: Any, queries: Any, count: int, seed: int, target: dict, log: Any) -> float:
    """Bisect sigma until the drawn set's mean 10th-neighbour cosine meets the real set's.

    More noise lowers every neighbour cosine; sigma = 0 would give ten exact copies of each
    real vector, so the 1st..10th neighbours would be one and the same text.
    """
    lo, hi = 0.0, 0.05
    for _ in range(10):
        mid = (lo + hi) / 2
        stats = neighbour_cosines(draw(real, count, mid, seed), queries)
        print(f"sigma {mid:.5f}: {stats}", file=log, flush=True)
        if stats["nn10"] > target["nn10"]:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    sub = parser.add_subparsers(dest="cmd", required=True)
    p_build = sub.add_parser("build", help="(re)build corpus.jsonl and queries.jsonl")
    p_build.add_argument(
        "--git", action="append", default=[], metavar="NAME=GIT_DIR", help="a source's git dir"
    )
    p_build.add_argument("--size", type=int, default=DEFAULT_SIZE)
    p_build.add_argument("--queries", type=int, default=QUERY_COUNT)
    p_embed = sub.add_parser("embed", help="embed queries then corpus (resumable)")
    p_embed.add_argument("--threads", type=int, default=1)
    p_verify = sub.add_parser("verify", help="check (and --repair) the embedded rows")
    p_verify.add_argument("--sample", type=int, default=50)
    p_verify.add_argument("--repair", action="store_true")
    sub.add_parser("stats", help="neighbour cosines and retrieval quality on real vectors")
    p_draw = sub.add_parser("draw", help="vectors around real ones, noise calibrated")
    p_draw.add_argument("--count", type=int, default=1_000_000)
    p_draw.add_argument("--sigma", type=float, default=None, help="skip calibration")
    p_draw.add_argument("--seed", type=int, default=20260)
    return parser


def embed_all(cache: Path, threads: int) -> None:
    """The queries, then the corpus (resumable)."""
    queries = load_texts(cache / "queries.jsonl", "query")
    embed_file(queries, cache / "queries.f32", query=True, threads=threads, log=sys.stdout)
    texts = load_texts(cache / "corpus.jsonl", "text")
    done = embed_file(texts, cache / "vectors.f32", query=False, threads=threads, log=sys.stdout)
    print(f"done: {done} vectors of {DIMENSION} in {cache / 'vectors.f32'}", flush=True)


def verify_all(cache: Path, sample: int, repair: bool) -> None:
    for name, field, is_query in (("queries", "query", True), ("corpus", "text", False)):
        texts = load_texts(cache / f"{name}.jsonl", field)
        out = cache / ("queries.f32" if is_query else "vectors.f32")
        found = verify(texts, out, query=is_query, sample=sample, repair=repair)
        print(name, json.dumps(found), flush=True)


def vector_report(args: argparse.Namespace) -> dict[str, Any]:
    """``stats``: neighbour cosines and retrieval quality of the real vectors; ``draw``: the
    same of vectors drawn around them (written beside the cache's files)."""
    import numpy as np

    cache: Path = args.cache
    real = np.asarray(load_vectors(cache / "vectors.f32"))
    queries = np.asarray(load_vectors(cache / "queries.f32"))
    targets = [json.loads(line)["target"] for line in (cache / "queries.jsonl").open()]
    usable = [q for q, t in enumerate(targets) if t < len(real)]
    real_stats = neighbour_cosines(real, queries)
    sample = corpus_sample(real)
    report: dict[str, Any] = {
        "real_vectors": len(real),
        "real": real_stats,
        "real_memory_to_memory": neighbour_cosines(real, sample, skip_self=True),
    }
    if args.cmd == "stats":
        report["retrieval"] = retrieval(real, queries[usable], [targets[q] for q in usable])
        report["binary_rerank_recall@10"] = binary_rerank_recall(real, queries)
        return report
    sigma = args.sigma
    if sigma is None:
        sigma = calibrate(real, queries, args.count, args.seed, real_stats, sys.stderr)
    out = cache / f"drawn-{args.count}.npy"
    drawn = draw(real, args.count, sigma, args.seed, out)
    report.update(
        sigma=sigma,
        drawn_vectors=args.count,
        drawn=neighbour_cosines(drawn, queries),
        # The drawn set holds noisy copies of these rows: their own copies come first.
        drawn_memory_to_memory=neighbour_cosines(drawn, sample),
        drawn_binary_rerank_recall_at_10=binary_rerank_recall(drawn, queries),
        drawn_path=str(out),
    )
    (cache / f"drawn-{args.count}.json").write_text(json.dumps(report, indent=2) + "\n")
    return report


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.cmd == "build":
        sources = dict(item.split("=", 1) for item in args.git)
        unknown = set(sources) - set(SOURCES)
        if unknown or not sources:
            parser().error(f"--git NAME=DIR with NAME in {sorted(SOURCES)}")
        print(json.dumps(build(sources, args.cache, args.size, args.queries), indent=2))
    elif args.cmd == "embed":
        embed_all(args.cache, args.threads)
    elif args.cmd == "verify":
        verify_all(args.cache, args.sample, args.repair)
    else:
        print(json.dumps(vector_report(args), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
