"""The hybrid search's cues (mnemarket.memory.cues): speaker, session and time, and the date
words BM25 reads from a record's metadata."""

from __future__ import annotations

import numpy as np
import pytest

from mnemarket.memory import MemoryStore, RetrievalWeights
from mnemarket.memory.cues import asks_when, has_time, named_codes, session_best, speaker_of, with_cues
from mnemarket.memory.lexical import tokenize

NO_CUES = RetrievalWeights(speaker_weight=0.0, session_weight=0.0, time_weight=0.0)


def test_a_transcript_line_names_its_speaker():
    assert speaker_of("Caroline: I went to the support group") == ("caroline",)
    assert speaker_of("  Mary Lou: hi") == ("mary", "lou")
    assert speaker_of("see http://example.org") == () and speaker_of("I said: yes") == ("i", "said")
    assert speaker_of("no colon here") == () and speaker_of("12: numbers") == ()


def test_a_speaker_is_named_when_every_word_of_the_name_is_in_the_query():
    names = [("ann",), ("bo",), ("mary", "lou")]
    assert named_codes(names, "What did ann paint?").tolist() == [0]
    assert named_codes(names, "Did Mary Lou and Bo meet?").tolist() == [1, 2]
    assert named_codes(names, "What did Mary paint?").size == 0  # half a name names no one
    assert named_codes(names, "Where is Annabel?").size == 0  # words, not substrings


def test_session_best_is_the_best_score_of_each_created_time():
    created = np.array([1.0, 2.0, 1.0, 3.0, 2.0])
    scores = np.array([0.5, -1.0, 2.0, 0.1, 0.3])
    assert session_best(created, scores).tolist() == [2.0, 0.3, 2.0, 0.1, 0.3]


def test_time_words_and_when_questions():
    assert asks_when("When did Ann adopt a dog?") and asks_when("  when was it")
    assert not asks_when("What happened when Ann left?") and not asks_when("Whenever")
    assert has_time("I went there yesterday") and has_time("back in 2019") and has_time("last Friday")
    assert not has_time("I like green tea")


def test_each_cue_moves_only_the_records_it_names():
    rows = np.arange(4)
    relevance = np.array([1.0, 0.0, 0.5, 0.2])
    created = np.array([1.0, 1.0, 2.0, 2.0])
    speakers, names = np.array([0, 1, 1, 0]), [("ann",), ("bo",)]
    timely = np.array([False, False, True, False])
    only = {"speaker": RetrievalWeights(speaker_weight=1.0, session_weight=0.0, time_weight=0.0),
            "session": RetrievalWeights(speaker_weight=0.0, session_weight=0.5, time_weight=0.0),
            "time": RetrievalWeights(speaker_weight=0.0, session_weight=0.0, time_weight=1.0)}
    z = (relevance - relevance.mean()) / relevance.std()

    def cued(weights: RetrievalWeights, query: str, sessions: bool = True) -> np.ndarray:
        return with_cues(rows, relevance, query, weights, created=created, speakers=speakers, names=names,
                         timely=timely, sessions=sessions)

    np.testing.assert_allclose(cued(only["speaker"], "What did Bo say?"), z + [0, 1, 1, 0])
    np.testing.assert_allclose(cued(only["speaker"], "What did Cy say?"), z)
    np.testing.assert_allclose(cued(only["session"], "anything"), z + 0.5 * np.array([z[0], z[0], z[2], z[2]]))
    np.testing.assert_allclose(cued(only["session"], "anything", sessions=False), z)  # neighbour_context=False
    np.testing.assert_allclose(cued(only["time"], "When did Bo go?"), z + timely)
    np.testing.assert_allclose(cued(only["time"], "Where did Bo go?"), z)
    assert cued(NO_CUES, "When did Bo go?") is relevance  # every cue off: relevance as fused


def test_the_store_ranks_the_named_speakers_turn_first(embedder):
    store = MemoryStore(embedder)
    bo = store.add("Bo: green tea, green tea, I love green tea", created=1.0)
    ann = store.add("Ann: tea in the evening", created=2.0)
    for i in range(6):
        store.add(f"Cy: the harbour had {i} boats", created=float(i + 3))
    query = "What green tea does Ann like?"
    assert store.search(query, k=1, touch=False, weights=NO_CUES)[0].id == bo  # the words favour Bo's line
    assert store.search(query, k=1, touch=False)[0].id == ann
    # naming both speakers boosts both: the ranking is the one without the cue
    both = [h.id for h in store.search("What green tea do Ann and Bo like?", k=2, touch=False)]
    plain = [h.id for h in store.search("What green tea do Ann and Bo like?", k=2, touch=False, weights=NO_CUES)]
    assert both == plain == [bo, ann]


def test_bm25_reads_the_date_of_a_record_and_forgets_it_as_indexed(embedder):
    store = MemoryStore(embedder)
    dated = store.add("Ann: we planted the garden", created=1.0, metadata={"date": "7 July, 2023"})
    store.add("Bo: it rained all day", created=2.0, metadata={"date": "9 August, 2023"})
    store.add("Cy: the fair opened in July", created=3.0)
    assert [h.id for h in store.search("7 July", mode="lexical", touch=False)][0] == dated
    assert {h.text for h in store.search("August", mode="lexical", touch=False)} == {"Bo: it rained all day"}
    index = store._ensure_lexical()
    juli = index.vocab[tokenize("July")[0]]
    assert index.df[juli] == 2
    # a metadata change does not re-index the text: deleting removes what was indexed
    store.update(dated, metadata={"date": "1 January, 2024"})
    store.delete(dated)
    assert index.df[juli] == 1 and index.n_docs == 2


@pytest.mark.parametrize("mode", ["dense", "lexical"])
def test_cues_are_hybrid_only(embedder, mode):
    store = MemoryStore(embedder)
    for i, speaker in enumerate(["Ann", "Bo"] * 4):
        store.add(f"{speaker}: note {i} about the green tea shop", created=float(i))
    cued = [h.id for h in store.search("When did Ann visit the tea shop?", mode=mode, touch=False)]
    plain = [h.id for h in store.search("When did Ann visit the tea shop?", mode=mode, touch=False, weights=NO_CUES)]
    assert cued == plain


def test_a_when_question_lifts_turns_with_a_time_word_of_their_own(embedder):
    store = MemoryStore(embedder)
    ids = [store.add(t, created=1.0) for t in ("Bo: how was the trip yesterday?", "Ann: we baked bread",
                                                 "Ann: we baked bread last Sunday", "Bo: lovely")]
    store.search("bread", touch=False)  # builds the index
    # the flag is the record's own text: "we baked bread" follows a turn saying "yesterday"
    assert store._indexes.timely[:4].tolist() == [True, False, True, False]
    timed = RetrievalWeights(speaker_weight=0.0, session_weight=0.0, time_weight=5.0)
    assert store.search("When did Ann bake bread?", k=1, touch=False, weights=timed)[0].id == ids[2]
    untimed = [h.id for h in store.search("What did Ann bake?", k=4, touch=False, weights=NO_CUES)]
    assert [h.id for h in store.search("What did Ann bake?", k=4, touch=False, weights=timed)] == untimed


def test_a_reopened_store_reads_the_same_speaker_and_date(embedder, tmp_path):
    path = tmp_path / "cues.db"
    with MemoryStore(embedder, path) as store:
        bo = store.add("Bo: green tea, green tea, I love green tea", created=1.0, metadata={"date": "7 July, 2023"})
        ann = store.add("Ann: tea in the evening", created=2.0)
        store.add("Cy: the harbour had boats", created=3.0)
        before = [h.id for h in store.search("What green tea does Ann like?", touch=False)]
    with MemoryStore(embedder, path) as reopened:
        assert [h.id for h in reopened.search("What green tea does Ann like?", touch=False)] == before
        assert before[0] == ann
        assert [h.id for h in reopened.search("July", mode="lexical", touch=False)] == [bo]
