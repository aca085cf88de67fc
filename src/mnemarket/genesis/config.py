"""Genesis configuration: method costs, bounty definitions, fee rules. Loaded from YAML."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from mnemarket.yaml_config import load_model


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class LedgerCosts(_Strict):
    balance: int = Field(0, ge=0)
    transfer: int = Field(0, ge=0)
    history: int = Field(0, ge=0)


class StoreCosts(_Strict):
    list: int = Field(0, ge=0)
    get: int = Field(0, ge=0)
    search: int = Field(0, ge=0)
    count: int = Field(0, ge=0)


class EscrowCosts(_Strict):
    deposit: int = Field(1, ge=0)
    purchase: int = Field(0, ge=0)
    cancel: int = Field(0, ge=0)
    list: int = Field(0, ge=0)
    check: int = Field(0, ge=0)


class EmbedderCosts(_Strict):
    per_text: int = Field(1, ge=0, description="scrip per text embedded, paid by the caller")


class MemoryCosts(_Strict):
    create_store: int = Field(2, ge=0)
    add: int = Field(1, ge=0, description="per entry added (embedding generation)")
    search: int = Field(0, ge=0)
    list: int = Field(0, ge=0)
    delete: int = Field(0, ge=0)
    stats: int = Field(0, ge=0)
    query: int = Field(0, ge=0, description="canonical-query helpers")
    offer: int = Field(0, ge=0, description="listing a licence or a copy for sale")
    buy: int = Field(0, ge=0, description="fee on top of the seller's price")
    preview: int = Field(0, ge=0)


class BountyCosts(_Strict):
    list: int = Field(0, ge=0)
    claim: int = Field(0, ge=0)
    wrong_answer: int = Field(2, ge=0, description="scrip a wrong answer costs (paid to genesis_bounty)")
    wrong_answers: int = Field(3, ge=1, description="wrong answers a claimant may give per bounty")


class Costs(_Strict):
    """Scrip charged per method call (paid by the caller to the genesis artifact's principal)."""

    genesis_ledger: LedgerCosts = LedgerCosts()
    genesis_store: StoreCosts = StoreCosts()
    genesis_escrow: EscrowCosts = EscrowCosts()
    genesis_embedder: EmbedderCosts = EmbedderCosts()
    genesis_memory: MemoryCosts = MemoryCosts()
    genesis_bounty: BountyCosts = BountyCosts()


class Bounty(_Strict):
    """A task whose completion the kernel can verify; completing it mints `reward`.

    kinds:
        artifact: the claimant names an artifact it created whose content contains every string
            in `must_contain` (case-insensitive) and matches `pattern` if given.
        answer: the claimant gives the answer `answer` (genesis/answers.py: normalised exact
            tokens; a list of candidates or another value is wrong), e.g. a fact that sits in
            some agent's memory.
    A wrong claim of either kind costs `wrong_answer` scrip and uses one of `wrong_answers` tries.
    """

    id: str = Field(pattern=r"^[A-Za-z0-9_.:-]{1,64}$")
    kind: Literal["artifact", "answer"]
    description: str
    reward: int = Field(gt=0)
    max_claims: int = Field(1, ge=1)
    must_contain: list[str] = Field(default_factory=list)
    pattern: str | None = None
    answer: str | None = None
    opens_session: int = Field(1, ge=1, description="first session it is listed and may be claimed in")
    closes_session: int | None = Field(None, ge=1, description="last session it may be claimed in (none: never closes)")
    claimants: list[str] = Field(default_factory=list,
                                 description="principal ids who may claim it (empty: anyone); the others can "
                                             "only earn from it by selling what they know to a claimant")
    candidates: list[str] = Field(default_factory=list,
                                  description="other values the task could have (a stale code, the other routes): "
                                              "an answer or artifact naming one of them is wrong")
    labels: dict[str, str | int] = Field(default_factory=dict,
                                         description="carried into every output that names the bounty (the memory "
                                                     "ladder's rung, level and instance)")

    @model_validator(mode="after")
    def _checker_present(self) -> Bounty:
        if self.kind == "answer" and not self.answer:
            raise ValueError(f"bounty {self.id!r}: kind 'answer' needs `answer`")
        if self.kind == "artifact" and not (self.must_contain or self.pattern):
            raise ValueError(f"bounty {self.id!r}: kind 'artifact' needs `must_contain` or `pattern`")
        if self.pattern is not None:
            try:
                re.compile(self.pattern)
            except re.error as exc:
                raise ValueError(f"bounty {self.id!r}: pattern {self.pattern[:60]!r} is not a regular expression "
                                 f"({exc})") from None
        return self


class GenesisConfig(_Strict):
    """Everything the genesis artifacts read from config (costs, bounties)."""

    costs: Costs = Costs()
    bounties: list[Bounty] = Field(default_factory=list)
    memory_preview_words: int = Field(8, ge=1, le=40,
                                      description="words of each chosen entry a preview shows")


def load_genesis_config(path: str | Path | None = None) -> GenesisConfig:
    """Load a GenesisConfig from YAML; every error names the file and the field."""
    if path is None:
        return GenesisConfig()
    return load_model(path, GenesisConfig)


__all__ = ["Bounty", "BountyCosts", "Costs", "EmbedderCosts", "EscrowCosts", "GenesisConfig", "LedgerCosts",
    "MemoryCosts", "StoreCosts", "load_genesis_config"]
