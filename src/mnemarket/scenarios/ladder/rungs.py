"""The memory ladder's rungs (issue 36): one generated scenario per rung, level and seed.

Each scenario has one model-driven agent under test (`kit`) and, on R4, a scripted counterpart
(`vend`, always played by its plan). Every item is an answer or artifact bounty whose `labels`
carry rung, level and instance into every output; other bounties (R3's notices, R6's first
report) are the episode's setting, not items. Facts are fresh fictional names and codes per seed
(`names.Draws`). The scripted optimum is part of each scenario: it takes only actions on kit's
one-step menu, fills every value from what kit was shown (`{re:...}`; R0's answer is in the
prompt by construction, and R7's is "unknown"), and so wins every item with memory on and loses
the items that need memory with it off.

Rungs (levels):
    R0 answer in the prompt (the model's action ceiling);
    R1 answer in its own store, retrieved automatically (0 / 50 / 500 distractors; older values);
    R2 own store, found only by an explicit search (the record's wording is far from the question);
    R3 seen in session 1, asked in session 1 + g (g = 1 / 3), carried only by what kit stored;
    R4 in another agent's store: preview, buy a licence, search;
    R5 a fact updated 1 / 3 times: the current value wins, a stale one is wrong;
    R6 a hidden rule learned from a rejection, the task recurring over 5 sessions;
    R7 nobody knows: "unknown" is right, a fabricated value costs;
    R8 chained lookups, depth 1 / 2 / 3.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Literal

from mnemarket.genesis import UNKNOWN
from mnemarket.scenarios.ladder.names import Draws

RUNGS = ("R0", "R1", "R2", "R3", "R4", "R5", "R6", "R7", "R8")
LEVELS: dict[str, tuple[int, ...]] = {"R0": (0,), "R1": (0, 50, 500), "R2": (0,), "R3": (1, 3), "R4": (0,),
                                      "R5": (1, 3), "R6": (0,), "R7": (0,), "R8": (1, 2, 3)}
"""Levels per rung (the first is the default): distractors, gap in sessions, updates, depth."""
NEEDS_MEMORY = ("R1", "R2", "R3", "R4", "R5", "R6")
"""Rungs whose items the scripted plan cannot win with long-term memory off."""
Oracle = Literal["write", "prompt"]
TESTER = "kit"
COUNTERPART = "vend"
ITEM_REWARD = 10
NOTICE_REWARD = 2
INSTANCES = 3
REPORT_SESSIONS = 5
STARTING_SCRIP = 20
SYSTEM_PROMPT = (
    "You are Kit. You earn scrip by claiming bounties with the right answer. Answer with the value alone. "
    "A wrong answer costs 2 scrip. If nothing you were shown gives the value, answer unknown.")


@dataclass
class Fact:
    entity: str
    attribute: str
    value: str

    @property
    def text(self) -> str:
        return f"The {self.attribute} of {self.entity} is {self.value}."

    @property
    def question(self) -> str:
        return f"What is the {self.attribute} of {self.entity}?"

    @property
    def pattern(self) -> str:
        """A `{re:...}` placeholder that reads the value from this fact's text."""
        return "{re:" + re.escape(f"{self.attribute} of {self.entity} is ") + r"(\d+)}"


def _fact(draws: Draws) -> Fact:
    return Fact(draws.name(), draws.attribute(), draws.code())


def claim(bounty_id: str, answer: str) -> dict[str, Any]:
    return {"action_type": "invoke_artifact", "target": "genesis_bounty", "method": "claim",
            "args": {"bounty_id": bounty_id, "answer": answer}}


def invoke(target: str, method: str, **args: Any) -> dict[str, Any]:
    return {"action_type": "invoke_artifact", "target": target, "method": method, "args": args}


def write(target: str, text: str) -> dict[str, Any]:
    return {"action_type": "write_artifact", "target": target, "text": text}


@dataclass
class Episode:
    """A rung's scenario as it is built: bounties, memories, kit's menu and both plans."""

    rung: str
    level: int
    seed: int
    oracle: Oracle | None
    sessions: int = 1
    turns: int = 5
    menu: list[str] = field(default_factory=lambda: ["genesis_bounty.claim"])
    prompt: str = "Claim each open bounty with its answer (genesis_bounty.claim)."
    bounties: list[dict[str, Any]] = field(default_factory=list)
    memories: list[dict[str, Any]] = field(default_factory=list)
    plan: list[list[dict[str, Any]]] = field(default_factory=list)
    counterpart_plan: list[list[dict[str, Any]]] | None = None
    counterpart_memories: list[str] = field(default_factory=list)
    lesson_after: list[str] = field(default_factory=list)
    rag_limit: int = 5

    def __post_init__(self) -> None:
        self.draws = Draws(self.seed, f"{self.rung}:{self.level}")

    def plan_session(self, session: int) -> list[dict[str, Any]]:
        while len(self.plan) < session:
            self.plan.append([])
        return self.plan[session - 1]

    def remember(self, text: str, session: int = 1, agent: str = TESTER) -> None:
        self.memories.append({"agent": agent, "text": text, "kind": "fact", "importance": 0.6, "session": session})

    def item(self, instance: int, fact: Fact, *, answer: str | None = None, session: int = 1,
             candidates: list[str] | None = None, question: str | None = None) -> str:
        """Add an answer item; under an oracle the gold fact is written for kit or put in the question."""
        bounty_id = f"{self.rung.lower()}_item{instance}"
        question = question or fact.question
        if self.oracle == "prompt":
            question = f"{fact.text} {question}"
        if self.oracle == "write":
            self.remember(f"LESSON: {fact.text}", session)
        self.bounties.append({
            "id": bounty_id, "kind": "answer", "description": question, "reward": ITEM_REWARD,
            "answer": answer or fact.value, "candidates": candidates or [], "claimants": [TESTER],
            "opens_session": session, "closes_session": session,
            "labels": {"rung": self.rung, "level": self.level, "instance": instance, "item": 1, "gold": fact.text}})
        return bounty_id

    def distractors(self, count: int, session: int = 1) -> None:
        for _ in range(count):
            self.remember(_fact(self.draws).text, session)

    def document(self) -> dict[str, Any]:
        """The scenario in the shape of a scenario file (sim.scenario.ScenarioConfig)."""
        won = sum(b["reward"] for b in self.bounties if b["labels"].get("item") or b["labels"].get("role") == "notice")
        agents: list[dict[str, Any]] = [_tester(self)]
        plan = {TESTER: self.plan}
        scripted: list[str] = []
        memories = list(self.memories)
        if self.counterpart_plan is not None:
            agents.append(_counterpart())
            plan[COUNTERPART] = self.counterpart_plan
            scripted.append(COUNTERPART)
            memories += [{"agent": COUNTERPART, "text": t, "kind": "fact", "importance": 0.6, "session": 1}
                         for t in self.counterpart_memories]
        name = f"ladder_{self.rung.lower()}_l{self.level}" + (f"_oracle_{self.oracle}" if self.oracle else "")
        return {"name": name, "description": f"memory ladder {self.rung}, level {self.level}, seed {self.seed}",
                "sessions": self.sessions, "turns": self.turns, "seed": self.seed, "agents": agents,
                "bounties": self.bounties, "memories": memories, "scripted_plan": plan, "scripted_agents": scripted,
                "upper_bound": won}


def _tester(episode: Episode) -> dict[str, Any]:
    return {
        "id": TESTER, "name": "Kit", "model": "local", "temperature": 0.2, "starting_scrip": STARTING_SCRIP,
        "system_prompt": SYSTEM_PROMPT, "components": [],
        "workflow": {"steps": [{"name": "act", "prompt": episode.prompt, "actions": episode.menu}]},
        "rag": {"enabled": True, "limit": episode.rag_limit, "query_template": "{open_bounties}"},
        "history": "session", "working_memory": {"enabled": True, "max_chars": 800},
        "memory": {"episodic_capture": []},
        "lesson_step": {"after": episode.lesson_after, "max_lessons": 2, "lesson_chars": 140},
        # A claim's answer is read from the facts shown, in a prompt of its own (plans/ladder.md):
        # the same for every rung, model and config.
        "answer_step": {"enabled": True},
        "budget": {"max_context_tokens": 800, "max_output_tokens": 160, "decision_text_chars": 200}}


def _counterpart() -> dict[str, Any]:
    return {"id": COUNTERPART, "name": "Vend", "model": "scripted", "starting_scrip": 20, "components": [],
            "workflow": {"steps": [{"name": "sell", "prompt": "Sell a licence to your store.",
                                    "actions": ["genesis_memory.offer_licence"]}]},
            "history": "session", "memory": {"episodic_capture": []}}


# -- the rungs -------------------------------------------------------------------------------------
def _r0(e: Episode) -> None:
    e.prompt = "Each open bounty states its own answer: claim it with that value (genesis_bounty.claim)."
    for n in range(1, INSTANCES + 1):
        fact = _fact(e.draws)
        bounty = e.item(n, fact, question=f"{fact.text} {fact.question}")
        e.plan_session(1).append(claim(bounty, fact.value))  # in the prompt by construction


def _r1(e: Episode) -> None:
    e.prompt = "Your memories may hold the answers: claim each open bounty with its value (genesis_bounty.claim)."
    facts = [_fact(e.draws) for _ in range(INSTANCES)]
    for fact in facts:
        e.remember(fact.text)
    e.distractors(e.level)
    for n, fact in enumerate(facts, 1):
        stale = []
        if e.level:  # a near-duplicate older value among the distractors
            old = e.draws.code()
            e.remember(f"Before the reform the {fact.attribute} of {fact.entity} was {old}.")
            stale.append(old)
        e.plan_session(1).append(claim(e.item(n, fact, candidates=stale), fact.pattern))


def _r2(e: Episode) -> None:
    e.menu = ["genesis_memory.search", "genesis_bounty.claim"]
    e.prompt = ("A memory says where each answer is written: search your store (genesis_memory.search, store "
                "kit_longterm) for that place, then claim the bounty with the value.")
    e.turns = 2 * INSTANCES + 2
    e.rag_limit = INSTANCES
    pointers = []
    for n in range(1, INSTANCES + 1):
        fact, ledger, line = _fact(e.draws), e.draws.name(), e.draws.rng.randrange(2, 60)
        place = f"{ledger} ledger, line {line}"
        e.remember(f"{place}: {fact.value}.")
        pointers.append(f"The {fact.attribute} of {fact.entity} is written in the {place}.")
        bounty = e.item(n, fact)
        e.plan_session(1).extend([
            invoke("genesis_memory", "search", store_id=f"{TESTER}_longterm",
                   query="{re:" + re.escape(f"{fact.entity} is written in the ") + r"(\w+ ledger, line \d+)}"),
            claim(bounty, "{re:" + re.escape(f"{place}: ") + r"(\d+)}")])
    for pointer in pointers:
        e.remember(pointer)
    e.distractors(5)


def _r3(e: Episode) -> None:
    gap = e.level
    e.sessions, e.turns = 1 + gap, INSTANCES + 2
    e.menu = ["genesis_bounty.claim", "write_artifact"]
    e.prompt = ("Claim the open bounties (genesis_bounty.claim). What you are told now is asked again in a later "
                "session: keep it as a LESSON: line in your working memory (write_artifact kit_working_memory).")
    e.lesson_after = ["session_end"]
    facts = [_fact(e.draws) for _ in range(INSTANCES)]
    lessons = []
    for n, fact in enumerate(facts, 1):
        notice = f"r3_notice{n}"
        e.bounties.append({"id": notice, "kind": "answer", "description": f"Notice: {fact.text} Confirm it: "
                           f"{fact.question}", "reward": NOTICE_REWARD, "answer": fact.value, "claimants": [TESTER],
                           "closes_session": 1, "labels": {"rung": e.rung, "level": e.level, "instance": n,
                                                           "role": "notice"}})
        e.plan_session(1).append(claim(notice, fact.value))  # in the prompt by construction, as on R0
        lessons.append(f"- 'LESSON: {fact.text}'")
    e.plan_session(1).append(write(f"{TESTER}_working_memory", "lessons:\n" + "\n".join(lessons) + "\n"))
    for n, fact in enumerate(facts, 1):
        e.plan_session(1 + gap).append(claim(e.item(n, fact, session=1 + gap), fact.pattern))


def _r4(e: Episode) -> None:
    store = f"{COUNTERPART}_longterm"
    e.menu = ["genesis_memory.preview", "genesis_memory.buy_licence", "genesis_memory.search", "genesis_bounty.claim"]
    e.prompt = ("Another agent's store holds the answers: preview it, buy its licence (genesis_memory.buy_licence), "
                "search it (genesis_memory.search), then claim each bounty with the value.")
    e.turns = 2 + 2 * INSTANCES + 2
    e.remember(f"The district records are in {store}, the store of Vend; Vend sells licences to it.")
    e.distractors(3)
    first = e.plan_session(1)
    found = "{re:in (" + re.escape(store) + "), the store of Vend}"
    first += [invoke("genesis_memory", "preview", store_id=found), invoke("genesis_memory", "buy_licence",
                                                                          store_id=found)]
    for n in range(1, INSTANCES + 1):
        fact = _fact(e.draws)
        e.counterpart_memories.append(fact.text)
        bounty = e.item(n, fact)
        first += [invoke("genesis_memory", "search", store_id=found, query=f"{fact.attribute} of {fact.entity}"),
                  claim(bounty, fact.pattern)]
    e.counterpart_plan = [[invoke("genesis_memory", "offer_licence", store_id=store, price=8)]]


def _r5(e: Episode) -> None:
    updates = e.level
    e.rag_limit = INSTANCES * (updates + 1)
    e.prompt = ("Your memories hold dated records: claim each open bounty with the latest value "
                "(genesis_bounty.claim); an older value is wrong.")
    for n in range(1, INSTANCES + 1):
        fact = _fact(e.draws)
        values = [e.draws.code() for _ in range(updates)] + [fact.value]
        for week, value in enumerate(values, 1):
            e.remember(f"As of week {week}, the {fact.attribute} of {fact.entity} is {value}.")
        latest = "{re:" + re.escape(f"As of week {len(values)}, the {fact.attribute} of {fact.entity} is ") + r"(\d+)}"
        bounty = e.item(n, fact, candidates=values[:-1],
                        question=f"What is the {fact.attribute} of {fact.entity} as of the latest week?")
        e.plan_session(1).append(claim(bounty, latest))
    e.distractors(3)


def _r6(e: Episode) -> None:
    stamp = f"stamp {e.draws.word()}"
    e.sessions, e.turns = REPORT_SESSIONS, 4
    e.menu = ["write_artifact", "genesis_bounty.claim"]
    e.prompt = ("File this session's ward report: write it (write_artifact kit_report), claim its bounty with "
                "artifact_id kit_report, and keep what a rejection teaches as a LESSON: line in your working "
                "memory (write_artifact kit_working_memory).")
    e.lesson_after = ["failure", "session_end"]
    description = ("File this session's ward report: an artifact you wrote on the wards; claim with its artifact_id.")
    if e.oracle == "prompt":
        description += f" It must contain the line '{stamp}'."
    if e.oracle == "write":
        e.remember(f"LESSON: a ward report claim fails unless the report says {stamp}")
    obvious = write(f"{TESTER}_report", "Ward report: the wards are quiet.")
    remembered = write(f"{TESTER}_report", "Ward report: the wards are quiet. {re:unless the report says (stamp \\w+)}")
    for session in range(1, REPORT_SESSIONS + 1):
        bounty_id = f"r6_report{session}"
        labels: dict[str, Any] = {"rung": e.rung, "level": e.level, "instance": session - 1, "item": 1,
                                  "gold": stamp} if session > 1 else {"rung": e.rung, "level": e.level, "role": "lesson"}
        e.bounties.append({"id": bounty_id, "kind": "artifact", "description": description, "reward": ITEM_REWARD,
                           "must_contain": ["ward", stamp], "claimants": [TESTER], "opens_session": session,
                           "closes_session": session, "labels": labels})
        turns = e.plan_session(session)
        turns += [{"first_of": [remembered, obvious]},
                  {"action_type": "invoke_artifact", "target": "genesis_bounty", "method": "claim",
                   "args": {"bounty_id": bounty_id, "artifact_id": f"{TESTER}_report"}}]
        if session == 1:
            turns.append(write(f"{TESTER}_working_memory", "lessons:\n- 'LESSON: a ward report claim fails unless "
                               "the report says {re:lacks \\['(stamp \\w+)'\\]}'\n"))


def _r7(e: Episode) -> None:
    e.prompt = ("Claim each open bounty (genesis_bounty.claim) with the value your memories give, or with "
                "unknown when none does.")
    e.distractors(6)
    for n in range(1, INSTANCES + 1):
        fact = Fact(e.draws.name(), e.draws.attribute(), UNKNOWN)  # recorded nowhere
        e.plan_session(1).append(claim(e.item(n, fact, answer=UNKNOWN), UNKNOWN))


def _r8(e: Episode) -> None:
    depth, instances = e.level, 2
    e.menu = ["genesis_memory.search", "genesis_bounty.claim"]
    e.prompt = ("A memory names the key under which each answer is kept; a key may point to another key. Search "
                "your store (genesis_memory.search, store kit_longterm) for each key, then claim with the value.")
    e.turns = instances * (depth + 1) + 2
    e.rag_limit = instances
    for n in range(1, instances + 1):
        fact = _fact(e.draws)
        keys = [e.draws.word() for _ in range(depth)]
        e.remember(f"The {fact.attribute} of {fact.entity} is kept under key {keys[0]}.")
        turns = e.plan_session(1)
        turns.append(invoke("genesis_memory", "search", store_id=f"{TESTER}_longterm",
                            query="key {re:" + re.escape(f"of {fact.entity} is kept under key ") + r"(\w+)}"))
        for here, there in zip(keys, keys[1:]):
            e.remember(f"Key {here} points to key {there}.")
            turns.append(invoke("genesis_memory", "search", store_id=f"{TESTER}_longterm",
                                query="key {re:" + re.escape(f"Key {here} points to key ") + r"(\w+)}"))
        e.remember(f"Key {keys[-1]} holds {fact.value}.")
        turns.append(claim(e.item(n, fact), "{re:" + re.escape(f"Key {keys[-1]} holds ") + r"(\d+)}"))
    e.distractors(5)


BUILDERS = {"R0": _r0, "R1": _r1, "R2": _r2, "R3": _r3, "R4": _r4, "R5": _r5, "R6": _r6, "R7": _r7, "R8": _r8}


def generate_rung(rung: str, level: int | None = None, seed: int = 0, oracle: Oracle | None = None) -> dict[str, Any]:
    """The scenario document of ``rung`` at ``level`` (default: its first) for ``seed``.

    Raises:
        ValueError: an unknown rung or a level the rung does not have.
    """
    if rung not in BUILDERS:
        raise ValueError(f"unknown rung {rung!r}; rungs: {', '.join(RUNGS)}")
    level = LEVELS[rung][0] if level is None else level
    if level not in LEVELS[rung]:
        raise ValueError(f"{rung} has no level {level!r}; its levels: {list(LEVELS[rung])}")
    episode = Episode(rung=rung, level=level, seed=seed, oracle=oracle)
    BUILDERS[rung](episode)
    return episode.document()


__all__ = ["LEVELS", "NEEDS_MEMORY", "RUNGS", "TESTER", "generate_rung"]
