"""One LoCoMo conversation as a world: a reading agent whose long-term store holds the dialogue,
and one answer bounty per question on the genesis bounty board.

The agent is an ordinary `Agent` of the world (principal, stores, working memory, its own RAG);
a question is asked after the session that holds its evidence and answered by claiming its
bounty, so an answer is an action in the event log, and scrip pays for right answers (a wrong one
costs a little, as in any run). Everything lives in one SQLite file per conversation, so a killed
eval reopens the same store and board.
"""

from __future__ import annotations

import time
from pathlib import Path

from mnemarket.agents import Agent, AgentConfig, RagConfig, WorkingMemoryConfig
from mnemarket.evals.formation import covered
from mnemarket.evals.locomo_data import Conversation, Question, Turn
from mnemarket.evals.observe import Batch
from mnemarket.evals.reader import Shown
from mnemarket.evals.scoring import ABSTAIN_ANSWER
from mnemarket.genesis import BOUNTY_ID, MEMORY_ID, Bounty, BountyCosts, Costs, GenesisConfig, install_genesis
from mnemarket.kernel import ActionResult, World
from mnemarket.providers import LLM, Embedder
from mnemarket.store import SqlMemoryPersistence, SqlWorldStore

READER = "reader"
REWARD = 10
COSTS = Costs(genesis_bounty=BountyCosts(wrong_answer=1, wrong_answers=1))
"""One try per question; a wrong answer costs 1 scrip, a right one mints `REWARD`."""


def bounty_for(conv: Conversation, question: Question) -> Bounty:
    """The question as an answer bounty; an adversarial one is won by abstaining."""
    answer = ABSTAIN_ANSWER if question.adversarial else (question.answer.split(";")[0].strip() or "?")
    return Bounty(id=question.qid, kind="answer", description=question.question, reward=REWARD, answer=answer,
                  opens_session=conv.evidence_session(question), claimants=[READER])


class ConversationWorld:
    """The world of one conversation; ``rag_limit`` records are retrieved per question (>= 10).

    ``observe``: the store holds the agent's own notes (observe mode), so a turn counts as stored
    or shown by the formation rule (`evals.formation`) instead of by its turn id.
    """

    def __init__(self, path: Path, conv: Conversation, llm: LLM, embedder: Embedder, *, rag_limit: int = 10,
                 observe: bool = False, starting_scrip: int = 100):
        self.conv = conv
        self.observe = observe
        self.store = SqlWorldStore(path)
        self.world = World(self.store)
        config = GenesisConfig(costs=COSTS, bounties=[bounty_for(conv, q) for q in conv.questions])
        self.genesis = install_genesis(self.world, embedder, config, memory=SqlMemoryPersistence(self.store.engine))
        agent_config = AgentConfig(id=READER, components=[], starting_scrip=starting_scrip,
                                   rag=RagConfig(limit=max(10, rag_limit)),
                                   working_memory=WorkingMemoryConfig(enabled=False))
        self.agent = Agent(agent_config, {}, self.world, self.genesis, llm)
        self.agent.setup()
        self._turns = {t.dia_id: t for t in conv.turns}

    def preload(self) -> int:
        """Every turn into the agent's long-term store, a session per transaction (as
        benchmarks/memory_quality.py stores them: text, ``created`` = session number); turns a
        killed eval already stored are skipped. Returns the turns added now."""
        store, added = self.agent.longterm, 0
        by_session: dict[int, list[Turn]] = {}
        for turn in self.conv.turns:
            by_session.setdefault(turn.session, []).append(turn)
        for session, turns in sorted(by_session.items()):
            if all(t.dia_id in store for t in turns):
                continue
            store.add_many([{"text": t.text, "created": float(session), "record_id": t.dia_id,
                             "metadata": {"dia_id": t.dia_id, "session": session, "date": t.date}} for t in turns],
                           actor=READER, reason="locomo preload")
            added += len(turns)
        return added

    def observed_batches(self) -> set[str]:
        """Keys of the batches whose notes committed (a batch that stored nothing leaves no event
        and is shown again to a resumed eval, which adds nothing twice)."""
        return {str(e.meta["observe"]) for e in self.world.iter_events(principal=READER) if "observe" in e.meta}

    def store_notes(self, batch: Batch, notes: list[str]) -> list[ActionResult]:
        """Each note a charged `genesis_memory.add` of the reader on its own store; the batch's adds
        commit together, so a kill leaves all of them or none. The world's clock is the batch's
        session, so a note's ``created`` is its session as a preloaded turn's is (the store reads a
        record with its same-time neighbour: with one clock for every note, notes of different
        sessions were read together and the ranking drifted from preloaded's)."""
        if self.world.tick < batch.session:
            self.world.advance_tick(to=batch.session)
        results = []
        with self.world.batch():
            for note in notes:
                action = {"action_type": "invoke_artifact", "artifact_id": MEMORY_ID, "method": "add",
                          "args": {"store_id": self.agent.config.store_id, "text": note, "kind": "observation",
                                   "metadata": {"session": batch.session, "date": batch.date}}}
                results.append(self.world.submit(READER, action,
                                                 meta={"eval": "locomo", "observe": batch.key,
                                                       "session": batch.session}))
        return results

    def _record_texts(self) -> list[str]:
        return [r.text for r in self.agent.longterm.records()]

    def stored(self, dia_id: str) -> bool:
        """Preloaded: the turn is a record. Observe: some record covers its content."""
        if not self.observe:
            return dia_id in self.agent.longterm
        turn = self._turns.get(dia_id)
        return turn is not None and covered(turn, self._record_texts())

    def evidence_shown(self, dia_id: str, shown: Shown) -> bool:
        """Whether ``shown`` holds the evidence turn: by id, or (observe) by the formation rule."""
        if dia_id in shown.ids:
            return True
        turn = self._turns.get(dia_id)
        return self.observe and turn is not None and covered(turn, [t.text for t in shown.turns])

    def shown(self, question: Question, condition: str) -> tuple[Shown, float]:
        """What the question's prompt holds under ``condition``, and the search's milliseconds."""
        if condition == "no-memory":
            return Shown([]), 0.0
        if condition == "oracle-evidence":
            return Shown([self._turns[e] for e in question.evidence if e in self._turns]), 0.0
        if condition == "full-context":
            if self.observe:
                records = sorted(self.agent.longterm.records(), key=lambda r: (r.created, r.id))
                return Shown([self._note(r.id, r.text, r.metadata) for r in records]), 0.0
            return Shown([t for t in self.conv.turns if self.stored(t.dia_id)]), 0.0
        start = time.perf_counter()
        hits = self.agent.retrieve(question.question)
        ms = (time.perf_counter() - start) * 1000
        if self.observe:
            return Shown([self._note(h.id, h.text, h.metadata) for h in hits]), ms
        return Shown([self._turns[h.metadata["dia_id"]] for h in hits if h.metadata.get("dia_id") in self._turns]), ms

    @staticmethod
    def _note(record_id: str, text: str, metadata: dict) -> Turn:
        """A stored note as a prompt line: its record id where a turn has its dia_id."""
        return Turn(record_id, int(metadata.get("session", 0)), str(metadata.get("date", "")), READER, text)

    def claimed(self, question: Question) -> bool:
        """Whether the reader's claim for ``question`` is already on the board (paid or not)."""
        state = self.world.state
        return (READER in (state.get((BOUNTY_ID, question.qid)) or [])
                or bool(state.get((BOUNTY_ID, f"wrong:{question.qid}:{READER}"))))

    def claim(self, question: Question, answer: str) -> ActionResult:
        self.genesis.bounty.session = self.conv.evidence_session(question)
        action = {"action_type": "invoke_artifact", "artifact_id": BOUNTY_ID, "method": "claim",
                  "args": {"bounty_id": question.qid, "answer": answer[:500] or "?"}}
        return self.world.submit(READER, action, meta={"eval": "locomo", "qid": question.qid})

    def balance(self) -> int:
        return self.world.balances.get(READER, 0)

    def close(self) -> None:
        self.world.close()


__all__ = ["READER", "REWARD", "ConversationWorld", "bounty_for"]
