"""The world kernel: artifacts, principals, scrip and validated actions. No LLM, no I/O of its own."""

from mnemarket.kernel.actions import (
    ACTION_TYPES,
    Action,
    DeleteArtifact,
    EditArtifact,
    InvokeArtifact,
    Noop,
    QueryKernel,
    ReadArtifact,
    Transfer,
    WriteArtifact,
    action_adapter,
    action_json_schema,
    describe_actions,
    parse_action,
)
from mnemarket.kernel.artifact import ARTIFACT_ID_PATTERN, AccessPolicy, AccessRule, Artifact, valid_artifact_id
from mnemarket.kernel.artifact_table import ArtifactTable
from mnemarket.kernel.bounds import short_repr
from mnemarket.kernel.changes import ChangeSet
from mnemarket.kernel.events import Event, decode_part
from mnemarket.kernel.invokable import (
    ADVANCED_KEY,
    BAD_ARGS,
    NAMES_KEY,
    PAYABLE_KEY,
    Invokable,
    InvokeContext,
    MethodOutcome,
    MethodSpec,
    NoArgs,
    WorldView,
    advanced,
    names,
    payable,
)
from mnemarket.kernel.ledger import SYSTEM_PRINCIPAL, LedgerEntry, Supply, SupplyReport, SupplyRule
from mnemarket.kernel.persistence import InMemoryPersistence, Persistence, WorldSnapshot
from mnemarket.kernel.results import ActionFailure, ActionResult, ErrorCode
from mnemarket.kernel.text_index import SearchTooBroad, WorkBudget, tokens
from mnemarket.kernel.transaction import Transaction
from mnemarket.kernel.world import World
from mnemarket.kernel.world_state import WorldState

__all__ = [
    "ACTION_TYPES", "ADVANCED_KEY", "BAD_ARGS", "AccessPolicy", "Action", "ActionFailure", "ActionResult",
    "Artifact", "ArtifactTable", "ChangeSet", "DeleteArtifact", "EditArtifact", "ErrorCode", "Event", "InMemoryPersistence",
    "InvokeArtifact", "InvokeContext", "Invokable", "LedgerEntry", "MethodOutcome", "MethodSpec", "NAMES_KEY",
    "PAYABLE_KEY", "NoArgs", "Noop", "Persistence", "QueryKernel", "ReadArtifact", "SYSTEM_PRINCIPAL", "Supply", "SupplyReport",
    "SupplyRule", "Transaction", "Transfer", "World", "WorldSnapshot", "WorldState", "WorldView", "WriteArtifact",
    "action_adapter", "action_json_schema", "advanced", "describe_actions", "names", "parse_action", "payable",
    "ARTIFACT_ID_PATTERN", "AccessRule", "valid_artifact_id", "short_repr", "decode_part", "SearchTooBroad",
    "WorkBudget", "tokens",
]
