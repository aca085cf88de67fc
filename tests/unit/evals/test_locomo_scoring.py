"""LoCoMo's category numbering, F1/EM normalisation (hand-worked cases) and abstention scoring."""

from __future__ import annotations

import json

import pytest

from mnemarket.errors import ConfigError
from mnemarket.evals import CATEGORY_NAMES, abstained, exact_match, load_conversations, locomo_f1, normalize_answer
from mnemarket.evals.scoring import multi_answer_f1, token_f1


def conversation_file(folder, name="26"):
    data = {
        "speaker_a": "Ann", "speaker_b": "Bo",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [{"speaker": "Ann", "dia_id": "D1:1", "text": "I went to a support group."},
                      {"speaker": "Bo", "dia_id": "D1:2", "text": "Look!", "blip_caption": "a photo of a dog"}],
        "session_2_date_time": "2:00 pm on 9 May, 2023",
        "session_2": [{"speaker": "Ann", "dia_id": "D2:1", "text": "I paint."}],
        "qa": [{"question": "Which hobbies?", "answer": "painting, running", "evidence": ["D2:1"], "category": 1},
               {"question": "When?", "answer": 2023, "evidence": ["D1:1; D1:2"], "category": 2},
               {"question": "Would she?", "answer": "Likely yes; because", "evidence": ["D1:1"], "category": 3},
               {"question": "What pet?", "answer": "a dog", "evidence": ["D1:2"], "category": 4},
               {"question": "What did Bo paint?", "adversarial_answer": "a dog", "evidence": ["D2:1"],
                "category": 5},
               {"question": "Unknown kind", "answer": "x", "evidence": [], "category": 9}],
    }
    (folder / f"{name}.json").write_text(json.dumps(data))


def test_categories_are_locomo_numbering_and_read_from_files(tmp_path):
    assert CATEGORY_NAMES == {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
    conversation_file(tmp_path)
    [conv] = load_conversations(tmp_path)
    assert [q.category_name for q in conv.questions] == ["multi-hop", "temporal", "open-domain", "single-hop",
                                                         "adversarial"]
    assert conv.questions[1].answer == "2023" and conv.questions[1].evidence == ("D1:1", "D1:2")
    assert conv.questions[4].answer == "a dog" and conv.questions[4].adversarial
    assert [t.dia_id for t in conv.turns] == ["D1:1", "D1:2", "D2:1"]
    assert conv.turns[1].text == "Bo: Look! shares a photo of a dog" and conv.turns[2].session == 2
    assert conv.turns[0].date == "1:56 pm on 8 May, 2023"
    assert conv.evidence_session(conv.questions[0]) == 2 and conv.evidence_session(conv.questions[3]) == 1
    assert conv.questions[0].qid == "26-q0" and conv.questions[4].qid == "26-q4"


def test_loader_errors_name_the_problem(tmp_path):
    with pytest.raises(ConfigError, match="no LoCoMo conversations"):
        load_conversations(tmp_path)
    conversation_file(tmp_path)
    with pytest.raises(ConfigError, match="conversations 99 not in"):
        load_conversations(tmp_path, ["26", "99"])
    (tmp_path / "bad.json").write_text('{"session_1": [{"speaker": "A"}]}')
    with pytest.raises(ConfigError, match="bad.json is not a LoCoMo conversation"):
        load_conversations(tmp_path, ["bad"])


def test_normalisation_hand_worked():
    assert normalize_answer("The Adoption, agencies!") == "adoption agencies"
    assert normalize_answer("  Salt and   pepper. ") == "salt pepper"
    assert normalize_answer("An apple") == "apple"


def test_token_f1_hand_worked():
    # stems: adopt, agenc | research, adopt, agenc -> P 1, R 2/3, F1 0.8
    assert token_f1("adoption agencies", "researching adoption agencies") == pytest.approx(0.8)
    assert token_f1("7 May 2023", "May 7, 2023") == 1.0
    assert token_f1("she runs", "running") == pytest.approx(2 * 0.5 * 1 / 1.5)  # run matches run
    assert token_f1("the", "a") == 0.0  # both normalise to nothing
    assert token_f1("cats", "dogs") == 0.0


def test_multi_hop_splits_at_commas():
    # gold parts: pottery 0, camping 0, painting 1 -> 1/3
    assert multi_answer_f1("painting, swimming", "pottery, camping, painting") == pytest.approx(1 / 3)
    assert locomo_f1("running, painting", "painting, running", 1) == 1.0
    assert locomo_f1("running, painting", "painting, running", 4) == 1.0  # commas vanish in the bag


def test_open_domain_scores_the_first_part_of_the_gold():
    # gold "Likely yes" -> like, ye; prediction ye -> P 1, R 1/2
    assert locomo_f1("yes", "Likely yes; because she said so", 3) == pytest.approx(2 / 3)
    assert exact_match("likely yes", "Likely yes; because", 3) == 1.0


def test_exact_match_is_order_free_on_normalised_words():
    assert exact_match("May 7 2023", "7 May, 2023", 2) == 1.0
    assert exact_match("7 May", "7 May, 2023", 2) == 0.0


def test_abstention_scores_adversarial_only():
    assert abstained("Not mentioned in the conversation.") and abstained("No information available")
    assert not abstained("self-care is important")
    assert locomo_f1("It is not mentioned.", "self-care is important", 5) == 1.0
    assert locomo_f1("self-care is important", "self-care is important", 5) == 0.0  # the bait scores 0
    assert exact_match("not mentioned", "anything", 5) == 1.0
    assert locomo_f1("Not mentioned", "a dog", 4) == 0.0  # abstaining on an answerable question earns nothing
