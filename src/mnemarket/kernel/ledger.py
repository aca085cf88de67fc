"""Scrip: integer balances, ledger entries, and the named rules that alone create or destroy it."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

EntryKind = Literal["initial", "transfer", "fee", "charge", "mint", "burn"]
RuleKind = Literal["mint", "burn"]

SYSTEM_PRINCIPAL = "system"
"""The source of initial allocations and mints and the sink of burns (never holds scrip)."""


class LedgerEntry(BaseModel):
    """One movement of scrip. Mints come from and burns go to `SYSTEM_PRINCIPAL`."""

    model_config = ConfigDict(extra="forbid")

    id: int
    tick: int
    sender: str
    recipient: str
    amount: int
    kind: EntryKind
    reason: str = ""
    rule: str | None = None
    event_id: int | None = None


class SupplyRule(BaseModel):
    """A documented way scrip enters (mint) or leaves (burn) circulation."""

    model_config = ConfigDict(extra="forbid")

    name: str
    kind: RuleKind
    description: str


class Supply(BaseModel):
    """Supply counters. The conservation law: sum of balances == initial + minted - burned."""

    initial: int = 0
    minted: int = 0
    burned: int = 0

    @property
    def expected_total(self) -> int:
        return self.initial + self.minted - self.burned


class SupplyReport(BaseModel):
    """The result of checking conservation."""

    total: int
    initial: int
    minted: int
    burned: int
    negative_balances: dict[str, int]

    @property
    def ok(self) -> bool:
        return self.total == self.initial + self.minted - self.burned and not self.negative_balances


__all__ = ["SYSTEM_PRINCIPAL", "EntryKind", "LedgerEntry", "RuleKind", "Supply", "SupplyReport",
    "SupplyRule"]
