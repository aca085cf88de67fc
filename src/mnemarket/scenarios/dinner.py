"""The dinner host: a shared table where guests speak (`say`) and hear each other (`listen`).

Lines live in the world's state (namespace `dinner_host`), so a resumed run hears exactly what
an uninterrupted one heard. `listen` returns the lines said by others since the caller last
listened, and puts them in its result message ("mara said: ... / elin said: ..."), so a guest
whose memory captures successes (`memory.episodic_capture: [success]` or `[all]`) keeps what was
said in its episodic store, where `genesis_memory.query_memory` can find it later.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from mnemarket.kernel import ActionFailure, ErrorCode, Invokable, InvokeContext, MethodOutcome, MethodSpec, NoArgs

HOST_ID = "dinner_host"
MAX_LINE_CHARS = 300


class SayArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    text: str = Field(min_length=1, max_length=MAX_LINE_CHARS)


class TranscriptArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    limit: int = Field(20, ge=1, le=200)


def heard_text(lines: list[dict[str, Any]]) -> str:
    """How heard lines read in a result message (and so in an episodic memory)."""
    return " / ".join(f"{line['speaker']} said: {line['text']}" for line in lines)


class DinnerHost(Invokable):
    """Scenario service of `config/dinner.yaml`.

    Args:
        guests: who may speak and listen (agent ids); anyone when empty.
        max_heard: the most lines one `listen` returns (the newest ones).
    """

    def __init__(self, guests: list[str] | None = None, max_heard: int = 8):
        super().__init__(HOST_ID, "The dinner table: say something to everyone, or listen to what others said.")
        if max_heard < 1:
            raise ValueError(f"max_heard must be >= 1, got {max_heard!r}")
        self.guests = list(guests or [])
        self.max_heard = max_heard
        self.add(MethodSpec("say", SayArgs, self._say, "say a line to everyone at the table"))
        self.add(MethodSpec("listen", NoArgs, self._listen, "hear what others said since you last listened"))
        self.add(MethodSpec("transcript", TranscriptArgs, self._transcript, "the newest lines said at the table"))

    def _check_guest(self, ctx: InvokeContext) -> None:
        if self.guests and ctx.caller not in self.guests:
            raise ActionFailure(ErrorCode.PERMISSION_DENIED, f"{ctx.caller!r} is not at this table",
                                f"guests: {', '.join(self.guests)}")

    @staticmethod
    def lines(state: dict[str, Any]) -> list[dict[str, Any]]:
        """Every line said, in order, from a state mapping of this namespace."""
        return [v for k, v in sorted(state.items()) if k.startswith("line:")]

    def _say(self, ctx: InvokeContext, args: SayArgs) -> MethodOutcome:
        self._check_guest(ctx)
        number = (ctx.state("count") or 0) + 1
        text = " ".join(args.text.split())
        ctx.put_state(f"line:{number:06d}", {"n": number, "speaker": ctx.caller, "text": text, "tick": ctx.tick})
        ctx.put_state("count", number)
        return MethodOutcome(f"you said: {text}", {"line": number})

    def _listen(self, ctx: InvokeContext, args: NoArgs) -> MethodOutcome:
        self._check_guest(ctx)
        since = ctx.state(f"heard:{ctx.caller}") or 0
        new = [line for line in self.lines(ctx.state_items()) if line["n"] > since and line["speaker"] != ctx.caller]
        ctx.put_state(f"heard:{ctx.caller}", ctx.state("count") or 0)
        new = new[-self.max_heard:]
        if not new:
            return MethodOutcome("nobody else has spoken since you last listened", [])
        return MethodOutcome(f"you hear: {heard_text(new)}",
                             [{"speaker": line["speaker"], "text": line["text"]} for line in new])

    def _transcript(self, ctx: InvokeContext, args: TranscriptArgs) -> MethodOutcome:
        lines = self.lines(ctx.state_items())[-args.limit:]
        return MethodOutcome(f"{len(lines)} lines", [{"speaker": x["speaker"], "text": x["text"]} for x in lines])


__all__ = ["DinnerHost", "heard_text"]
