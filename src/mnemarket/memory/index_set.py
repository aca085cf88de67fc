"""The index set of one memory store: the dense vectors, the BM25 index (built on the first
lexical search), the HNSW index (built when the store is large enough, saved next to its
database) and the alias vectors, all kept in step with the record table's rows."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from mnemarket.memory.alias_index import AliasIndex
from mnemarket.memory.columns import grow
from mnemarket.memory.cues import has_time, speaker_of
from mnemarket.memory.dense import DenseMatrix
from mnemarket.memory.lexical import BM25Index
from mnemarket.memory.record_table import RecordTable
from mnemarket.memory.scoring import top_k
from mnemarket.memory.vector_index import AnnConfig, IndexMode, UsearchVectorIndex

DATE_FACET = "date"
"""The metadata key whose value (a date in words) BM25 indexes with a record's text."""


class IndexSet:
    """Indexes over ``table``'s rows.

    Args:
        neighbour_context: index each record's words with its previous neighbour's (see `index_lexical`).
        index_mode, ann_config, index_path: as `MemoryStore`'s ``index``, ``ann`` and ``index_path``.
    """

    def __init__(self, table: RecordTable, *, neighbour_context: bool, index_mode: IndexMode, ann_config: AnnConfig,
                 index_path: Path | None):
        self.table = table
        self.neighbour_context = neighbour_context
        self.index_mode: IndexMode = index_mode
        self.ann_config = ann_config
        self.index_path = index_path
        self.dense: DenseMatrix | None = None
        self.lexical: BM25Index | None = None
        self.lexical_context = np.zeros(16, dtype=np.int64)  # row whose text each row was indexed with (-1: none)
        self.lexical_date = np.zeros(16, dtype=np.int32)  # code of the date facet each row was indexed with (-1: none)
        self.timely = np.zeros(16, dtype=bool)  # whether a row's own text holds a time expression (cues.has_time)
        self.speakers = np.full(16, -1, dtype=np.int32)  # code in speaker_names of a row's speaker (cues.speaker_of)
        self.speaker_names: list[tuple[str, ...]] = []
        self._speaker_code: dict[tuple[str, ...], int] = {}
        self.ann: UsearchVectorIndex | None = None
        self.aliases = AliasIndex()

    # -- keeping in step with the table ---------------------------------------------------------------
    def append_vectors(self, vectors: np.ndarray) -> range:
        """The dense rows of records about to join the table (the same rows the table gives them)."""
        if self.dense is None:
            self.dense = DenseMatrix(vectors.shape[1])
        return self.dense.append(vectors)

    def appended(self, rows: range, seqs: list[int], vectors: np.ndarray) -> None:
        """Index rows the table has just appended (their vectors already in `dense`)."""
        if self.lexical is not None:
            self.index_lexical(self.lexical, np.arange(rows.start, rows.stop))
        if self.ann is not None:
            self.ann.add(np.asarray(seqs, dtype=np.int64), vectors)

    def removed(self, row: int) -> None:
        """Unindex a row the table has just tombstoned."""
        if self.lexical is not None:
            self.lexical.remove(row, self.lexical_text(row))
        if self.ann is not None:
            self.ann.remove(np.asarray([self.table.seqs[row]]))
        self.aliases.rows = None

    def compacted(self, keep: np.ndarray) -> None:
        """The table kept only rows ``keep``."""
        if self.dense is not None:
            self.dense = self.dense.take(keep)
        self.lexical = None  # rebuilt on the next lexical search
        self.aliases.rows = None

    def replace_dense(self, dense: DenseMatrix) -> None:
        """New vectors for every row (a re-embedded store): the HNSW index and its file are stale."""
        self.dense = dense
        self.ann = None
        if self.index_path is not None and self.index_path.exists():
            self.index_path.unlink()

    # -- BM25 ------------------------------------------------------------------------------------------
    def ensure_lexical(self) -> BM25Index:
        if self.lexical is None:
            index = BM25Index()
            self.index_lexical(index, self.table.live_rows())
            self.lexical = index
        return self.lexical

    def index_lexical(self, index: BM25Index, rows: np.ndarray) -> None:
        """Add ``rows`` (increasing) to the BM25 index as contextual records: each row's text is
        indexed together with the text of the live row just before it when both were created at
        the same time (one conversation or episode told as several memories). A question's words
        are often in the turn that asked for the answer rather than in the answer itself.
        Embeddings stay per record: the same context in the vector drowned MiniLM (both measured
        on the LoCoMo dev set: plans/retrieval-defaults.md, benchmarks/README.md).

        A record's ``metadata["date"]`` (a calendar date as words) is indexed with it too: questions
        name the day a thing was said ("on 7 July, 2023"), the turns saying it do not."""
        if rows.size == 0:
            return
        cols, values = self.table.cols, self.table.values
        created = cols.numbers["created"]
        alive = cols.alive
        rows_list = rows.tolist()
        if not self.neighbour_context:
            context = [-1] * len(rows_list)
        elif len(rows_list) <= 32:  # one add at a time: numpy's per-call cost would dominate
            context = [r - 1 if r > 0 and alive[r - 1] and created[r - 1] == created[r] else -1 for r in rows_list]
        else:
            before = rows - 1
            has = before >= 0
            has[has] = alive[before[has]] & (created[before[has]] == created[rows[has]])
            context = np.where(has, before, -1).tolist()
        self.lexical_context = grow(self.lexical_context, rows_list[-1] + 1)
        self.lexical_context[rows] = context
        if len(rows_list) <= 32:
            wanted = sorted(set(rows_list).union(c for c in context if c >= 0))
        else:
            wanted = np.union1d(rows, np.asarray(context)[np.asarray(context) >= 0]).tolist()
        texts = dict(zip(wanted, values.take_values("text", wanted)))
        self.timely = grow(self.timely, rows_list[-1] + 1, False)
        self.timely[rows] = [has_time(texts[r]) for r in rows_list]
        self.speakers = grow(self.speakers, rows_list[-1] + 1, -1)
        self.speakers[rows] = [self._speaker(texts[r]) for r in rows_list]
        self.lexical_date = grow(self.lexical_date, rows_list[-1] + 1, -1)
        dates = self.table.cols.metadata.get(DATE_FACET)
        self.lexical_date[rows] = -1 if dates is None else dates.codes[rows]
        index.add(rows_list, [self._with_date(f"{texts[c]} {texts[r]}" if c >= 0 else texts[r], r)
                              for r, c in zip(rows_list, context)])

    def _speaker(self, text: str) -> int:
        name = speaker_of(text)
        if not name:
            return -1
        code = self._speaker_code.get(name)
        if code is None:
            code = self._speaker_code[name] = len(self.speaker_names)
            self.speaker_names.append(name)
        return code

    def _with_date(self, text: str, row: int) -> str:
        """``text`` and the date facet ``row`` was indexed with, if it had a date in words."""
        code = int(self.lexical_date[row])
        dates = self.table.cols.metadata.get(DATE_FACET)
        if code < 0 or dates is None or not isinstance(dates.keys[code], str):
            return text
        return f"{text} {dates.keys[code]}"

    def lexical_text(self, row: int) -> str:
        """The text ``row`` was indexed under (see `index_lexical`)."""
        context = int(self.lexical_context[row])
        values = self.table.values
        text = values.get("text", row)
        return self._with_date(f"{values.get('text', context)} {text}" if context >= 0 else text, row)

    # -- HNSW ------------------------------------------------------------------------------------------
    def use_ann(self) -> bool:
        if self.index_mode == "exact":
            return False
        if self.index_mode == "approximate":
            return True
        return len(self.table) >= self.ann_config.threshold

    def ensure_ann(self, dim: int) -> UsearchVectorIndex:
        if self.ann is not None:
            return self.ann
        assert self.dense is not None
        live = self.table.live_rows()
        seqs = self.table.seqs[live]
        path = self.index_path
        index = None
        if path is not None and path.exists():
            try:
                index = UsearchVectorIndex(dim, self.ann_config, path=path)
            except Exception:  # a corrupt or foreign file: rebuild below  # noqa: BLE001
                index = None
        if index is not None:
            present = index.contains(seqs)
            index.add(seqs[~present], self.dense.matrix[live[~present]])
            if len(index) != seqs.size:  # keys of deleted records linger: drop them
                stale = np.setdiff1d(np.asarray(index._index.keys, dtype=np.int64), seqs)
                index.remove(stale)
        else:
            index = UsearchVectorIndex(dim, self.ann_config)
            index.add(seqs, self.dense.matrix[live])
        self.ann = index
        self.save_ann()
        return index

    def save_ann(self) -> None:
        """Write the approximate index next to the database (if there is one and a path)."""
        if self.ann is not None and self.index_path is not None:
            self.ann.save(self.index_path)

    # -- candidates of a search ------------------------------------------------------------------------
    def dense_candidates(self, q: np.ndarray, mask: np.ndarray, k: int, dim: int) -> tuple[np.ndarray, np.ndarray]:
        """Rows and cosines of the dense candidates: every masked row, or the ANN's neighbours."""
        assert self.dense is not None
        selected = int(np.count_nonzero(mask))
        if not self.use_ann() or selected <= self.ann_config.exact_below:
            return self.dense.cosine(q, mask)
        index = self.ensure_ann(dim)
        pool = max(k, self.ann_config.pool)
        # A filter keeping a fraction f of rows needs about pool / f neighbours to leave pool.
        wanted = int(math.ceil(pool * len(self.table) / selected))
        count = min(len(index), max(pool, min(wanted, self.ann_config.max_fetch)))
        keys, _ = index.search(q, count)
        rows = self.table.rows_of_seqs(keys)
        rows = rows[mask[rows]]
        if rows.size < min(k, selected):
            return self.dense.cosine(q, mask)  # the filter defeated the ANN: fall back to exact
        rows = np.unique(rows)
        return rows, self.dense.rows_cosine(q, rows)

    def with_aliases(self, q: np.ndarray, mask: np.ndarray, rows: np.ndarray,
                     sims: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Raise each candidate's cosine to its best alias's, adding alias-found rows the ANN missed."""
        return self.aliases.raise_cosines(q, mask, rows, sims, self.table.row_of, self.dense, self.table.n)

    def with_lexical(self, query: str, q: np.ndarray, mask: np.ndarray, k: int, rows: np.ndarray,
                     dense_sim: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """BM25 scores of the dense candidates; with the ANN index, the best BM25 matches join the
        candidates too (an embedding can rank an exact-term match too low for the ANN to return it)."""
        matched, bm25 = self.ensure_lexical().matches(query, self.table.n, mask)
        if self.use_ann() and matched.size:
            best = matched[top_k(bm25, max(k, self.ann_config.pool))]
            # best and rows are unique: a binary search into the sorted candidates is cheaper than
            # np.setdiff1d's two sorts at this size (plans/retrieval-defaults.md "Speed at 1M").
            known = np.sort(rows)
            position = np.minimum(np.searchsorted(known, best), max(known.size - 1, 0))
            extra = np.sort(best[known[position] != best]) if known.size else np.sort(best)
            if extra.size:
                assert self.dense is not None
                rows = np.concatenate([rows, extra])
                dense_sim = np.concatenate([dense_sim, self.dense.rows_cosine(q, extra)])
        lexical = np.zeros(rows.size, dtype=np.float64)
        if matched.size:  # matched is sorted: look the candidates up in it
            position = np.minimum(np.searchsorted(matched, rows), matched.size - 1)
            found = matched[position] == rows
            lexical[found] = bm25[position[found]]
        return rows, dense_sim, lexical
