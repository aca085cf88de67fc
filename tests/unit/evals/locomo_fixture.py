"""A tiny LoCoMo-shaped conversation file for the eval tests (the real set is read only by benchmarks)."""

from __future__ import annotations

import json
from pathlib import Path

SESSION_1 = [("Ann", "I went to a pottery class yesterday."), ("Bo", "Nice! What did you make?"),
             ("Ann", "A blue bowl for my mother."), ("Bo", "I adopted a dog named Rex last week.")]
SESSION_2 = [("Ann", "I started painting sunsets."), ("Bo", "Rex loves the beach."),
             ("Ann", "My sister Kim visits in June."), ("Bo", "I am training for a marathon.")]


def conversation_data() -> dict:
    data: dict = {"speaker_a": "Ann", "speaker_b": "Bo",
                  "session_1_date_time": "1:56 pm on 8 May, 2023", "session_2_date_time": "3:00 pm on 20 May, 2023"}
    for number, session in ((1, SESSION_1), (2, SESSION_2)):
        data[f"session_{number}"] = [{"speaker": who, "dia_id": f"D{number}:{i}", "text": text}
                                     for i, (who, text) in enumerate(session, 1)]
    data["qa"] = [
        {"question": "What did Ann make in pottery class?", "answer": "a blue bowl", "evidence": ["D1:3"],
         "category": 4},
        {"question": "What is the name of Bo's dog?", "answer": "Rex", "evidence": ["D1:4"], "category": 4},
        {"question": "When did Ann go to a pottery class?", "answer": "7 May 2023", "evidence": ["D1:1"],
         "category": 2},
        {"question": "What does Ann paint?", "answer": "sunsets", "evidence": ["D2:1"], "category": 1},
        {"question": "Who visits Ann in June?", "answer": "her sister Kim", "evidence": ["D2:3"], "category": 3},
        {"question": "What is Bo training for?", "answer": "a marathon", "evidence": ["D2:4"], "category": 4},
        {"question": "What did Bo make in pottery class?", "adversarial_answer": "a blue bowl",
         "evidence": ["D1:3"], "category": 5},
    ]
    return data


def write_conversation(folder: Path, name: str = "7") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.json").write_text(json.dumps(conversation_data()))
    return folder


TOPICS = ["pottery", "hiking", "violin", "garden", "marathon", "painting", "camping", "chess", "baking", "sailing",
          "poetry", "cycling"]
PLACES = ["Paris", "Oslo", "Lima", "Cairo", "Quito", "Hanoi"]


def long_conversation_data() -> dict:
    """Three sessions of twelve turns, with questions whose words overlap many turns, so the
    RAG's top ten is a real ranking of 36 records."""
    data: dict = {"speaker_a": "Ann", "speaker_b": "Bo"}
    qa = []
    for session in (1, 2, 3):
        data[f"session_{session}_date_time"] = f"10:00 am on {session} June, 2023"
        turns = []
        for i in range(1, 13):
            topic, place = TOPICS[(i + session) % len(TOPICS)], PLACES[(i * session) % len(PLACES)]
            who = "Ann" if i % 2 else "Bo"
            turns.append({"speaker": who, "dia_id": f"D{session}:{i}",
                          "text": f"I tried {topic} near {place} with my friend and it was {topic} all day."})
            if i % 4 == 0:
                qa.append({"question": f"Where did {who} go with a friend?" if i == 4 else f"Where did {who} try {topic}?",
                           "answer": place,
                           "evidence": [f"D{session}:{i}"], "category": 4})
        data[f"session_{session}"] = turns
    data["qa"] = qa
    return data
