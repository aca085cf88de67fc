"""BM25 over memory texts: an in-memory inverted index with vectorised scoring.

Postings live in a sorted main segment (CSR: term -> rows, term frequencies) plus an append-only
delta segment for recent additions; the delta is merged into the main segment once it grows past a
fraction of it, so additions are amortised O(1) and a query costs one numpy slice per query term.
Removed rows keep their postings until the next rebuild but leave the document statistics (N,
document frequency, average length) and are masked out of every result, so scores always equal
those of an index built fresh from the live texts.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

import numpy as np
import Stemmer

from mnemarket.memory.columns import grow

_TOKEN = re.compile(r"\w+", re.UNICODE)

STOPWORDS: frozenset[str] = frozenset(
    "a an and are as at be been but by did do does for from had has have he her his i if in into is it "
    "its me my of on or our she so than that the their them then there these they this to was we were "
    "what when where which who whom why will with you your".split()
)
"""Very common English words left out of the index (they carry almost no BM25 weight)."""


_STEMMER = Stemmer.Stemmer("english", 2_000)
# Snowball (Porter 2) English stems: "painted", "painting" and "paints" all match "paint" (their
# gain on the LoCoMo dev set: plans/retrieval-defaults.md). Its
# cache of stems is 2,000 words, not 10,000: a long run's numbers and ids fill it with one-off
# tokens (~150 bytes each), and the words worth caching are far fewer.


def tokenize(text: str) -> list[str]:
    """Lower-cased word tokens minus stopwords, Snowball-stemmed (``markets`` -> ``market``)."""
    return _STEMMER.stemWords([t for t in _TOKEN.findall(text.lower()) if t not in STOPWORDS])


class BM25Index:
    """Okapi BM25 (Lucene's non-negative IDF) over rows ``0..n``.

    Args:
        k1: term-frequency saturation.
        b: length normalisation.
    """

    def __init__(self, k1: float = 1.2, b: float = 0.75):
        self.k1 = k1
        self.b = b
        self.vocab: dict[str, int] = {}
        self.df = np.zeros(16, dtype=np.int64)
        self.doc_len = np.zeros(16, dtype=np.float64)
        self.n_rows = 0
        self.n_docs = 0
        self.total_len = 0.0
        # main segment, CSR by term id
        self._ptr = np.zeros(1, dtype=np.int64)
        self._rows = np.empty(0, dtype=np.int64)
        self._tf = np.empty(0, dtype=np.float32)
        # delta segment: growable arrays, the first `_d_n` entries used (as lists, a posting cost
        # ~24 bytes more, and every search after an add copied them into arrays again)
        self._d_term = np.empty(0, dtype=np.int64)
        self._d_row = np.empty(0, dtype=np.int64)
        self._d_tf = np.empty(0, dtype=np.float32)
        self._d_n = 0

    def __len__(self) -> int:
        return self.n_docs

    def _term_ids(self, tokens: list[str]) -> Counter[int]:
        vocab = self.vocab
        ids = []
        for token in tokens:
            tid = vocab.get(token)
            if tid is None:
                tid = vocab[token] = len(vocab)
            ids.append(tid)
        return Counter(ids)

    def add(self, rows: Sequence[int], texts: Sequence[str]) -> None:
        """Index ``texts`` at ``rows`` (new rows, in increasing order)."""
        if not rows:
            return
        self.doc_len = grow(self.doc_len, rows[-1] + 1)
        self.n_rows = max(self.n_rows, rows[-1] + 1)
        batch_terms: list[int] = []
        batch_rows: list[int] = []
        batch_tf: list[int] = []
        for row, text in zip(rows, texts):
            tokens = tokenize(text)
            counts = self._term_ids(tokens)
            self.doc_len[row] = len(tokens)
            self.total_len += len(tokens)
            self.n_docs += 1
            batch_terms.extend(counts.keys())
            batch_rows.extend([row] * len(counts))
            batch_tf.extend(counts.values())
        self.df = grow(self.df, len(self.vocab))
        if batch_terms:
            self.df[: len(self.vocab)] += np.bincount(np.asarray(batch_terms, dtype=np.int64), minlength=len(self.vocab))
            start, self._d_n = self._d_n, self._d_n + len(batch_terms)
            self._d_term = grow(self._d_term, self._d_n)
            self._d_row = grow(self._d_row, self._d_n)
            self._d_tf = grow(self._d_tf, self._d_n)
            self._d_term[start : self._d_n] = batch_terms
            self._d_row[start : self._d_n] = batch_rows
            self._d_tf[start : self._d_n] = batch_tf
        if self._d_n > max(50_000, self._rows.size // 4):
            self._merge()

    def remove(self, row: int, text: str) -> None:
        """Take a row out of the statistics (its postings are masked from then on)."""
        tokens = tokenize(text)
        counts = Counter(self.vocab[t] for t in tokens if t in self.vocab)
        if counts:
            self.df[np.fromiter(counts.keys(), dtype=np.int64)] -= 1
        self.total_len -= len(tokens)
        self.n_docs -= 1

    def _merge(self) -> None:
        """Fold the delta segment into the main CSR segment."""
        terms_main = np.repeat(np.arange(self._ptr.size - 1, dtype=np.int64), np.diff(self._ptr))
        d_term, d_row, d_tf = self._delta()
        terms = np.concatenate([terms_main, d_term])
        rows = np.concatenate([self._rows, d_row])
        tf = np.concatenate([self._tf, d_tf])
        order = np.argsort(terms, kind="stable")
        terms, self._rows, self._tf = terms[order], rows[order], tf[order]
        counts = np.bincount(terms, minlength=len(self.vocab))
        self._ptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        self._d_term = np.empty(0, dtype=np.int64)
        self._d_row = np.empty(0, dtype=np.int64)
        self._d_tf = np.empty(0, dtype=np.float32)
        self._d_n = 0

    def _delta(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        n = self._d_n
        return self._d_term[:n], self._d_row[:n], self._d_tf[:n]

    def query_terms(self, query: str) -> np.ndarray:
        """Unique known term ids of a query."""
        ids = {self.vocab[t] for t in tokenize(query) if t in self.vocab}
        return np.fromiter(sorted(ids), dtype=np.int64, count=len(ids))

    def matches(self, query: str, n: int, live: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Rows ``< n`` that are ``live`` and share a term with ``query``, and their BM25 scores.

        Work is proportional to the query terms' postings, not to the store: a large store's
        search never allocates a score per row.

        Returns:
            ``(rows, scores)``, rows sorted and unique, scores > 0.
        """
        empty = (np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float64))
        terms = self.query_terms(query)
        if terms.size == 0 or self.n_docs == 0:
            return empty
        N = float(self.n_docs)
        df = self.df[terms].astype(np.float64)
        idf = np.log1p((N - df + 0.5) / (df + 0.5))
        avgdl = max(self.total_len / N, 1e-9)
        row_parts, tf_parts, idf_parts = [], [], []
        main_terms = self._ptr.size - 1
        for term, weight in zip(terms.tolist(), idf.tolist()):
            if term < main_terms:
                lo, hi = self._ptr[term], self._ptr[term + 1]
                if hi > lo:
                    row_parts.append(self._rows[lo:hi])
                    tf_parts.append(self._tf[lo:hi])
                    idf_parts.append(np.full(hi - lo, weight))
        if self._d_n:
            d_term, d_row, d_tf = self._delta()
            hit = np.isin(d_term, terms)
            if hit.any():
                row_parts.append(d_row[hit])
                tf_parts.append(d_tf[hit])
                idf_parts.append(idf[np.searchsorted(terms, d_term[hit])])
        if not row_parts:
            return empty
        rows = np.concatenate(row_parts)
        tf = np.concatenate(tf_parts).astype(np.float64)
        weights = np.concatenate(idf_parts)
        # Each term's postings are sorted by row, so a stable sort of their concatenation merges
        # sorted runs (faster than np.unique's inverse: plans/retrieval-defaults.md); rows then come in
        # increasing order for the gathers below and stay in term order within a row.
        order = np.argsort(rows, kind="stable")
        rows, tf, weights = rows[order], tf[order], weights[order]
        if rows[-1] >= n:
            cut = int(np.searchsorted(rows, n))
            rows, tf, weights = rows[:cut], tf[:cut], weights[:cut]
            if rows.size == 0:
                return empty
        norm = self.k1 * (1.0 - self.b + self.b * self.doc_len[rows] / avgdl)
        contrib = weights * tf * (self.k1 + 1.0) / (tf + norm)
        first = np.empty(rows.size, dtype=bool)
        first[0] = True
        np.not_equal(rows[1:], rows[:-1], out=first[1:])
        starts = np.flatnonzero(first)
        unique = rows[starts]
        scores = np.add.reduceat(contrib, starts) if starts.size < rows.size else contrib
        keep = live[unique]  # dead or filtered rows leave after the merge: one gather per row, in order
        return unique[keep], scores[keep]

    def scores(self, query: str, n: int, live: np.ndarray) -> np.ndarray:
        """BM25 of every row ``0..n`` for ``query`` (0 where no term matches or the row is dead).

        Args:
            query: the query text.
            n: number of rows to score.
            live: boolean mask of live rows, length ``n``.
        """
        out = np.zeros(n, dtype=np.float64)
        rows, scores = self.matches(query, n, live)
        out[rows] = scores
        return out
