"""Model profiles: YAML options per model string become constructor options; what a provider does not
take is refused by name; the profile's price, concurrency, structured mode and deadline are applied."""

from __future__ import annotations

import datetime as dt
import time

import pytest

from mnemarket.errors import ConfigError
from mnemarket.providers import make_llm
from mnemarket.providers.profiles import ModelProfile, parse_profiles, profile_options
from mnemarket.providers.rate_limit import RateLimiter
from tests.unit.providers.fake_servers import FakeRequest, FakeResponse, FakeServer, openai_api, openai_chat_body

PRICE = {"input_per_million": 2.0, "output_per_million": 4.0, "checked": "2026-11-26", "source": "https://x.test"}


def test_gemini_profile_gives_a_dated_price_thinking_and_key_variable(monkeypatch):
    monkeypatch.setenv("MY_KEY", "k-123")
    profile = ModelProfile.model_validate({"price": PRICE, "thinking": "low", "api_key_env": "MY_KEY",
                                           "requests_per_minute": 30})
    options = profile_options("gemini:gemini-3.7-flash", profile)
    assert options["api_key"] == "k-123" and options["thinking_level"] == "low"
    price = options["prices"].price("gemini-3.7-flash")
    assert price.input_per_million == 2.0 and price.checked == dt.date(2026, 11, 26) and price.source
    llm = make_llm("gemini:gemini-3.7-flash", profile=profile)  # unpriced by default: the profile prices it
    assert llm.billing == "priced" and llm.applied()["profile"] == "gemini:gemini-3.7-flash"
    assert ModelProfile.model_validate({"thinking": 512}) and profile_options(
        "gemini:gemini-2.5-flash-lite", ModelProfile(thinking=512))["thinking_budget"] == 512


@pytest.mark.parametrize(("spec", "body", "named"), [
    ("gemini:gemini-3.6-flash", {"extra_body": {"a": 1}}, "extra_body"),
    ("gemini:gemini-3.6-flash", {"structured_mode": "prompt"}, "structured_mode"),
    ("openai:http://127.0.0.1:1/v1:m", {"base_url": "http://elsewhere/v1"}, "base_url"),
    ("local", {"max_concurrency": 2}, "max_concurrency"),
    ("scripted", {"price": PRICE}, "price"),
])
def test_an_option_the_provider_does_not_take_is_named(spec, body, named):
    with pytest.raises(ConfigError, match=named):
        profile_options(spec, ModelProfile.model_validate(body))


def test_a_missing_key_variable_is_named_and_bad_fields_are_errors():
    with pytest.raises(ConfigError, match="NOT_SET_ANYWHERE"):
        profile_options("gemini:gemini-3.6-flash", ModelProfile(api_key_env="NOT_SET_ANYWHERE"))
    assert profile_options("gemini:gemini-3.6-flash", ModelProfile(api_key_env="NOT_SET_ANYWHERE"),
                           check_env=False) == {}
    with pytest.raises(ConfigError, match="max_concurency"):
        parse_profiles({"local": {"max_concurency": 2}}, "models.yaml")
    with pytest.raises(ConfigError, match="checked"):
        parse_profiles({"gemini:gemini-3.6-flash": {"price": {"input_per_million": 1, "source": "x"}}}, "f")


def test_openai_profile_sets_mode_concurrency_body_and_token_field():
    seen: list[dict] = []

    def reply(request: FakeRequest) -> FakeResponse:
        seen.append(request.body)
        return FakeResponse(body=openai_chat_body('{"a": 1}'))

    profile = ModelProfile.model_validate({"structured_mode": "json_object", "max_concurrency": 3,
                                           "extra_body": {"chat_template_kwargs": {"enable_thinking": False}},
                                           "token_field": "max_completion_tokens", "thinking": "low",
                                           "price": PRICE})
    with FakeServer(openai_api(reply)) as server:
        llm = make_llm(f"openai:{server.url}/v1:m", profile=profile)
        result = llm.generate([{"role": "user", "content": "hi"}], max_tokens=9)
    assert result.ok and result.cost == pytest.approx((9 * 2.0 + 4 * 4.0) / 1e6)
    assert seen[0]["chat_template_kwargs"] == {"enable_thinking": False} and seen[0]["reasoning_effort"] == "low"
    assert seen[0]["max_completion_tokens"] == 9 and "max_tokens" not in seen[0]
    assert llm.structured_mode == "json_object" and llm._slots._initial_value == 3


def test_no_repair_round_starts_after_the_deadline():
    from pydantic import BaseModel

    from mnemarket.providers import ScriptedLLM

    class Reply(BaseModel):
        a: int

    calls = []

    def slow(messages, schema):
        calls.append(1)
        time.sleep(0.2)  # at least this long: the deadline below has passed when it returns
        return "not json"

    llm = ScriptedLLM(slow)
    llm.deadline_s = 0.1
    result = llm.generate([{"role": "user", "content": "hi"}], schema=Reply)
    assert not result.ok and "deadline of 0.1s" in result.error and len(calls) == 1
    profile = ModelProfile(deadline_s=5, timeout_s=60)
    assert profile_options("openai:http://127.0.0.1:1/v1:m", profile)["timeout_s"] == 5  # no request outlasts it


class FakeClock:
    """Monotonic seconds that move only when the limiter sleeps (no real waiting)."""

    def __init__(self, now: float = 1000.0):
        self.now = now
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def test_requests_per_minute_spaces_requests():
    clock = FakeClock()
    limiter = RateLimiter(600, clock=clock, sleep=clock.sleep)  # one every 0.1 s
    assert limiter.wait() == 0.0  # the first goes at once
    assert [limiter.wait() for _ in range(2)] == [pytest.approx(0.1), pytest.approx(0.1)]
    assert clock.now == pytest.approx(1000.2)  # the third request went two intervals after the first
    clock.now += 5.0  # idle longer than an interval: the next one goes at once, no credit saved up
    assert limiter.wait() == 0.0 and limiter.wait() == pytest.approx(0.1)
    assert RateLimiter(None, clock=clock, sleep=clock.sleep).wait() == 0.0


def test_threads_sharing_a_limiter_take_successive_slots():
    clock = FakeClock()
    waits: list[float] = []
    limiter = RateLimiter(60, clock=clock, sleep=waits.append)  # the clock stands still: slots queue up
    assert [limiter.wait() for _ in range(4)] == [0.0, 1.0, 2.0, 3.0] and waits == [1.0, 2.0, 3.0]


def test_new_thinking_levels_and_families_are_not_sent_minimal():
    from mnemarket.providers.gemini_llm import _thinking, sampling_of, takes_minimal_thinking

    assert not takes_minimal_thinking("gemini-4-flash") and takes_minimal_thinking("gemini-3.5-flash-lite")
    assert _thinking("gemini-4-flash", None, None) == (None, "low")  # an unknown family starts at low
    assert _thinking("gemini-3.6-flash", None, "xhigh") == (None, "xhigh")
    assert sampling_of("gemini-3.5-flash") == "fixed"  # forwarded to 3.6 Flash, which fixes it
    assert sampling_of("gemini-3.1-flash-lite") == "honoured"
