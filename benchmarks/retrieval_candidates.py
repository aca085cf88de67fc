"""Retrieval candidates on the LoCoMo dev set, kept or not: the ablation behind the search defaults.

A numpy re-implementation of each candidate over cached MiniLM vectors (one embedding pass, then
seconds per row), so many ideas can be compared quickly; the winners were then built into
``MemoryStore``'s defaults and re-measured through the public API by memory_quality.py (the
figures of record). Turns are ``"<speaker>: <text>[ shares <caption>]"``; neighbours are
adjacent turns of the same session (what the store sees as the same ``created`` time).

    .venv/bin/python benchmarks/retrieval_candidates.py        # vectors cached in $TMPDIR
    .venv/bin/python benchmarks/retrieval_candidates.py --new  # only issue 37's cues, beside the default
    .venv/bin/python benchmarks/retrieval_candidates.py --split  # issue 37's candidates, tuned / held-out
"""

from __future__ import annotations

import hashlib
import os
import pickle
import re
import sys
import tempfile
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import locomo_dev  # noqa: E402

from mnemarket.memory.lexical import STOPWORDS, tokenize  # noqa: E402

_WORD = re.compile(r"\w+")
MORE_STOPWORDS = STOPWORDS | frozenset(
    "about after again all am any because before being both can could did doing down during each few here how "
    "just more most no nor not off once only other out over own same should some such through too under until up "
    "very would also got get really like yeah oh hey hi wow thanks thank im lol".split())
WH = re.compile(r"^\s*(what|when|where|who|whom|which|why|how|whose)\b(\s+(kind|sort|type)s?\s+of)?"
                r"(\s+(many|much|long|often|old))?(\s+(did|do|does|is|are|was|were|has|have|had|would|could|will|can))?\s*",
                re.I)


TIME_WORDS = re.compile(r"\b(yesterday|today|tonight|tomorrow|ago|last|next|recently|weekend|week|month|year|"
                        r"monday|tuesday|wednesday|thursday|friday|saturday|sunday|january|february|march|april|"
                        r"may|june|july|august|september|october|november|december|\d{4})\b", re.I)


def plural_fold(text: str) -> list[str]:
    """The tokenizer before this change: stopwords out and a light plural fold, no stemming."""
    out = []
    for token in _WORD.findall(text.lower()):
        if token in STOPWORDS:
            continue
        if len(token) > 3 and token.endswith("s") and not token.endswith(("ss", "us", "is")):
            token = token[:-3] + "y" if token.endswith("ies") else token[:-1]
        out.append(token)
    return out


def stem_more_stopwords(text: str) -> list[str]:
    from mnemarket.memory.lexical import _STEMMER

    return _STEMMER.stemWords([t for t in _WORD.findall(text.lower()) if t not in MORE_STOPWORDS])


class BM25:
    """Okapi BM25 (Lucene IDF), as mnemarket.memory.lexical scores it, over a fixed corpus."""

    def __init__(self, docs: list[str], tok, k1: float = 1.2, b: float = 0.75):
        self.tok, self.k1, self.b, self.n = tok, k1, b, len(docs)
        self.post: dict[str, list[tuple[int, int]]] = defaultdict(list)
        self.dl = np.zeros(self.n)
        for i, doc in enumerate(docs):
            tokens = tok(doc)
            self.dl[i] = len(tokens)
            for term, count in Counter(tokens).items():
                self.post[term].append((i, count))
        self.avg = max(self.dl.mean(), 1e-9)

    def score(self, query: str) -> np.ndarray:
        out = np.zeros(self.n)
        for term in set(self.tok(query)):
            postings = self.post.get(term)
            if not postings:
                continue
            rows = np.array([r for r, _ in postings])
            tf = np.array([c for _, c in postings], dtype=float)
            idf = np.log1p((self.n - len(postings) + 0.5) / (len(postings) + 0.5))
            out[rows] += idf * tf * (self.k1 + 1) / (tf + self.k1 * (1 - self.b + self.b * self.dl[rows] / self.avg))
        return out


def minmax(x):
    span = x.max() - x.min()
    return np.full_like(x, 0.5) if span < 1e-12 else (x - x.min()) / span


def zs(x):
    return np.zeros_like(x) if x.std() < 1e-12 else (x - x.mean()) / x.std()


def rrf(*lists, k=60):
    out = 0.0
    for x in lists:
        rank = np.empty(len(x))
        rank[np.argsort(-x, kind="stable")] = np.arange(1, len(x) + 1)
        out = out + 1.0 / (k + rank)
    return out


class Conv:
    """One conversation's vectors, BM25 indexes and neighbour masks."""

    def __init__(self, conv: locomo_dev.Conversation, embed):
        texts = [t["text"] for t in conv.turns]
        created = np.array([t["created"] for t in conv.turns])
        n = len(texts)
        self.same_prev = np.concatenate([[False], created[1:] == created[:-1]])
        self.same_next = np.concatenate([self.same_prev[1:], [False]])
        with_prev = [(texts[i - 1] + " " if self.same_prev[i] else "") + texts[i] for i in range(n)]
        with_next = [texts[i] + (" " + texts[i + 1] if self.same_next[i] else "") for i in range(n)]
        with_both = [(texts[i - 1] + " " if self.same_prev[i] else "") + with_next[i] for i in range(n)]
        self.questions = [q["question"] for q in conv.questions]
        self.evidence = [q["evidence"] for q in conv.questions]
        self.category = [q["category"] for q in conv.questions]
        self.dia = [t["dia_id"] for t in conv.turns]
        self.texts = texts
        # cues of issue 37: who speaks, which session, whether a turn carries a time expression
        self.speaker = [t.split(":", 1)[0].strip().lower() for t in texts]
        self.session = created
        self.timely = np.array([bool(TIME_WORDS.search(t)) for t in texts], dtype=float)
        self.E, self.Q = embed(texts), embed(self.questions)
        self.E_prev = embed(with_prev)
        self.Q_stripped = embed([WH.sub("", q).rstrip("?").strip() or q for q in self.questions])
        self.bm = {
            "plural": BM25(texts, plural_fold), "stem": BM25(texts, tokenize),
            "stem+stop": BM25(texts, stem_more_stopwords), "prev": BM25(with_prev, tokenize),
            "next": BM25(with_next, tokenize), "both": BM25(with_both, tokenize),
            # what the store indexes since issue 37: the previous turn and the session's date
            "prev+date": BM25([f"{w} {t['date']}" for w, t in zip(with_prev, conv.turns)], tokenize),
        }
        self.with_prev = with_prev
        self.name = conv.name
        self._cache: dict = {}

    def bm25(self, key, qi, query=None):
        if query is not None:
            return self.bm[key].score(query)
        if (key, qi) not in self._cache:
            self._cache[key, qi] = self.bm[key].score(self.questions[qi])
        return self._cache[key, qi]

    def dense(self, qi):
        return self.E @ self.Q[qi]

    def neighbours(self, x, weight):
        prev = np.where(self.same_prev, np.concatenate([[-np.inf], x[:-1]]), -np.inf)
        nxt = np.where(self.same_next, np.concatenate([x[1:], [-np.inf]]), -np.inf)
        best = np.maximum(prev, nxt)
        return x + weight * np.where(np.isfinite(best), best, x.min())


def fused(c: Conv, qi, w=0.65):
    return w * zs(c.dense(qi)) + (1 - w) * zs(c.bm25("prev", qi))


def prf(c: Conv, qi, m=3, beta=0.3):
    """Dense pseudo-relevance feedback (Rocchio): the query plus the mean of the top m of the default."""
    top = np.argsort(-c.neighbours(fused(c, qi), 0.15))[:m]
    q = c.Q[qi] + beta * c.E[top].mean(0)
    return c.neighbours(0.65 * zs(c.E @ (q / np.linalg.norm(q))) + 0.35 * zs(c.bm25("prev", qi)), 0.15)


def rm3(c: Conv, qi, m=3, terms=5, beta=0.2):
    """BM25 query expansion with the commonest new terms of the top m of the default."""
    top = np.argsort(-c.neighbours(fused(c, qi), 0.15))[:m]
    asked = set(tokenize(c.questions[qi]))
    counts = Counter(t for i in top for t in tokenize(c.texts[i]) if t not in asked)
    extra = " ".join(t for t, _ in counts.most_common(terms))
    lexical = c.bm25("prev", qi) + (beta * c.bm25("prev", qi, extra) if extra else 0)
    return c.neighbours(0.65 * zs(c.dense(qi)) + 0.35 * zs(lexical), 0.15)


def default(c: Conv, qi):
    return c.neighbours(fused(c, qi), 0.15)


def speaker_cue(c: Conv, qi, weight=0.3):
    """Turns spoken by a person the question names get ``weight`` z-units (names only, no LLM)."""
    named = {w.lower() for w in _WORD.findall(c.questions[qi])}  # \w+ splits "Caroline's" already
    match = np.array([s in named for s in c.speaker], dtype=float)
    return zs(default(c, qi)) + weight * match


def session_pool(c: Conv, qi, weight=0.15):
    """Plus ``weight`` x the best z-score in the turn's session (a question about a session's topic)."""
    x = zs(default(c, qi))
    best = {s: x[c.session == s].max() for s in np.unique(c.session)}
    return x + weight * np.array([best[s] for s in c.session])


def temporal_cue(c: Conv, qi, weight=0.3):
    """For "when" questions, turns with a time expression get ``weight`` z-units."""
    x = zs(default(c, qi))
    return x + weight * c.timely if c.questions[qi].lower().startswith("when") else x


def all_cues(c: Conv, qi, speaker=0.4, session=0.25, time=0.6):
    """The three cues together, each added to the default's z-scores."""
    x = zs(default(c, qi))
    named = {w.lower() for w in _WORD.findall(c.questions[qi])}
    x = x + speaker * np.array([s in named for s in c.speaker], dtype=float)
    best = {s: x[c.session == s].max() for s in np.unique(c.session)}
    x = x + session * np.array([best[s] for s in c.session])
    return x + time * c.timely if c.questions[qi].lower().startswith("when") else x


def store_default(c: Conv, qi, key="prev+date", speaker=2.0, session=0.4, time=1.0, w=0.65):
    """The store's default since issue 37: BM25 with the previous turn and the session's date, the
    neighbour term, then the speaker, session and time cues (mnemarket.memory.cues)."""
    x = zs(c.neighbours(w * zs(c.dense(qi)) + (1 - w) * zs(c.bm25(key, qi)), 0.15))
    named = {word.lower() for word in _WORD.findall(c.questions[qi])}
    x = x + speaker * np.array([s in named for s in c.speaker], dtype=float)
    best = {s: x[c.session == s].max() for s in np.unique(c.session)}
    x = x + session * np.array([best[s] for s in c.session])
    return x + time * c.timely if c.questions[qi].lower().startswith("when") else x


def bm25_params(k1, b):
    """The issue 20 default with other BM25 constants (contextual records)."""
    def score(c: Conv, qi):
        key = f"prev k1={k1} b={b}"
        if key not in c.bm:
            c.bm[key] = BM25(c.with_prev, tokenize, k1=k1, b=b)
        return c.neighbours(0.65 * zs(c.dense(qi)) + 0.35 * zs(c.bm25(key, qi)), 0.15)
    return score


def session_pool_by(c: Conv, qi, agg, weight):
    """The default plus ``weight`` x ``agg`` of its z-scores over the turn's session."""
    x = zs(default(c, qi))
    pooled = {s: agg(np.sort(x[c.session == s])[::-1]) for s in np.unique(c.session)}
    return x + weight * np.array([pooled[s] for s in c.session])


SPLIT_CANDIDATES = [
    ("issue 20's default", "", default),
    ("BM25 k1 0.6 (b 0.75)", "no", bm25_params(0.6, 0.75)),
    ("  k1 0.9", "no", bm25_params(0.9, 0.75)),
    ("  k1 2.0", "no", bm25_params(2.0, 0.75)),
    ("BM25 b 0.3 (k1 1.2)", "no", bm25_params(1.2, 0.3)),
    ("  b 0.5", "no", bm25_params(1.2, 0.5)),
    ("  b 0.9", "no", bm25_params(1.2, 0.9)),
    ("dense weight 0.6", "no", lambda c, i: c.neighbours(fused(c, i, 0.6), 0.15)),
    ("dense weight 0.7", "no", lambda c, i: c.neighbours(fused(c, i, 0.7), 0.15)),
    ("neighbour term 0.3", "no", lambda c, i: c.neighbours(fused(c, i), 0.3)),
    ("+ 0.2 x z(cosine with the previous turn embedded in)", "no",
     lambda c, i: c.neighbours(fused(c, i) + 0.2 * zs(c.E_prev @ c.Q[i]), 0.15)),
    ("+ session pool, mean of its top 3, 0.25", "no", lambda c, i: session_pool_by(c, i, lambda v: v[:3].mean(), 0.25)),
    ("+ session pool, log-sum-exp, 0.25", "no",
     lambda c, i: session_pool_by(c, i, lambda v: np.log(np.exp(v).sum()), 0.25)),
    ("BM25 reads the session's date", "yes", lambda c, i: c.neighbours(fused_key(c, i, "prev+date"), 0.15)),
    ("date + speaker 2.0 + session 0.4 + time 1.0 (the new default)", "yes", store_default),
    ("  without the date", "", lambda c, i: store_default(c, i, key="prev")),
    ("  without the speaker", "", lambda c, i: store_default(c, i, speaker=0)),
    ("  without the session", "", lambda c, i: store_default(c, i, session=0)),
    ("  without the time", "", lambda c, i: store_default(c, i, time=0)),
]
"""Issue 37's candidates, scored on the conversations the weights were tuned on and the held-out
ones (``--split``)."""
TUNED_ON = ("26", "30", "41")


def fused_key(c: Conv, qi, key, w=0.65):
    return w * zs(c.dense(qi)) + (1 - w) * zs(c.bm25(key, qi))


NEW_CANDIDATES = [
    ("default (z-score 0.65 + neighbour 0.15)", "yes", default),
    ("  + speaker named in the question, 0.2", "", lambda c, i: speaker_cue(c, i, 0.2)),
    ("  + speaker named in the question, 0.4", "", lambda c, i: speaker_cue(c, i, 0.4)),
    ("  + best score of the same session, 0.1", "", lambda c, i: session_pool(c, i, 0.1)),
    ("  + best score of the same session, 0.25", "", lambda c, i: session_pool(c, i, 0.25)),
    ("  + time expression for 'when' questions, 0.3", "", lambda c, i: temporal_cue(c, i, 0.3)),
    ("  + time expression for 'when' questions, 0.6", "", lambda c, i: temporal_cue(c, i, 0.6)),
    ("  + all three (speaker 0.4, session 0.25, time 0.6)", "", all_cues),
    ("  + all three (speaker 0.6, session 0.4, time 1.0)", "", lambda c, i: all_cues(c, i, 0.6, 0.4, 1.0)),
]
"""Issue 37's cues (speaker, session, time), scored beside the default; ``--new`` runs only these."""

CANDIDATES = [
    ("dense (the old default)", "", lambda c, i: c.dense(i)),
    ("dense, previous turn in the embedded text", "no", lambda c, i: c.E_prev @ c.Q[i]),
    ("dense, wh-word stripped query", "no", lambda c, i: c.E @ c.Q_stripped[i]),
    ("dense + 0.2 x best neighbour's cosine", "no", lambda c, i: c.neighbours(c.dense(i), 0.2)),
    ("BM25, old tokenizer (plural fold)", "", lambda c, i: c.bm25("plural", i)),
    ("BM25, Snowball stems", "yes", lambda c, i: c.bm25("stem", i)),
    ("BM25, stems + 60 more stopwords", "no", lambda c, i: c.bm25("stem+stop", i)),
    ("BM25 stems, previous turn in the record", "yes", lambda c, i: c.bm25("prev", i)),
    ("BM25 stems, next turn in the record", "no", lambda c, i: c.bm25("next", i)),
    ("BM25 stems, both neighbours in the record", "no", lambda c, i: c.bm25("both", i)),
    ("hybrid convex (min-max) 0.5, old BM25", "", lambda c, i: 0.5 * minmax(c.dense(i)) + 0.5 * minmax(c.bm25("plural", i))),
    ("hybrid convex (min-max) 0.5, contextual BM25", "no",
     lambda c, i: 0.5 * minmax(c.dense(i)) + 0.5 * minmax(c.bm25("prev", i))),
    ("hybrid RRF k=60, contextual BM25", "no", lambda c, i: rrf(c.dense(i), c.bm25("prev", i))),
    ("hybrid RRF k=10, contextual BM25", "no", lambda c, i: rrf(c.dense(i), c.bm25("prev", i), k=10)),
    ("hybrid z-score 0.65, log(1 + BM25)", "no", lambda c, i: 0.65 * zs(c.dense(i)) + 0.35 * zs(np.log1p(c.bm25("prev", i)))),
    ("hybrid z-score 0.6, contextual BM25", "", lambda c, i: fused(c, i, 0.6)),
    ("hybrid z-score 0.65, contextual BM25", "yes", lambda c, i: fused(c, i)),
    ("  + 0.15 x best same-session neighbour's fused score (the default)", "yes", lambda c, i: c.neighbours(fused(c, i), 0.15)),
    ("  + dense pseudo-relevance feedback (top 3, 0.3)", "no", prf),
    ("  + BM25 RM3 expansion (top 3, 5 terms, 0.2)", "no", rm3),
]


def main() -> None:
    conversations = locomo_dev.load()
    if conversations is None:
        print(locomo_dev.missing_message(locomo_dev.locomo_dir()))
        return
    from mnemarket.providers import default_embedder

    embedder = default_embedder()
    cache_file = Path(os.environ.get("TMPDIR", tempfile.gettempdir())) / f"locomo_{embedder.model_id}.pkl"
    cache = pickle.loads(cache_file.read_bytes()) if cache_file.exists() else {}

    def embed(texts):
        missing = [t for t in dict.fromkeys(texts) if hashlib.sha1(t.encode()).hexdigest() not in cache]
        if missing:
            for text, vector in zip(missing, embedder.vectors(missing)):
                cache[hashlib.sha1(text.encode()).hexdigest()] = np.asarray(vector, dtype=np.float32)
            cache_file.write_bytes(pickle.dumps(cache))
        return np.stack([cache[hashlib.sha1(t.encode()).hexdigest()] for t in texts])

    convs = [Conv(c, embed) for c in conversations]
    if "--split" in sys.argv:
        print_split(convs)
        return
    names = [locomo_dev.CATEGORIES[k] for k in sorted(locomo_dev.CATEGORIES)]
    print("| candidate | kept | recall@5 | recall@10 | hit@10 | " + " | ".join(f"r@10 {n}" for n in names) + " |")
    print("|---|---|---|---|---|" + "---|" * len(names))
    for name, kept, score in NEW_CANDIDATES if "--new" in sys.argv else CANDIDATES:
        rec = defaultdict(list)
        for c in convs:
            for qi in range(len(c.questions)):
                got = [c.dia[j] for j in np.argsort(-score(c, qi), kind="stable")[:10]]
                ev = c.evidence[qi]
                for k in (5, 10):
                    rec[k].append(len(ev & set(got[:k])) / len(ev))
                rec["hit"].append(float(bool(ev & set(got))))
                rec[c.category[qi]].append(len(ev & set(got)) / len(ev))
        per = " | ".join(f"{np.mean(rec[k]):.3f}" for k in sorted(locomo_dev.CATEGORIES))
        print(f"| {name} | {kept} | {np.mean(rec[5]):.3f} | {np.mean(rec[10]):.3f} | {np.mean(rec['hit']):.3f} | {per} |",
              flush=True)


def print_split(convs: list[Conv]) -> None:
    """recall@10 of `SPLIT_CANDIDATES` on the tuning conversations, the held-out ones and all."""
    print(f"| candidate | kept | tuned on ({', '.join(TUNED_ON)}) | held out | dev set | recall@5 |\n|---|---|---|---|---|---|")
    for name, kept, score in SPLIT_CANDIDATES:
        rec = defaultdict(list)
        for c in convs:
            for qi in range(len(c.questions)):
                got = [c.dia[j] for j in np.argsort(-score(c, qi), kind="stable")[:10]]
                r = len(c.evidence[qi] & set(got)) / len(c.evidence[qi])
                rec["tuned" if c.name in TUNED_ON else "held"].append(r)
                rec["all"].append(r)
                rec[5].append(len(c.evidence[qi] & set(got[:5])) / len(c.evidence[qi]))
        print(f"| {name} | {kept} | {np.mean(rec['tuned']):.3f} | {np.mean(rec['held']):.3f} | {np.mean(rec['all']):.3f} "
              f"| {np.mean(rec[5]):.3f} |", flush=True)


if __name__ == "__main__":
    main()
