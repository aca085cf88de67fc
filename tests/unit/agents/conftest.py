"""The scripted demo with the local model's token counts, run once for the prompt guards
(test_prompt_cache.py, test_prompt_room.py): its model calls and its decision turns."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def gemma_tokenizer():
    from mnemarket.providers.local_llm import GemmaTokenizer

    vocab = GemmaTokenizer()
    yield vocab
    vocab.close()


@pytest.fixture(scope="session")
def demo_probe(gemma_tokenizer, tmp_path_factory):
    from tests.unit.agents.prompt_cache_probe import demo_run

    return demo_run(tmp_path_factory.mktemp("demo_probe"), gemma_tokenizer)
