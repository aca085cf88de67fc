import pytest

from mnemarket.errors import BudgetExceeded
from mnemarket.providers import AccountedLLM, Budget, CallLog, ScriptedLLM


def echo(messages, schema):
    return "one two three"


def test_calls_are_logged_as_jsonl_with_per_principal_totals(tmp_path):
    log = CallLog(tmp_path / "calls.jsonl")
    alice = AccountedLLM(ScriptedLLM(echo), log, principal="alice", clock=lambda: 1000.0)
    bob = alice.for_principal("bob")
    alice.generate([{"role": "user", "content": "hi there"}])
    alice.generate([{"role": "user", "content": "again"}])
    bob.generate([{"role": "user", "content": "x"}])

    records = CallLog.read(tmp_path / "calls.jsonl")
    assert [r.principal for r in records] == ["alice", "alice", "bob"]
    assert records[0].model_id == "scripted:policy" and records[0].time == 1000.0
    assert records[0].prompt_tokens == 2 and records[0].completion_tokens == 3 and records[0].ok
    totals = log.totals()
    assert totals["alice"].calls == 2 and totals["alice"].prompt_tokens == 3 and totals["alice"].completion_tokens == 6
    assert totals["bob"].calls == 1
    assert CallLog.totals_of(records) == totals


def test_failures_are_logged_as_failures(tmp_path):
    from pydantic import BaseModel

    class Yes(BaseModel):
        yes: bool

    log = CallLog()
    llm = AccountedLLM(ScriptedLLM(["nope", "still nope"]), log, principal="p")
    result = llm.generate([{"role": "user", "content": "?"}], schema=Yes)
    assert not result.ok
    assert log.totals()["p"].failures == 1


def test_token_budget_stops_spending_with_a_clear_message():
    budget = Budget(max_tokens=10)
    log = CallLog()
    llm = AccountedLLM(ScriptedLLM(echo), log, principal="alice", budget=budget)
    llm.generate([{"role": "user", "content": "a b c d"}])  # 4 + 3 = 7 tokens
    llm.for_principal("bob").generate([{"role": "user", "content": "a"}])  # 1 + 3 -> 11, crosses the cap
    with pytest.raises(BudgetExceeded, match=r"11 tokens spent of max_tokens=10.*'bob'.*Raise Budget.max_tokens"):
        llm.for_principal("bob").generate([{"role": "user", "content": "a"}])
    assert log.totals()["bob"].calls == 1  # the refused call was not made, so not logged


def test_money_budget_with_a_priced_model_against_a_fake_server():
    from mnemarket.providers import ModelPrice, PriceTable
    from mnemarket.providers.openai_compat import OpenAICompatLLM

    from .fake_servers import FakeResponse, FakeServer, openai_chat_body

    prices = PriceTable(prices={"m": ModelPrice(input_per_million=1.0, output_per_million=1.0)})
    budget = Budget(max_cost=0.0015)
    log = CallLog()
    with FakeServer(lambda r: FakeResponse(body=openai_chat_body("ok", 500, 500))) as server:
        llm = AccountedLLM(OpenAICompatLLM(f"{server.url}/v1", "m", prices=prices), log, principal="agent-7", budget=budget)
        llm.generate([{"role": "user", "content": "a"}])  # $0.001
        llm.generate([{"role": "user", "content": "b"}])  # $0.002, crosses the cap
        with pytest.raises(BudgetExceeded, match=r"\$0.002000 spent of max_cost=\$0.001500.*'agent-7'"):
            llm.generate([{"role": "user", "content": "c"}])
    assert len(server.requests) == 2
    assert log.totals()["agent-7"].cost == pytest.approx(0.002)


def test_embedding_calls_are_logged_and_refused_over_budget(tmp_path):
    from mnemarket.providers import AccountedEmbedder, HashingEmbedder

    log = CallLog(tmp_path / "calls.jsonl")
    budget = Budget(max_tokens=0)
    embedder = AccountedEmbedder(HashingEmbedder(16), log, principal="memory")
    assert embedder.vectors(["a", "b", "c"]).shape == (3, 16)
    (record,) = CallLog.read(tmp_path / "calls.jsonl")
    assert record.kind == "embed" and record.items == 3 and record.principal == "memory" and record.model_id == "hashing-16"
    with pytest.raises(BudgetExceeded):
        AccountedEmbedder(HashingEmbedder(16), log, budget=budget).vectors(["a"])


def test_a_money_cap_over_an_unpriced_remote_model_is_refused(tmp_path):
    from mnemarket.errors import ConfigError
    from mnemarket.providers import ModelPrice, PriceTable, Recording, RecordingLLM
    from mnemarket.providers.openai_compat import OpenAICompatLLM

    remote = OpenAICompatLLM("https://llm.example.com/v1", "big-model")  # no request is sent here
    assert remote.billing == "unpriced"
    with pytest.raises(ConfigError, match="without a price table.*max_cost=\\$0.5.*--token-cap"):
        AccountedLLM(remote, CallLog(), budget=Budget(max_cost=0.5))
    with pytest.raises(ConfigError, match="agent cap"):  # a cap further out counts too
        AccountedLLM(RecordingLLM(remote, Recording(tmp_path / "rec.jsonl")), CallLog(),
                     budget=Budget(max_tokens=10, within=Budget(max_cost=1.0, label="agent cap")))
    AccountedLLM(remote, CallLog(), budget=Budget(max_tokens=1000))  # tokens can still be capped
    priced = OpenAICompatLLM("https://llm.example.com/v1", "big-model",
                             prices=PriceTable(prices={"big-model": ModelPrice(input_per_million=1.0)}))
    local = OpenAICompatLLM("http://127.0.0.1:8000/v1", "gemma")
    assert (priced.billing, local.billing) == ("priced", "free")
    for model in (priced, local, ScriptedLLM(lambda messages: "ok")):
        AccountedLLM(model, CallLog(), budget=Budget(max_cost=0.5))


def test_a_charge_never_gives_budget_back():
    budget = Budget(max_tokens=10, max_cost=1.0)
    budget.charge(0.5, 8)
    budget.charge(-5.0, -1000)  # what a wrapper passing a doctored result on would charge
    budget.charge(float("nan"), 0)
    assert budget.spent_tokens == 8 and budget.spent_cost == 0.5
    budget.charge(0.0, 2)
    with pytest.raises(BudgetExceeded):
        budget.check("p")
