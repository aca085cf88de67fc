"""Genesis artifacts: the system services of the economy (ledger, store, escrow, embedder, memory, bounties)."""

from mnemarket.genesis.answers import ANSWER_STEP_CALL, UNKNOWN, answer_tokens, is_answer_step_call
from mnemarket.genesis.artifact_store import GenesisStore
from mnemarket.genesis.bounties import ANSWER_STEP_FORMS, BOUNTY_ID, GenesisBounty, rejected_answer
from mnemarket.genesis.config import Bounty, BountyCosts, Costs, GenesisConfig, load_genesis_config
from mnemarket.genesis.context_record import ContextHit, ContextRecord, ContextSection
from mnemarket.genesis.embedder_service import GenesisEmbedder
from mnemarket.genesis.escrow import GenesisEscrow
from mnemarket.genesis.event_text import action_signature, clip, describe_event
from mnemarket.genesis.install import Genesis, install_genesis, render_genesis_docs, world_memory
from mnemarket.genesis.ledger_service import GenesisLedger
from mnemarket.genesis.memory_service import (
    LONGTERM_STORE_TEMPLATE,
    MEMORY_ID,
    STORE_TYPE,
    GenesisMemory,
    episodic_store_id,
)
from mnemarket.genesis.run_record import (
    LessonRecord,
    MigrationRecord,
    TurnRecord,
    event_session,
    is_invalid_decision,
    is_lesson,
    is_migration,
    lesson_record,
    migration_record,
    names_turn,
    succeeded,
    turn_record,
)
from mnemarket.genesis.trades import Trade, all_trades

__all__ = [
    "LONGTERM_STORE_TEMPLATE", "MEMORY_ID", "STORE_TYPE", "Bounty", "Costs", "Genesis", "GenesisBounty",
    "GenesisConfig", "GenesisEmbedder", "GenesisEscrow", "GenesisLedger", "GenesisMemory", "GenesisStore",
    "LessonRecord", "MigrationRecord", "Trade", "TurnRecord", "action_signature", "all_trades", "describe_event",
    "episodic_store_id", "install_genesis", "is_lesson", "is_migration", "lesson_record", "load_genesis_config",
    "render_genesis_docs", "turn_record", "world_memory", "UNKNOWN", "ANSWER_STEP_CALL", "answer_tokens",
    "is_answer_step_call", "BOUNTY_ID", "BountyCosts",
    "clip", "is_invalid_decision", "migration_record", "succeeded", "ContextHit", "ContextRecord", "ContextSection",
    "event_session", "names_turn", "rejected_answer", "ANSWER_STEP_FORMS",
]
