"""mnemarket.providers: embedders and LLMs behind small contracts, offline by default.

Heavy SDKs (onnxruntime, llama_cpp, google.genai) load only when a provider that needs them is built.
The package exports what the layers above use: the contracts (`LLM`, `Embedder`), the factories,
model profiles, the test doubles, the accounting and the schema helpers replies are decoded with;
each backend's other helpers are internals of their modules.
"""

from typing import TYPE_CHECKING

from mnemarket.lazy_front import lazy_exports
from mnemarket.providers.accounting import AccountedEmbedder, AccountedLLM, Budget, CallLog, CallRecord, Totals
from mnemarket.providers.applied import models_record
from mnemarket.providers.call_context import CALL_LABEL, labelled
from mnemarket.providers.embedding import Embedder, EmbeddingFailed, EmbedResult, l2_normalise
from mnemarket.providers.embedding_cache import CachedEmbedder, MemoEmbedder
from mnemarket.providers.hashing_embedder import HashingEmbedder
from mnemarket.providers.llm import (
    DEFAULT_MAX_TOKENS,
    LLM,
    MAX_PROVIDER_FAILURES,
    CompletionLLM,
    CompletionRequest,
    LLMResult,
    Message,
    MessagesLike,
    ModelCallFailed,
    ReplyFailed,
    Usage,
    as_messages,
)
from mnemarket.providers.minilm_embedder import MINILM_DIM, MINILM_MODEL_ID, MiniLMEmbedder, default_embedder
from mnemarket.providers.pricing import DEFAULT_PRICE_TABLE, ModelPrice, PriceTable
from mnemarket.providers.profiles import (
    ModelProfile,
    billed_price,
    embedder_profile,
    embedder_profile_options,
    parse_profiles,
)
from mnemarket.providers.record_replay import (
    Recording,
    RecordingEmbedder,
    RecordingLLM,
    ReplayDivergence,
    ReplayEmbedder,
    ReplayLLM,
    llm_prompt_hash,
)
from mnemarket.providers.registry import (
    EMBEDDER_FORMS,
    LLM_FORMS,
    check_embedder_profiles,
    check_llm_spec,
    check_profiles,
    credentials_problem,
    make_embedder,
    make_llm,
)
from mnemarket.providers.scripted import ScriptedLLM
from mnemarket.providers.spent import Spent, read_spent
from mnemarket.providers.structured import flat_json_schema, map_schema
from mnemarket.providers.teacher_forced import TeacherForcedLLM

# The Gemini client (google-genai) and the local model loader load when one of their names is first used.
_LAZY = {"gemini_client": ["RETIRED_MODELS", "gemini_api_key"], "local_llm": ["GemmaLocalLLM", "load_count"]}
if not TYPE_CHECKING:  # mypy reads the imports below, so a name missing from them is an error
    __getattr__ = lazy_exports(__name__, _LAZY)

if TYPE_CHECKING:
    from mnemarket.providers.gemini_client import RETIRED_MODELS, gemini_api_key
    from mnemarket.providers.local_llm import GemmaLocalLLM, load_count

__all__ = [
    "CALL_LABEL", "DEFAULT_PRICE_TABLE", "EMBEDDER_FORMS", "LLM", "LLM_FORMS", "MINILM_DIM", "MINILM_MODEL_ID",
    "MAX_PROVIDER_FAILURES",
    "AccountedEmbedder", "AccountedLLM", "Budget", "CachedEmbedder", "MemoEmbedder", "CallLog", "CallRecord",
    "CompletionLLM", "Embedder", "EmbeddingFailed", "EmbedResult", "HashingEmbedder", "LLMResult", "Message",
    "MiniLMEmbedder", "ModelCallFailed", "ReplyFailed", "ModelPrice", "PriceTable", "Recording",
    "RecordingEmbedder", "RecordingLLM", "ReplayDivergence", "ReplayEmbedder", "ReplayLLM", "ScriptedLLM", "llm_prompt_hash",
    "TeacherForcedLLM",
    "Totals", "Usage", "default_embedder", "l2_normalise", "labelled", "make_embedder", "check_llm_spec",
    "make_llm", "models_record", "CompletionRequest", "DEFAULT_MAX_TOKENS", "MessagesLike", "as_messages",
    "ModelProfile", "billed_price", "parse_profiles", "check_profiles", "credentials_problem", "embedder_profile_options",
    "embedder_profile", "check_embedder_profiles",
    "flat_json_schema", "map_schema", "RETIRED_MODELS",
    "gemini_api_key", "GemmaLocalLLM", "load_count", "Spent", "read_spent",
]
