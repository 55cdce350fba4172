"""A replica of docdex's hybrid boost fusion (src/engine/search/hybrid.rs) over eval-dev, for
trying fusion ideas in seconds instead of rebuilding. Not part of docdex; see README.md.

It reads docdex's own BM25 file ranking (`docdex search --batch --json --limit 300`), the chunk
vectors docdex stored (`vectors.db`: chunks joined to the embedding cache) and query vectors
from an Ollama-API embedder, then fuses them as `hybrid.rs` does:
file score = bm25 / best × e^(strength × (closeness − lowest)), closeness = mean cosine of the
file's two nearest chunks among the 1,000 nearest (class priors applied to the cosines).
"""
import glob
import hashlib
import json
import math
import os
import re
import sqlite3
import urllib.request

import numpy as np

QUERIES = os.environ.get("EVAL_DEV_QUERIES", "/work/shared/eval-dev/queries")
SOURCES = os.environ.get("EVAL_DEV_SOURCES", "/work/devset")
EMBEDDER = os.environ.get("EMBEDDER", "http://127.0.0.1:11500")
CACHE = os.environ.get("EMBED_CACHE", os.path.expanduser("~/.cache/docdex-replica-embeddings.db"))
TUNE = ["pytest", "celery", "hyper", "eslint"]


def queries(name):
    return [json.loads(line) for line in open(f"{QUERIES}/{name}.jsonl")]


def score_one(ranked, gold):
    """R@1/5/10 and MRR@10 of one ranking of files, as eval-dev's score.py computes them."""
    gold = set(gold)
    out = {f"R@{k}": len(gold & set(ranked[:k])) / len(gold) for k in (1, 5, 10)}
    out["MRR@10"] = next((1.0 / (i + 1) for i, p in enumerate(ranked[:10]) if p in gold), 0.0)
    return out


def mean(rows):
    return {k: sum(r[k] for r in rows) / max(len(rows), 1) for k in ("R@1", "R@5", "R@10", "MRR@10")}


def load_batch(path, hits=None, cuts=None):
    """`docdex search --batch --json` output: per query, [(file, score)] best first, each file
    at its first hit; `hits` keeps only the first N hits (hybrid.rs fuses the first 200), and
    `cuts`, when given, gets each query's last kept hit's score (where the keyword list was cut)."""
    out = {}
    for line in open(path):
        d = json.loads(line)
        files, seen = [], set()
        for h in (d.get("response") or {}).get("results", [])[:hits]:
            if h["path"] not in seen:
                seen.add(h["path"])
                files.append((h["path"], h["score"]))
        out[d["index"]] = files
        if cuts is not None:
            kept = (d.get("response") or {}).get("results", [])[:hits]
            cuts[d["index"]] = kept[-1]["score"] if kept else 0.0
    return [out[i] for i in range(len(out))]


def embed(texts):
    """Normalized vectors from the embedder (`/api/embed`), cached on disk by text."""
    db = sqlite3.connect(CACHE)
    db.execute("CREATE TABLE IF NOT EXISTS c (h TEXT PRIMARY KEY, v BLOB)")
    keys = [hashlib.sha1(t.encode()).hexdigest() for t in texts]
    have = {h: np.frombuffer(v, dtype=np.float32) for h, v in db.execute("SELECT h, v FROM c")}
    todo = list({k: t for k, t in zip(keys, texts) if k not in have}.items())
    for i in range(0, len(todo), 32):
        part = todo[i:i + 32]
        body = json.dumps({"model": "all-minilm", "input": [t for _, t in part]}).encode()
        req = urllib.request.Request(EMBEDDER + "/api/embed", body, {"Content-Type": "application/json"})
        for (k, _), v in zip(part, json.loads(urllib.request.urlopen(req, timeout=600).read())["embeddings"]):
            have[k] = np.asarray(v, dtype=np.float32)
            db.execute("INSERT OR REPLACE INTO c VALUES (?, ?)", (k, have[k].tobytes()))
        db.commit()
    return np.stack([have[k] for k in keys])


TEST = re.compile(r"(^|/)(tests?|testing|spec|__tests__)/|(^|/)test_[^/]*$|_test\.\w+$|_spec\.\w+$"
                  r"|_tests\.\w+$|\.(test|spec)\.\w+$|(^|/)conftest\.py$")


def class_prior(path):
    """docdex's file-class priors by path rules only (docdex also reads content markers)."""
    low = path.lower()
    name = low.rsplit("/", 1)[-1]
    if name.startswith(("changelog", "history", "changes")):
        return 0.2
    if name.endswith(".lock") or name == "package-lock.json":
        return 0.1
    if TEST.search(low):
        return 0.3
    if re.search(r"(^|/)(fixtures?|testdata|test_data)/", low):
        return 0.2
    if re.search(r"(^|/)(examples?|demos?|benches|benchmarks?)/", low):
        return 0.4
    if name.endswith((".md", ".rst", ".txt", ".html", ".adoc")) or re.search(r"(^|/)docs?/", low):
        return 0.2
    if name.endswith((".toml", ".json", ".yaml", ".yml", ".cfg", ".ini")):
        return 0.5
    return 1.0


class Project:
    """One eval-dev project: its queries, docdex's BM25 ranking, its chunk vectors."""

    def __init__(self, home, name, batch_dir):
        self.name = name
        self.queries = queries(name)
        self.bm25 = load_batch(f"{batch_dir}/{name}.jsonl")
        cuts = {}
        self.keyword = load_batch(f"{batch_dir}/{name}.jsonl", 200, cuts)
        self.cuts = [cuts[i] for i in range(len(cuts))]
        db = next(d + "vectors.db" for d in glob.glob(f"{home}/state/repos/*/")
                  if f'{SOURCES}/{name}"' in open(d + "repo_meta.json").read())
        rows = sqlite3.connect(db).execute(
            "SELECT c.path, k.vector FROM chunks c JOIN cache k ON k.hash = c.hash").fetchall()
        self.paths = [r[0] for r in rows]
        m = np.stack([np.frombuffer(r[1], dtype=np.float32) for r in rows])
        self.vectors = m / np.linalg.norm(m, axis=1, keepdims=True)
        self.prior = np.array([class_prior(p) for p in self.paths], dtype=np.float32)
        self.query_vectors = embed([q["query"] for q in self.queries])


def closeness(p, qi, scan=1000, per_file=2):
    """Each file's closeness (mean of its nearest chunks' prior-weighted cosines) and the files
    of the 200 nearest chunks."""
    sims = (p.vectors @ p.query_vectors[qi]) * p.prior
    order = np.argsort(-sims)[:scan]
    total, count = {}, {}
    for i in order:
        f = p.paths[i]
        if count.get(f, 0) < per_file:
            total[f] = total.get(f, 0.0) + float(sims[i])
            count[f] = count.get(f, 0) + 1
    nearest = list(dict.fromkeys(p.paths[i] for i in order[:200]))
    return {f: total[f] / count[f] for f in total}, nearest


def boost(keyword, close, nearest, strength=3.0, cut=None):
    """hybrid.rs's boost fusion: the fused file ranking. A file only the vectors found enters at
    the keyword list's weakest file, or at `cut` (its last hit's score) when that is lower."""
    if not keyword:
        return nearest
    lowest = min(close.values())
    best, weakest, lexical = keyword[0][1], keyword[-1][1], dict(keyword)
    if cut is not None:
        weakest = min(weakest, cut)
    files = list(dict.fromkeys([f for f, _ in keyword] + nearest))
    score = {f: lexical.get(f, weakest) / best * math.exp(strength * max(close.get(f, lowest) - lowest, 0.0))
             for f in files}
    return sorted(files, key=lambda f: -score[f])


def main():
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--home", required=True, help="docdex home whose index holds the projects' vectors")
    ap.add_argument("--batch-dir", required=True, help="NAME.jsonl from docdex search --batch --json --limit 300")
    ap.add_argument("--projects", default=",".join(TUNE))
    ap.add_argument("--strength", type=float, default=3.0)
    ap.add_argument("--entry", choices=["weakest", "cut"], default="cut",
                    help="where a vector-only file enters: the weakest keyword file (before "
                         "2026-11-30) or the keyword list's cut (as landed)")
    a = ap.parse_args()
    for label, rank in [("BM25 only", lambda p, qi: [f for f, _ in p.bm25[qi]]),
                        (f"boost {a.strength}", lambda p, qi: boost(p.keyword[qi], *closeness(p, qi), a.strength,
                                                               p.cuts[qi] if a.entry == "cut" else None))]:
        rows = []
        for name in a.projects.split(","):
            p = Project(a.home, name, a.batch_dir)
            mine = [score_one(rank(p, qi), q["gold"]) for qi, q in enumerate(p.queries)]
            m = mean(mine)
            print(f"{label:12s} {name:8s} R@10 {m['R@10']:.3f} MRR@10 {m['MRR@10']:.3f}")
            rows += mine
        m = mean(rows)
        print(f"{label:12s} {'all':8s} R@10 {m['R@10']:.3f} MRR@10 {m['MRR@10']:.3f}")


if __name__ == "__main__":
    main()
