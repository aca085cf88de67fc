"""The `mnemarket` command line: run, resume, inspect, memory, replay, validate, demo, compare, eval, serve."""

from __future__ import annotations

import contextlib
import faulthandler
import functools
import json
import os
import shutil
import signal
import sys
from collections import deque
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table
from rich.text import Text

from mnemarket.errors import MnemarketError, ProviderError, StoreError, UserError
from mnemarket.yaml_config import allow_dirs

if TYPE_CHECKING:
    from mnemarket.reports import EventLogCheck

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False, rich_markup_mode=None,
                  help="Agent world simulations in an artifact economy where memory is tradable.")
memory_app = typer.Typer(no_args_is_help=True, rich_markup_mode=None, help="Look into a run's memory stores.")
app.add_typer(memory_app, name="memory")
models_app = typer.Typer(no_args_is_help=True, help="Check a model before spending on it.")
app.add_typer(models_app, name="models")
console = Console()

DEMO_SCENARIO = Path("config/demo.yaml")


def demo_scenario(start: Path | None = None) -> Path | None:
    """config/demo.yaml of the repository: looked for at and above `start` (the working directory),
    then beside the installed source tree (an editable install, as `make` makes)."""
    start = (start or Path.cwd()).resolve()
    source_root = Path(__file__).resolve().parents[3]
    for folder in (start, *start.parents, source_root):
        if (folder / DEMO_SCENARIO).is_file():
            return folder / DEMO_SCENARIO
    return None


EXIT_CODES: tuple[tuple[type[MnemarketError], int], ...] = (
    (UserError, 2),      # the command, a file or a value is wrong: the message says how to fix it
    (ProviderError, 3),  # a model back end failed (unreachable, missing key or package)
    (StoreError, 4),     # the database could not be read or written
    (MnemarketError, 1),
)
"""Exit code of each error family; `validate` exits 1 when it found problems."""


def _fail(message: str, code: int = 2) -> NoReturn:
    """One plain line on stderr (no wrapping, so scripts can grep it) and the exit code."""
    typer.echo(f"error: {' '.join(message.split())}", err=True)
    raise typer.Exit(code=code)


def _errors_to_exit_codes(command: Callable[..., None]) -> Callable[..., None]:
    """The one place where an error becomes a line on stderr and an exit code (EXIT_CODES)."""
    @functools.wraps(command)
    def wrapped(*args: Any, **kwargs: Any) -> None:
        try:
            command(*args, **kwargs)
        except MnemarketError as exc:
            _fail(str(exc), next(code for family, code in EXIT_CODES if isinstance(exc, family)))
        except OSError as exc:  # a file the store layer does not own (a log, a report) cannot be used
            _fail(f"{exc.filename or 'a file'}: {exc.strerror or exc}; check the path, its permissions and free space", 4)
        except Exception as exc:
            database_errors = sys.modules.get("sqlalchemy.exc")  # not imported for commands that need no database
            if database_errors is None or not isinstance(exc, database_errors.SQLAlchemyError):
                raise
            # A database read no store method translated: still one line.
            detail = str(exc).split("[SQL:")[0]
            _fail(f"the database could not be read or written ({type(exc).__name__}: {detail[:200]}); restore it "
                  "from a backup or start a new run", 4)
    return wrapped


def _command(*args: Any, **kwargs: Any) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """`app.command` with errors mapped to exit codes."""
    def register(command: Callable[..., None]) -> Callable[..., None]:
        return app.command(*args, **kwargs)(_errors_to_exit_codes(command))
    return register


def _stop_if_provider_failed(status) -> None:
    """A run the model provider stopped is an error for scripts: one line and a non-zero exit."""
    if status.state == "stopped_provider":
        _fail(status.message)


def _on_interrupt(run_dir: Path, progress: Progress) -> Callable[..., None]:
    """The Ctrl-C handler of a run: one line with the resume command, the status "interrupted" in
    summary.json, and an immediate exit (130). It does not wait for a model call in flight (the
    local model's decode would hold the exit for a minute): every action commits atomically with
    its event, so stopping here loses at most the turn in progress, which `resume` plays again,
    exactly as after kill -9 (plans/reliability.md)."""
    def handler(signum: int, frame: Any) -> None:
        from mnemarket.run import mark_interrupted

        progress.stop()
        line = f"interrupted; continue with: mnemarket resume {run_dir}"
        with contextlib.suppress(OSError):  # the line below still says how to continue
            mark_interrupted(run_dir, line)
        _exit_interrupted(line)
    return handler


def _exit_interrupted(line: str) -> NoReturn:
    """The end of a Ctrl-C: the cursor back, ``line`` (what continues) on stderr, exit 130 at once."""
    console.show_cursor(True)
    sys.stdout.flush()
    sys.stderr.write(line + "\n")
    sys.stderr.flush()
    os._exit(130)


def _on_compare_interrupt(experiment_file: Path, experiment, watcher) -> Callable[..., None]:
    """The Ctrl-C handler of `compare`: stop the cells' workers, mark the started cells
    interrupted, print the command that continues, exit 130 (`experiments.interrupt`). On Ray the
    executor takes the first Ctrl-C itself and `compare` calls this once it has stopped."""
    def handler(signum: int, frame: Any, note: str = "") -> None:
        from mnemarket.experiments import interrupt_cells, resume_line

        watcher.stop_showing()
        if note:
            sys.stderr.write(note + "\n")
        line = resume_line(experiment_file, experiment.out_dir)
        interrupt_cells([experiment.cell_dir(cell) for cell in experiment.cells()], line)
        _exit_interrupted(line)
    return handler


def _run_with_progress(runner, title: str):
    total = runner.config.sessions * runner.config.turns
    with Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  TextColumn("eta"), TimeRemainingColumn(), console=console, transient=False) as progress:
        title = escape(title)  # a file or directory name; the column reads it as markup
        task = progress.add_task(title, total=total)

        def report(kind: str, session: int, turn: int) -> None:
            if kind == "turn":
                progress.update(task, completed=(session - 1) * runner.config.turns + turn,
                                description=f"{title}: session {session} turn {turn}")
        previous = signal.signal(signal.SIGINT, _on_interrupt(runner.run_dir, progress))
        try:
            runner.setup()
            for warning in runner.warnings:
                console.print(f"[yellow]warning: {escape(warning)}[/yellow]")
            last = runner.world.state.get(("run", "last_turn"))
            if last:
                progress.update(task, completed=(last["session"] - 1) * runner.config.turns + last["turn"])
            return runner.run(report)
        finally:
            signal.signal(signal.SIGINT, previous)


SUMMARY_COLUMNS = {"balance": "balance", "turns": "turns", "invalid": "invalid_actions", "failed": "failed_actions",
                   "lessons": "lessons_written", "migrated": "lessons_migrated", "memory calls": "memory_invokes",
                   "bounties": "bounties_paid", "loops": "loop_breaker_triggers", "tokens/turn": "mean_context_tokens",
                   "refused at end": "lessons_rejected_at_session_end", "refused by step": "lessons_rejected_by_lesson_step"}
"""Each agent's figures a run's summary shows: column title -> summary.json key (a list shows its count;
a key an older summary.json lacks shows blank)."""


def _summary_cell(value: Any) -> str:
    return str(len(value)) if isinstance(value, list) else str(value)


def _print_summary(run_dir: Path, summary: dict | None = None) -> None:
    if summary is None:
        from mnemarket.run import read_summary

        summary = dict(read_summary(run_dir))
    title = f"{run_dir}: {summary.get('status', '?')}"
    table = Table(title=Text(title))
    table.add_column("agent")
    for column in SUMMARY_COLUMNS:
        table.add_column(column, justify="right")
    rows = [(agent, [_summary_cell(figures.get(key, "")) for key in SUMMARY_COLUMNS.values()])
            for agent, figures in summary["agents"].items()]
    for agent, values in rows:
        table.add_row(agent, *values)
    if console.measure(table, options=console.options.update_width(10_000)).maximum <= console.width:
        console.print(table)
    else:  # narrower than the table (an 80-column terminal, a log): rich would cut every title and figure
        console.print(title, markup=False, highlight=False)
        for agent, values in rows:
            console.print(f"{agent}: " + ", ".join(f"{column} {value}" for column, value in zip(SUMMARY_COLUMNS, values)),
                          markup=False, highlight=False)
    if any(figures.get("lessons_rejected_at_session_end") or figures.get("lessons_rejected_by_lesson_step")
           for figures in summary["agents"].values()):
        console.print(f"refused lessons, each with its reason: mnemarket inspect {run_dir} --agent ID",
                      markup=False, highlight=False)
    trades = ", ".join(f"{t['kind']} {t['artifact_id']} {t['seller']}->{t['buyer']} @{t['price']}"
                       for t in summary["trades"]) or "none"
    console.print(f"trades: {trades}", markup=False, highlight=False)
    console.print(f"scrip: total {summary['total_scrip']} = initial {summary['initial_total_scrip']} + minted "
                  f"{summary['minted']} - burned {summary['burned']} ({'conserved' if summary['supply_ok'] else 'BROKEN'})")
    for over in summary.get("budget_overruns") or []:
        dropped = f"; dropped {', '.join(over['dropped_sections'])}" if over["dropped_sections"] else ""
        console.print(f"over budget: {over['agent']} step {over['step']}: {over['over_budget']} of {over['turns']} "
                      f"turns, up to {over['max_tokens']} of {over['budget']} tokens{dropped}",
                      markup=False, highlight=False, style="yellow")
    console.print(f"report: {run_dir / 'report.html'}", markup=False, highlight=False)
    if summary.get("message"):
        console.print(f"[yellow]{escape(summary['message'])}[/yellow]")


def _allow_dir_option() -> Any:
    return typer.Option(None, "--allow-dir", help="a folder prompt and `extends:` files may also come from "
                                                  "(besides the naming file's folder and repository checkout); "
                                                  "repeatable")


@app.callback()
def _root() -> None:
    """mnemarket: run, resume, inspect and compare agent economies."""


@_command()
def run(scenario: Path = typer.Argument(..., help="scenario YAML, e.g. config/demo.yaml"),
        model: str = typer.Option(None, help="provider for every agent: local, gemini:MODEL, scripted, replay:PATH, "
                                             "openai:http://HOST:PORT/v1:MODEL"),
        sessions: int = typer.Option(None, min=1), turns: int = typer.Option(None, min=1, help="turns per session"),
        out: Path = typer.Option(None, help="run directory (default: a new runs/<scenario>-<model>-<UTC time>)"),
        force: bool = typer.Option(False, "--force", help="replace --out when it holds a run mnemarket made"),
        db: str = typer.Option(None, help="database URL instead of RUN_DIR/world.db (postgresql://...)"),
        seed: int = typer.Option(None), record: bool = typer.Option(False, help="record model calls for replay"),
        spend_cap: float = typer.Option(None, help="stop cleanly when model spend reaches this many USD"),
        token_cap: int = typer.Option(None, help="stop cleanly after this many model tokens"),
        models_file: Path = typer.Option(None, help="models.yaml: model strings -> profiles (price, concurrency, "
                                                    "structured mode, ...); embedders: for the embedder's"),
        allow_dir: list[Path] = _allow_dir_option()) -> None:
    """Run a scenario."""
    from mnemarket.experiments import create_runner
    from mnemarket.providers import check_llm_spec
    from mnemarket.run import RunOptions, load_embedders_file, load_models_file, new_run_dir, prepare_run_dir

    if not scenario.exists():
        _fail(f"scenario {str(scenario)!r} not found; try config/demo.yaml")
    if model is not None:
        check_llm_spec(model)
    profiles = load_models_file(models_file) if models_file is not None else {}
    embedders = load_embedders_file(models_file) if models_file is not None else {}
    out = prepare_run_dir(out, force=force) if out is not None else new_run_dir(Path("runs"), scenario.stem, model)
    try:
        with allow_dirs(allow_dir or ()):
            runner = create_runner(scenario, out, RunOptions(model=model, sessions=sessions, turns=turns, db=db,
                                                             seed=seed, record=record, spend_cap_usd=spend_cap,
                                                             token_cap=token_cap, profiles=profiles,
                                                             embedder_profiles=embedders))
        try:
            status = _run_with_progress(runner, f"{scenario.stem} -> {out}")
        finally:
            runner.close()
    except MnemarketError:
        _discard_unstarted(out)
        raise
    _stop_if_provider_failed(status)
    _print_summary(out)


def _discard_unstarted(out: Path) -> None:
    """A run that failed before its first turn leaves nothing behind: fixing the file and running
    the same command again then starts afresh instead of being told to resume the stale config."""
    from mnemarket.run import CONTEXTS, writer_active

    # Not while another process writes there (two `run --out` of one new directory at once).
    if out.is_dir() and not (out / CONTEXTS).exists() and not writer_active(out):
        shutil.rmtree(out, ignore_errors=True)
        typer.echo(f"note: the run failed before its first turn; {out} was removed (fix the cause and run the same "
                   "command again)", err=True)


@_command()
def resume(run_dir: Path, spend_cap: float = typer.Option(None, help="raise the spend cap before resuming"),
           token_cap: int = typer.Option(None, help="raise the token cap before resuming")) -> None:
    """Continue a run that was stopped (killed, or by its budget)."""
    from mnemarket.experiments import open_runner

    runner = open_runner(run_dir, spend_cap_usd=spend_cap, token_cap=token_cap)
    try:
        status = _run_with_progress(runner, f"resume {run_dir.name}")
    finally:
        runner.close()
    _stop_if_provider_failed(status)
    _print_summary(run_dir)


def _view(run_dir: Path):
    """The run opened read-only (inspection never writes, locks or loads a model)."""
    from mnemarket.reports import RunView

    return RunView(run_dir)


@_command()
def inspect(run_dir: Path, agent: str = typer.Option(None, help="one agent's figures and recent actions"),
            at: str = typer.Option(None, "--at", help="SESSION:TURN: the world as it was after that turn"),
            as_json: bool = typer.Option(False, "--json", help="print the summary as JSON")) -> None:
    """Show what a run holds (read-only), now or after a turn (--at)."""
    from mnemarket.run import header_line, run_header, saved_summary

    if at is not None:
        from mnemarket.reports import parse_turn, world_at_turn

        document: Mapping[str, Any] = world_at_turn(run_dir, parse_turn(at))
        if agent is not None:
            document = _agent_part(document, agent)
        if as_json:
            sys.stdout.write(json.dumps(document, indent=2, default=str) + "\n")
        else:
            _print_mapping(document)
        return
    with _view(run_dir) as view:
        summary = view.summary()
        header = run_header(run_dir, view.config, view.world)
        if agent is not None and agent not in summary["agents"]:
            _fail(f"no agent {agent!r} in this run; agents: {', '.join(summary['agents'])}")
        event_log = view.event_log()
        if as_json:
            models = saved_summary(run_dir).get("models", {})  # the runner's record of what each model applied
            data = (summary | {"models": models, "run": header, "event_log": event_log.as_dict()} if agent is None
                    else {"agent": agent, **summary["agents"][agent]})
            sys.stdout.write(json.dumps(data, indent=2) + "\n")
            return
        console.print(header_line(header), markup=False, highlight=False)
        _print_event_log(event_log)
        if agent is None:
            # The runner's summary.json also says how the run ended; figures are recomputed.
            _print_summary(run_dir, {**saved_summary(run_dir), **summary, "status": header["status"]})
            return
        console.print(f"agent {agent} (model {header['models'].get(agent, '?')})", markup=False, highlight=False)
        _print_mapping(summary["agents"][agent])
        console.rule("last 15 actions")
        for event in deque(view.world.iter_events(principal=agent), maxlen=15):  # its last 15, read a page at a time
            status = "[green]OK[/green]" if event.success else "[red]FAILED[/red]"
            console.print(f"t{event.tick} {escape(event.action_type)} {escape(str(event.action.get('method') or ''))} "
                          f"{status} {escape(str(event.result.get('message', '')))}")


def _print_event_log(event_log: EventLogCheck) -> None:
    """What the walk of the event log found: red when damaged, yellow when unchecked."""
    for state, line in event_log.entries():
        console.print(line, style={"damaged": "red", "unchecked": "yellow"}.get(state), markup=False, highlight=False)


@models_app.command("check")
@_errors_to_exit_codes
def models_check(model: str = typer.Argument(..., help="a model string, e.g. gemini:gemini-3.6-flash or "
                                                       "openai:http://127.0.0.1:8080/v1:local"),
                 profile: Path = typer.Option(None, help="models.yaml holding this model's profile"),
                 as_json: bool = typer.Option(False, "--json", help="print what the call showed as JSON")) -> None:
    """One real call with the agents' reply schema: structured mode, model version, price, latency."""
    from mnemarket.experiments import check_model
    from mnemarket.providers import check_llm_spec
    from mnemarket.run import load_models_file

    check_llm_spec(model)
    result = check_model(model, load_models_file(profile).get(model) if profile is not None else None)
    if as_json:
        sys.stdout.write(json.dumps({"model": model, "ok": result.ok, **result.details}, indent=2) + "\n")
    if not result.ok:
        _fail(result.line, 3)
    if not as_json:
        typer.echo(result.line)


def _agent_part(document: Mapping[str, Any], agent: str) -> dict[str, Any]:
    """One agent's share of a world-at-turn document."""
    if agent not in document.get("agents", {}):
        _fail(f"no agent {agent!r} in this run; agents: {', '.join(document.get('agents', {}))}")
    return {"at": document["at"], "agent": agent, **document["agents"][agent]}


def _print_mapping(data: Mapping[str, Any], indent: str = "") -> None:
    """A nested mapping as indented `key: value` lines (not a Python dict on one line)."""
    for key, value in data.items():
        if isinstance(value, dict) and value:
            console.print(f"{indent}{key}:", markup=False, highlight=False)
            _print_mapping(value, indent + "  ")
        elif isinstance(value, list) and value and isinstance(value[0], dict):
            console.print(f"{indent}{key}: ({len(value)})", markup=False, highlight=False)
            for item in value:
                console.print(f"{indent}  - " + ", ".join(f"{k} {v}" for k, v in item.items()), markup=False,
                              highlight=False)
        else:
            shown = (", ".join(map(str, value)) or "none") if isinstance(value, list) else value
            console.print(f"{indent}{key}: {shown}", markup=False, highlight=False)


@_command()
def report(run_dir: Path) -> None:
    """Rebuild RUN_DIR/report.html and its trace pages, also for a running or interrupted run."""
    from mnemarket.reports import MemoryReader, write_report
    from mnemarket.run import RunSummary, run_status, saved_summary

    with _view(run_dir) as view:
        summary: RunSummary = {**saved_summary(run_dir), **view.summary(),
                               "scenario": view.config.resolved.scenario.name, "status": run_status(run_dir)}
        event_log = view.event_log()
        path = write_report(run_dir, view.world, MemoryReader(view.store, view.config.resolved.genesis.bounties),
                            summary, event_log=event_log)
    console.print(f"report: {path} (status {summary['status']})", markup=False, highlight=False)
    _print_event_log(event_log)


@_command()
def interview(run_dir: Path, question: str = typer.Argument(None, help="the question, in quotes"),
              agent: str = typer.Option(None, "--agent", help="the agent to ask (default with --questions: every agent)"),
              at: str = typer.Option(None, "--at", help="SESSION:TURN: the agent's memory as it was after that turn"),
              model: str = typer.Option(None, help="model that answers (default: the agent's model in the run; "
                                                    "scripted answers with the top retrieved memory)"),
              questions: Path = typer.Option(None, "--questions", help="a file of questions, one a line: asks every "
                                                                       "agent each and writes a CSV"),
              out: Path = typer.Option(None, help="the questionnaire's CSV (default RUN/interviews-<UTC time>.csv)")) -> None:
    """Ask an agent a question with its persona and memory as they were at a point of the run (read-only)."""
    import time

    from mnemarket.providers import check_llm_spec
    from mnemarket.reports import Interviewer, parse_turn, questionnaire, read_questions

    if (question is None) == (questions is None):
        _fail('give one question in quotes, or --questions FILE (not both)')
    if questions is None and agent is None:
        _fail("give --agent ID: the agent to ask")
    if model is not None:
        check_llm_spec(model)
    point = parse_turn(at) if at is not None else None
    with Interviewer(run_dir, point, model) as interviewer:
        if questions is not None:
            asked = read_questions(questions)
            if agent is not None:
                interviewer.agents = {agent: interviewer.agents[agent]} if agent in interviewer.agents else {}
                if not interviewer.agents:
                    _fail(f"no agent {agent!r} in this run")
            path = out or run_dir / f"interviews-{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}.csv"
            rows = questionnaire(interviewer, asked, path)
            console.print(f"{rows} answers ({len(interviewer.agents)} agents x {len(asked)} questions): {path}",
                          markup=False, highlight=False)
            return
        done = interviewer.ask(agent, question)
    console.print(f"{done.agent} at {done.at} ({done.model}): {done.answer}", markup=False, highlight=False)
    if done.error:
        console.print(f"model problem: {done.error}", markup=False, highlight=False, style="yellow")
    for memory in done.memories:
        console.print(f"  memory {memory['id']} score {memory['score']}: {memory['text']}", markup=False,
                      highlight=False)
    console.print(f"recorded in {run_dir / 'interviews.jsonl'}", markup=False, highlight=False)


@memory_app.command("search")
@_errors_to_exit_codes
def memory_search(run_dir: Path, query: str, store: str = typer.Option(..., "--store", help="memory store id"),
                  k: int = typer.Option(5, "-k", min=1, max=50)) -> None:
    """Search one memory store of a run (read-only: does not touch recency)."""
    from mnemarket.run import memory_stores

    with _view(run_dir) as view:
        stores = [a.id for a in memory_stores(view.world)]
        if store not in stores:
            _fail(f"no memory store {store!r}; stores: {', '.join(stores)}")
        hits = view.store(store, for_search=True).search(query, k=k, touch=False)
        table = Table(title=f"{store}: {query!r}")
        for column in ("id", "kind", "score", "text"):
            table.add_column(column)
        for hit in hits:
            table.add_row(Text(hit.id), Text(hit.kind), f"{hit.score:.3f}", Text(hit.text))
        console.print(table)


@memory_app.command("show")
@_errors_to_exit_codes
def memory_show(run_dir: Path, agent: str = typer.Option(..., "--agent")) -> None:
    """Show an agent's working memory, long-term and episodic entries (read-only)."""
    with _view(run_dir) as view:
        agents = view.config.resolved.agents
        found = next((a for a in agents if a.id == agent), None)
        if found is None:
            _fail(f"no agent {agent!r}; agents: {', '.join(a.id for a in agents)}")
        wm = view.world.get(found.working_memory_id)
        console.rule(f"{agent}: working memory")
        console.print(wm.content if wm else "(none)", markup=False, highlight=False)
        from mnemarket.run import memory_stores

        own = (found.store_id, found.episodic_store_id)
        others = [("owned (bought or made)", a.id) for a in memory_stores(view.world) if a.owner == agent
                  and a.id not in own]
        for title, store_id in (("long-term", found.store_id), ("episodic", found.episodic_store_id), *others):
            records = view.store(store_id).records()
            console.rule(f"{agent}: {title} {store_id} ({len(records)} entries)")
            for record in records:
                archived = " archived" if record.archived else ""
                console.print(Text.assemble((f"{record.id} {record.kind} imp={record.importance:.2f} "
                                             f"t={record.created:g}{archived}", "dim"), " ", record.text))


@_command()
def replay(run_dir: Path, out: Path = typer.Option(None, help="where to re-execute (default RUN_DIR-replay)")) -> None:
    """Re-execute a recorded run from its recordings and report whether it matched."""
    from mnemarket.experiments import replay_run

    result = replay_run(run_dir, out)
    if result.note:
        console.print(f"note: {result.note}", style="yellow", markup=False, highlight=False)
    if result.matched:
        console.print(f"[green]replay matched[/green]: {result.events} events, balances and artifacts identical "
                      f"({result.out_dir})")
    else:
        console.print(f"[red]replay diverged[/red]: {escape(result.detail)}")
        raise typer.Exit(code=1)


@_command()
def validate(path: Path, allow_dir: list[Path] = _allow_dir_option()) -> None:
    """Check agent, scenario or genesis YAML files (a file or a directory) without running anything."""
    from mnemarket.experiments import validate_path

    if not path.exists():
        _fail(f"{str(path)!r} does not exist")
    warnings: list[str] = []
    notes: list[str] = []
    with allow_dirs(allow_dir or ()):
        problems, checked = validate_path(path, warnings, notes)
    for problem in problems:
        typer.echo(f"invalid: {problem}", err=True)
    for warning in warnings:
        typer.echo(f"warning: {warning}", err=True)
    for note in notes:
        typer.echo(f"budget: {note}")
    if problems:
        raise typer.Exit(code=1)
    console.print(f"[green]✓[/green] {checked} file(s) valid")


@_command()
def demo(out: Path = typer.Option(Path("runs/demo"), help="run directory (an earlier demo's output there is replaced; "
                                                          "anything else is refused)"),
         model: str = typer.Option("local", help="provider; the default is the shipped offline Gemma 3 270M"),
         turns: int = typer.Option(None, min=1, help="turns per session (default: the scenario's; ~1 s a decision "
                                                     "on 2 cores)"),
         sessions: int = typer.Option(None, min=1)) -> None:
    """Run the repository's config/demo.yaml (found from any directory) offline and print the summary."""
    from mnemarket.run import prepare_output_dir

    scenario = demo_scenario()
    if scenario is None:
        _fail(f"{DEMO_SCENARIO} not found at or above {Path.cwd()} nor beside the mnemarket source; "
              "run it from a checkout of the repository")
    prepare_output_dir(out, "demo")
    console.print(f"running {scenario} with model {model!r} (offline); run directory {out}")
    run(scenario, model=model, sessions=sessions, turns=turns, out=out, force=False, db=None, seed=None, record=True,
        spend_cap=None, token_cap=None, models_file=None, allow_dir=[])


@_command()
def compare(experiment: Path = typer.Argument(..., help="experiment YAML, e.g. config/experiments/local_vs_scripted.yaml"),
            out: Path = typer.Option(None, help="experiment directory (default runs/experiments/<name>)"),
            workers: int = typer.Option(None, min=1, help="cells run in parallel (default: the file's, or cores)"),
            report_only: bool = typer.Option(False, help="only measure finished cells and rewrite the reports"),
            executor: str = typer.Option("process", help="process (a local process pool) or ray (Ray tasks)"),
            address: str = typer.Option(None, help="Ray cluster address (auto, ray://HOST:10001); default: "
                                                   "start a local Ray"),
            allow_dir: list[Path] = _allow_dir_option()) -> None:
    """Run a models x memory-configs x seeds matrix (resumable) and write comparison.json/.md/.html."""
    from mnemarket.experiments import (
        CellsCancelled,
        CellWatcher,
        check_credentials,
        check_model,
        experiment_embedders,
        load_experiment,
        needs_check,
        plan_warnings,
        results_table,
        run_loaded,
    )
    from mnemarket.reports import CellOutcome

    if not experiment.exists():
        _fail(f"experiment {str(experiment)!r} not found; try config/experiments/local_vs_scripted.yaml")
    with allow_dirs(allow_dir or ()):
        loaded = load_experiment(experiment, out)
        warnings = plan_warnings(loaded)
    for warning in warnings:
        console.print(f"warning: {warning}", style="yellow", markup=False, highlight=False)
    if not report_only:  # keys first (no call, one error naming every model), then one call per remote model
        check_credentials(list(loaded.config.models), loaded.config.profiles, experiment_embedders(loaded))
        matrix = loaded.config
        for model in (m for m in matrix.models if needs_check(m)):
            checked = check_model(model, matrix.profiles.get(model))
            if not checked.ok:
                _fail(checked.line, 3)
            console.print(escape(checked.line))
    warned: set[str] = set()  # a configuration's warning repeats in each of its cells: say it once
    watcher = CellWatcher(loaded)
    finished = [0]

    def report(kind: str, cell, outcome: CellOutcome) -> None:
        finished[0] += 1
        watcher.done(cell)
        colour = "green" if outcome.get("state") == "finished" else "red"
        console.print(f"cell {finished[0]}/{watcher.pending_count} [{colour}]{escape(str(outcome.get('state')))}"
                      f"[/{colour}] {escape(cell.id)} {outcome.get('seconds', '')}s "
                      f"{escape(str(outcome.get('message', '')))}")
        for warning in outcome.get("warnings") or []:
            if warning not in warned:
                warned.add(warning)
                console.print(f"[yellow]warning ({escape(cell.id)}): {escape(warning)}[/yellow]")
    on_interrupt = _on_compare_interrupt(experiment, loaded, watcher)
    previous = signal.signal(signal.SIGINT, on_interrupt)
    try:
        with allow_dirs(allow_dir or ()), watcher.showing(console, enabled=not report_only):  # cells' configs are written here
            path = run_loaded(loaded, max_workers=workers, only_report=report_only, progress=report,
                              executor=executor, address=address)
    except CellsCancelled as stopped:  # Ray's cells are cancelled and its processes stopped
        on_interrupt(signal.SIGINT, None, note=f"cancelled {len(stopped.cancelled)} cell(s) on Ray; each starts "
                                                "again from its state in the experiment directory")
    finally:
        signal.signal(signal.SIGINT, previous)
    document = json.loads(path.read_text())
    console.print(results_table(document))
    failed = [c for c in document["cells"] if c["status"] != "finished"]
    console.print(f"{len(document['cells']) - len(failed)}/{len(document['cells'])} cells finished; "
                  f"reports: {path}, {path.with_suffix('.md')}, {path.with_suffix('.html')}")
    damaged = [c for c in failed if c["status"] == "damaged"]
    for cell in damaged:  # finished, so resuming would not touch it: say how to play it again
        console.print(f"[yellow]damaged: {escape(cell['id'])}: {escape(cell.get('message', ''))}; to play it again, "
                      f"remove {escape(cell['run_dir'])} and run the same command[/yellow]")
    if unfinished := [c for c in failed if c["status"] != "damaged"]:
        console.print(f"[yellow]unfinished: {escape(', '.join(c['id'] for c in unfinished))}; run the same command "
                      "again to resume them[/yellow]")
    if failed:
        raise typer.Exit(code=1)


from mnemarket.cli.eval_locomo import locomo as _eval_locomo  # noqa: E402 - registered after the wrapper exists

eval_app = typer.Typer(no_args_is_help=True, help="Standard memory datasets through an agent of the world.")
app.add_typer(eval_app, name="eval")
eval_app.command("locomo")(_errors_to_exit_codes(_eval_locomo))


@_command()
def serve(port: int = typer.Option(8000, min=0, max=65535, help="port (0 picks a free one; the ready line names it)"),
          host: str = typer.Option("127.0.0.1", help="address to listen on (0.0.0.0 serves other machines)"),
          slots: int = typer.Option(1, min=1, help="requests decoded at once, each on its own copy of the model"),
          threads: int = typer.Option(None, min=1, help="llama.cpp threads per slot (default: library choice)"),
          model: str = typer.Option("local", help="local (the shipped Gemma 3 270M) or local:PATH.gguf"),
          n_ctx: int = typer.Option(2048, min=256, help="context window per slot, in tokens"),
          embeddings: bool = typer.Option(True, help="serve /v1/embeddings with the shipped MiniLM"),
          max_requests: int = typer.Option(None, min=1, help="stop after this many requests")) -> None:
    """Serve the local model over an OpenAI-compatible API (for runs: MNEMARKET_LOCAL_URL=http://HOST:PORT/v1)."""
    from mnemarket.serve import ServeOptions
    from mnemarket.serve import serve as run_server

    if model != "local" and not model.startswith("local:"):
        _fail(f"--model {model!r}: mnemarket serve serves the local model; use local or local:PATH.gguf")
    path = Path(model.partition(":")[2]) if model.startswith("local:") else None
    run_server(ServeOptions(host=host, port=port, slots=slots, threads=threads, model_path=path, n_ctx=n_ctx,
                            embeddings=embeddings, max_requests=max_requests),
               announce=lambda line: console.print(line, markup=False, highlight=False, soft_wrap=True))


def main() -> None:
    # A native crash (llama.cpp) then names the Python call it happened in instead of a bare
    # "Segmentation fault"; the start-up test decode (providers/llama_cpu.py) catches the known ones.
    faulthandler.enable()
    app()


__all__ = ["app", "demo_scenario", "main"]


if __name__ == "__main__":
    main()

