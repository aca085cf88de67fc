"""genesis_bounty: scenario-defined tasks the kernel can verify; completing one mints its reward.

This is how scrip enters the economy after the initial allocation (mint rule `bounty_reward`).
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, Field

from mnemarket.genesis.answers import answer_matches, names_candidate
from mnemarket.genesis.config import Bounty, BountyCosts
from mnemarket.kernel import (
    ActionFailure,
    ErrorCode,
    Event,
    Invokable,
    InvokeContext,
    MethodOutcome,
    MethodSpec,
    NoArgs,
    Transaction,
    World,
    WorldView,
    names,
)

BOUNTY_ID = "genesis_bounty"
MINT_RULE = "bounty_reward"


class ClaimArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    bounty_id: str = Field(json_schema_extra=names("bounty"))
    artifact_id: str | None = Field(None, description="for artifact bounties: an artifact you created")
    answer: str | None = Field(None, max_length=500, description="for answer bounties")


class ClaimWithAnswer(BaseModel):
    """A claim's reply form for an answer bounty: the argument an artifact bounty takes is not offered."""

    model_config = ConfigDict(extra="forbid")
    bounty_id: str = Field(json_schema_extra=names("answer_bounty"))
    answer: str = Field(max_length=500, description="the value alone")


class ClaimAnswered(BaseModel):
    """A claim's reply form for an answer bounty when the claimant's answer step writes the answer
    (agents/answer_step.py): the bounty alone, so the decision spends no tokens on an answer the
    step replaces. The claim is executed as a `ClaimArgs` with the step's answer."""

    model_config = ConfigDict(extra="forbid")
    bounty_id: str = Field(json_schema_extra=names("answer_bounty"))


ANSWER_STEP_FORMS: dict[type[BaseModel], type[BaseModel]] = {ClaimWithAnswer: ClaimAnswered}
"""The reply forms an answer step's decision offers in place of the ones it answers."""


class ClaimWithArtifact(BaseModel):
    """A claim's reply form for an artifact bounty: one of the caller's own artifacts, no answer."""

    model_config = ConfigDict(extra="forbid")
    bounty_id: str = Field(json_schema_extra=names("artifact_bounty"))
    artifact_id: str = Field(json_schema_extra=names("own"))


class GenesisBounty(Invokable):
    """A bounty board. Each bounty pays at most `max_claims` times, once per claimant."""

    def __init__(self, bounties: list[Bounty], costs: BountyCosts | None = None):
        costs = self.costs = costs or BountyCosts()
        super().__init__(BOUNTY_ID, "Bounties: verifiable tasks that pay newly minted scrip.")
        self.bounties = {b.id: b for b in bounties}
        self.session = 1
        """The session being played (the runner sets it as each session starts): bounties open
        and close by session, so a fact that pays in session 2 must be remembered from session 1."""
        self.add(MethodSpec("list", NoArgs, self._list, "open bounties with rewards", cost=costs.list))
        self.add(MethodSpec("claim", ClaimArgs, self._claim,
                            "claim a bounty with an artifact you created or an answer (a wrong claim costs "
                            f"{costs.wrong_answer} scrip; {costs.wrong_answers} wrong claims per bounty)",
                            cost=costs.claim, reply_forms=(ClaimWithAnswer, ClaimWithArtifact)))

    def on_register(self, world: WorldView) -> None:
        world.register_rule(MINT_RULE, "mint", "a verified bounty claim mints the bounty's reward")

    def is_open(self, bounty: Bounty) -> bool:
        """Whether ``bounty`` may be claimed this session (claims left are counted apart)."""
        return bounty.opens_session <= self.session and (bounty.closes_session is None
                                                          or self.session <= bounty.closes_session)

    def claimable_by(self, principal: str, world: World | None = None) -> list[Bounty]:
        """The bounties open this session that ``principal`` may claim; given ``world``, only those
        a claim could still win: not claimed by it, with claims and tries left (a reply schema
        then offers no bounty whose claim must fail)."""
        found = [b for b in self.bounties.values() if self.is_open(b) and (not b.claimants or principal in b.claimants)]
        if world is None:
            return found
        tries = self.costs.wrong_answers
        return [b for b in found if principal not in (claims := world.state.get((self.artifact_id, b.id)) or [])
                and len(claims) < b.max_claims
                and int(world.state.get((self.artifact_id, _wrong_key(b, principal))) or 0) < tries]

    def open_for(self, world: World, principal: str) -> list[Bounty]:
        """Bounties with claims left that ``principal`` has not claimed (whether it may claim them
        or only sell what they need to a claimant: see `Bounty.claimants`)."""
        found = []
        for bounty in self.bounties.values():
            claims = world.state.get((self.artifact_id, bounty.id)) or []
            if self.is_open(bounty) and len(claims) < bounty.max_claims and principal not in claims:
                found.append(bounty)
        return found

    def _claims(self, ctx: InvokeContext, bounty_id: str) -> list[str]:
        return ctx.state(bounty_id) or []

    def _list(self, ctx: InvokeContext, args: NoArgs) -> MethodOutcome:
        rows = []
        for bounty in self.bounties.values():
            left = bounty.max_claims - len(self._claims(ctx, bounty.id))
            if left > 0 and self.is_open(bounty):
                how = ("claim with artifact_id of an artifact you created" if bounty.kind == "artifact"
                       else "claim with answer")
                row = {"bounty_id": bounty.id, "description": bounty.description,
                       "reward": bounty.reward, "claims_left": left, "how": how}
                if bounty.claimants:
                    row["who_may_claim"] = bounty.claimants
                rows.append(row)
        return MethodOutcome(f"{len(rows)} open bounties", rows)

    def _claim(self, ctx: InvokeContext, args: ClaimArgs) -> MethodOutcome:
        bounty = self.bounties.get(args.bounty_id)
        if bounty is None:
            raise ActionFailure(ErrorCode.INVALID_ARGUMENTS, f"no bounty {args.bounty_id!r}",
                                f"open bounties: {', '.join(self.bounties) or '(none)'}")
        if not self.is_open(bounty):
            when = (f"opens in session {bounty.opens_session}" if bounty.opens_session > self.session
                    else f"closed after session {bounty.closes_session}")
            raise ActionFailure(ErrorCode.INVALID_ARGUMENTS, f"{bounty.id!r} is not open now: it {when}",
                                "list the open bounties with genesis_bounty.list")
        if bounty.claimants and ctx.caller not in bounty.claimants:
            raise ActionFailure(ErrorCode.PERMISSION_DENIED,
                                f"only {', '.join(bounty.claimants)} may claim {bounty.id!r}",
                                "sell what you know to one of them instead, e.g. a licence to your memory store "
                                "(genesis_memory.offer_licence)")
        claims = self._claims(ctx, bounty.id)
        if ctx.caller in claims:
            raise ActionFailure(ErrorCode.INVALID_ARGUMENTS, f"you already claimed {bounty.id!r}",
                                "pick another bounty from genesis_bounty.list")
        if len(claims) >= bounty.max_claims:
            raise ActionFailure(ErrorCode.INVALID_ARGUMENTS, f"{bounty.id!r} has no claims left",
                                "pick another bounty from genesis_bounty.list")
        self._check_tries(ctx, bounty)
        problem = self._verify_artifact(ctx, bounty, args) if bounty.kind == "artifact" else self._verify_answer(
            bounty, args)
        if problem is not None:
            self._wrong_claim(ctx, bounty, problem)
        ctx.put_state(bounty.id, [*claims, ctx.caller])
        ctx.tx.mint(ctx.caller, bounty.reward, rule=MINT_RULE, reason=f"bounty {bounty.id}")
        return MethodOutcome(f"bounty {bounty.id!r} verified: {bounty.reward} scrip minted to you",
                             {"bounty_id": bounty.id, "reward": bounty.reward})

    def _check_tries(self, ctx: InvokeContext, bounty: Bounty) -> None:
        wrong = int(ctx.state(_wrong_key(bounty, ctx.caller)) or 0)
        if wrong >= self.costs.wrong_answers:
            raise ActionFailure(ErrorCode.INVALID_ARGUMENTS, f"you made {wrong} wrong claims for {bounty.id!r}; "
                                "no tries left", "pick another bounty from genesis_bounty.list")

    def _verify_artifact(self, ctx: InvokeContext, bounty: Bounty, args: ClaimArgs) -> tuple[str, str] | None:
        """None when the artifact satisfies the bounty, else (what is wrong, how to fix it)."""
        if not args.artifact_id:
            raise ActionFailure(ErrorCode.INVALID_ARGUMENTS, f"{bounty.id!r} needs an artifact_id",
                                "write an artifact that satisfies the bounty, then claim with its id")
        artifact = ctx.artifact(args.artifact_id)
        if artifact.creator != ctx.caller:
            raise ActionFailure(ErrorCode.PERMISSION_DENIED,
                                f"{artifact.id!r} was created by {artifact.creator!r}, not you",
                                "claim with an artifact you created yourself")
        content = artifact.content.lower()
        missing = [s for s in bounty.must_contain if s.lower() not in content]
        others = names_candidate(artifact.content, bounty.must_contain, bounty.candidates)
        if missing or others or (bounty.pattern and not re.search(bounty.pattern, artifact.content)):
            what = (f"it lacks {missing}" if missing else f"it also names {others}" if others
                    else f"it does not match {bounty.pattern!r}")
            return (f"{artifact.id!r} does not satisfy {bounty.id!r}: {what}",
                    f"edit the artifact so it satisfies: {bounty.description}")
        return None

    def _verify_answer(self, bounty: Bounty, args: ClaimArgs) -> tuple[str, str] | None:
        """None when the answer is right (genesis/answers.py), else (what is wrong, how to fix it)."""
        if not args.answer:
            raise ActionFailure(ErrorCode.INVALID_ARGUMENTS, f"{bounty.id!r} needs an answer",
                                f"claim with answer=...; the question: {bounty.description}")
        if answer_matches(bounty.answer or "", args.answer, question=bounty.description,
                          candidates=bounty.candidates):
            return None
        return (_wrong_answer(bounty.id),
                "find the fact first (someone's memory may hold it), then claim again with that value alone")

    def _wrong_claim(self, ctx: InvokeContext, bounty: Bounty, problem: tuple[str, str]) -> None:
        """Fail the claim, keeping its cost: the try is counted (at any balance) and `wrong_answer`
        scrip (at most what the claimant has) goes to genesis_bounty, so guessing through the
        candidates one claim at a time neither is free nor ends in a win."""
        key, fee, caller = _wrong_key(bounty, ctx.caller), self.costs.wrong_answer, ctx.caller
        wrong = int(ctx.state(key) or 0)

        def keep(tx: Transaction) -> None:  # committed with the failed claim
            tx.put_state(BOUNTY_ID, key, wrong + 1)
            tx.move(caller, BOUNTY_ID, min(fee, tx.balance(caller)), kind="charge",
                    reason=f"wrong claim for {bounty.id}")

        left = self.costs.wrong_answers - wrong - 1
        message, hint = problem
        raise ActionFailure(ErrorCode.METHOD_FAILED, f"{message} (cost {fee} scrip; {left} tries left)", hint,
                            keep=keep)


def _wrong_key(bounty: Bounty, caller: str) -> str:
    return f"wrong:{bounty.id}:{caller}"


def _wrong_answer(bounty_id: str) -> str:
    return f"wrong answer for {bounty_id!r}"


def rejected_answer(event: Event) -> tuple[str, str] | None:
    """(bounty id, answer) when ``event`` is an answer claim this board judged wrong (a claim refused
    for another reason, none left or not open, judged nothing), else None."""
    action, result = event.action, event.result
    if event.success or action.get("artifact_id") != BOUNTY_ID or action.get("method") != "claim":
        return None
    args = action.get("args") or {}
    bounty_id, answer = str(args.get("bounty_id", "")), args.get("answer")
    if not (isinstance(answer, str) and answer.strip()) or result.get("error_code") != ErrorCode.METHOD_FAILED:
        return None
    return (bounty_id, answer.strip()) if str(result.get("message", "")).startswith(_wrong_answer(bounty_id)) else None


__all__ = ["ANSWER_STEP_FORMS", "ClaimAnswered", "GenesisBounty", "answer_matches", "rejected_answer"]
