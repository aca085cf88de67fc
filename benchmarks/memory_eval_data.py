"""Seeded generator of a memory-retrieval evaluation set: multi-session event logs of a small town
where each question names the records that hold its answer.

Question types (each stresses a different part of retrieval):
- ``current``: where an agent lives now; the agent moved several times, only the latest move
  answers (recency matters);
- ``preference``: a favourite food said in passing, asked with other words (semantics matter);
- ``code``: a strongbox combination (an exact rare token; lexical matters);
- ``trades``: everything one agent sold another (several answers);
- ``conflicts``: who an agent argued with, asked as "disputes" (paraphrase, several answers).
Most records are distractors: greetings, walks, weather, trades between other pairs.

    python benchmarks/memory_eval_data.py --seed 7   # prints a summary
"""

from __future__ import annotations

import argparse
import random
from dataclasses import dataclass, field

AGENTS = ["Alice", "Bruno", "Chiara", "Dmitri", "Esme", "Farid", "Greta", "Hugo", "Ines", "Jonas"]
PLACES = ["harbour", "mill", "castle", "orchard", "tavern", "temple", "bridge", "market square", "forge", "library"]
ITEMS = ["barrels of salt", "bolts of silk", "sacks of flour", "iron nails", "jars of honey", "coils of rope",
         "lanterns", "wool blankets", "copper pots", "crates of apples"]
FOODS = ["mushroom risotto", "lamb stew", "plum dumplings", "grilled trout", "lentil soup", "honey cake",
         "roast chestnuts", "cheese pie", "pickled herring", "barley bread"]
TOPICS = ["the price of grain", "a broken fence", "an unpaid debt", "the river toll", "a missing goat", "the harvest festival"]
WEATHER = ["a grey drizzle", "bright sunshine", "a cold wind", "thick fog", "the first snow", "a warm breeze"]


@dataclass
class EvalSet:
    """Records (dicts for MemoryStore.add_many) and questions with answer record indices."""

    records: list[dict] = field(default_factory=list)
    questions: list[dict] = field(default_factory=list)
    """Each: ``{"question", "type", "answers": [record index...], "filter": {...}|None}``."""


def generate(seed: int = 7, sessions: int = 10, turns: int = 150) -> EvalSet:
    rng = random.Random(seed)
    data = EvalSet()
    homes: dict[str, list[int]] = {a: [] for a in AGENTS}
    food_of: dict[str, int] = {}
    code_of: dict[str, int] = {}
    sales: dict[tuple[str, str], list[int]] = {}
    fights: dict[str, list[int]] = {a: [] for a in AGENTS}
    fight_partners: dict[str, set[str]] = {a: set() for a in AGENTS}

    def add(text: str, agent: str, session: int, turn: int, category: str, **meta) -> int:
        data.records.append({"text": text, "created": float(session * 1000 + turn), "kind": "observation",
                             "metadata": {"agent": agent, "session": session, "turn": session * 1000 + turn,
                                          "category": category, **meta}})
        return len(data.records) - 1

    for session in range(sessions):
        for turn in range(turns):
            a, b = rng.sample(AGENTS, 2)
            roll = rng.random()
            if roll < 0.08:
                place = rng.choice(PLACES)
                homes[a].append(add(f"{a} moved into a small room above the {place}.", a, session, turn, "home"))
            elif roll < 0.12 and a not in food_of:
                food = FOODS[AGENTS.index(a)]
                food_of[a] = add(f"Over supper {a} told {b} that nothing beats {food} on a cold evening.",
                                 a, session, turn, "chat", about=b)
            elif roll < 0.15 and a not in code_of:
                code = f"{rng.randint(1000, 9999)}-{rng.choice('KQRXZ')}"
                code_of[a] = add(f"{a} set the strongbox combination to {code} and told nobody.", a, session, turn, "secret")
            elif roll < 0.30:
                item, place = rng.choice(ITEMS), rng.choice(PLACES)
                sales.setdefault((a, b), []).append(add(
                    f"{a} sold {rng.randint(2, 40)} {item} to {b} at the {place}.", a, session, turn, "trade", about=b))
            elif roll < 0.38:
                topic = rng.choice(TOPICS)
                fights[a].append(add(f"{a} argued bitterly with {b} about {topic}.", a, session, turn, "conflict", about=b))
                fight_partners[a].add(b)
            elif roll < 0.65:
                add(f"{a} greeted {b} near the {rng.choice(PLACES)} and talked about {rng.choice(WEATHER)}.",
                    a, session, turn, "chat", about=b)
            else:
                add(f"{a} walked past the {rng.choice(PLACES)} under {rng.choice(WEATHER)}.", a, session, turn, "walk")
    data.questions.extend(_questions(homes, food_of, code_of, sales, fights))
    return data


def _questions(homes: dict[str, list[int]], food_of: dict[str, int], code_of: dict[str, int],
               sales: dict[tuple[str, str], list[int]], fights: dict[str, list[int]]) -> list[dict]:
    """The questions the generated facts answer (record indexes as answers)."""
    questions: list[dict] = []
    for a in AGENTS:
        if homes[a]:
            questions.append({"question": f"Where is {a} living these days?", "type": "current",
                             "answers": [homes[a][-1]], "filter": None})
        if a in food_of:
            questions.append({"question": f"What is {a}'s favourite dish?", "type": "preference",
                             "answers": [food_of[a]], "filter": None})
        if a in code_of:
            questions.append({"question": f"What number opens {a}'s strongbox?", "type": "code",
                             "answers": [code_of[a]], "filter": None})
        if fights[a]:
            questions.append({"question": f"Who has {a} had disputes with?", "type": "conflicts",
                             "answers": list(fights[a]), "filter": None})
    pairs = sorted(sales, key=lambda p: -len(sales[p]))[:15]
    for a, b in pairs:
        questions.append({"question": f"What goods did {a} sell to {b}?", "type": "trades",
                         "answers": list(sales[(a, b)]), "filter": None})
    return questions


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    data = generate(args.seed)
    print(f"{len(data.records)} records, {len(data.questions)} questions")
    for q in data.questions[:6]:
        print(q["type"], q["question"], [data.records[i]["text"] for i in q["answers"]][:2])
