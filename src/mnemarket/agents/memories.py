"""An agent's memories as its turn and session end reach them: the two stores, the working
memory's text and the threshold reflector."""

from __future__ import annotations

from mnemarket.agents.config import AgentConfig
from mnemarket.genesis import Genesis
from mnemarket.kernel import World
from mnemarket.memory import MemoryStore, ThresholdReflector


class AgentMemories:
    """Looked up by id each time: the stores live in genesis (`genesis.memory`), the working memory
    in the world."""

    def __init__(self, config: AgentConfig, world: World, genesis: Genesis):
        self.config = config
        self.world = world
        self.genesis = genesis
        self._reflector: ThresholdReflector | None = None

    @property
    def longterm(self) -> MemoryStore:
        return self.genesis.memory.store(self.config.store_id)

    @property
    def episodic(self) -> MemoryStore:
        return self.genesis.memory.store(self.config.episodic_store_id)

    @property
    def reflector(self) -> ThresholdReflector:
        """Threshold reflection over the episodic store; its accumulator lives in the store."""
        if self._reflector is None:
            r = self.config.memory.reflection
            self._reflector = ThresholdReflector.load(
                self.episodic, key="reflector", threshold=r.threshold, scale="1-10", questions=r.questions,
                memories_per_question=r.memories_per_question, enabled=r.enabled)
        return self._reflector

    def working_memory_text(self) -> str:
        artifact = self.world.get(self.config.working_memory_id)
        return artifact.content if artifact is not None else ""
