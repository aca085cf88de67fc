"""The `mnemarket` command line: run, resume, inspect, memory, replay, validate, demo, compare, eval, serve."""

from __future__ import annotations

import faulthandler
import functools
import json
import sys
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from mnemarket.errors import MnemarketError, ProviderError, StoreError, UserError
from mnemarket.jsonl import read_json_object
from mnemarket.yaml_config import allow_dirs

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Agent world simulations in an artifact economy where memory is tradable.")
memory_app = typer.Typer(no_args_is_help=True, help="Look into a run's memory stores.")
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


def _run_with_progress(runner, title: str):
    from mnemarket.run.records import RunStatus  # noqa: F401  (typing only)

    total = runner.config.sessions * runner.config.turns
    with Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=console, transient=False) as progress:
        title = escape(title)  # a file or directory name; the column reads it as markup
        task = progress.add_task(title, total=total)
        done = [0]

        def report(kind: str, session: int, turn: int) -> None:
            if kind == "turn":
                done[0] = (session - 1) * runner.config.turns + turn
                progress.update(task, completed=done[0], description=f"{title}: session {session} turn {turn}")
        runner.setup()
        for warning in runner.warnings:
            console.print(f"[yellow]warning: {escape(warning)}[/yellow]")
        last = runner.world.state.get(("run", "last_turn"))
        if last:
            progress.update(task, completed=(last["session"] - 1) * runner.config.turns + last["turn"])
        return runner.run(report)


SUMMARY_COLUMNS = {"balance": "balance", "turns": "turns", "invalid": "invalid_actions", "failed": "failed_actions",
                   "lessons": "lessons_written", "migrated": "lessons_migrated", "memory calls": "memory_invokes",
                   "bounties": "bounties_paid", "loops": "loop_breaker_triggers", "tokens/turn": "mean_context_tokens"}
"""Each agent's figures a run's summary shows: column title -> summary.json key."""


def _print_summary(run_dir: Path, summary: dict | None = None) -> None:
    if summary is None:
        summary = json.loads((run_dir / "summary.json").read_text())
    title = f"{run_dir}: {summary.get('status', '?')}"
    table = Table(title=Text(title))
    table.add_column("agent")
    for column in SUMMARY_COLUMNS:
        table.add_column(column, justify="right")
    rows = [(agent, [str(figures.get(key, "")) for key in SUMMARY_COLUMNS.values()])
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
    trades = ", ".join(f"{t['kind']} {t['artifact_id']} {t['seller']}->{t['buyer']} @{t['price']}"
                       for t in summary["trades"]) or "none"
    console.print(f"trades: {trades}", markup=False, highlight=False)
    console.print(f"scrip: total {summary['total_scrip']} = initial {summary['initial_total_scrip']} + minted "
                  f"{summary['minted']} - burned {summary['burned']} ({'conserved' if summary['supply_ok'] else 'BROKEN'})")
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
        out: Path = typer.Option(None, help="run directory (default runs/<scenario>)"),
        db: str = typer.Option(None, help="database URL instead of RUN_DIR/world.db (postgresql://...)"),
        seed: int = typer.Option(None), record: bool = typer.Option(False, help="record model calls for replay"),
        spend_cap: float = typer.Option(None, help="stop cleanly when model spend reaches this many USD"),
        token_cap: int = typer.Option(None, help="stop cleanly after this many model tokens"),
        models_file: Path = typer.Option(None, help="models.yaml: model strings -> profiles (price, concurrency, "
                                                    "structured mode, ...)"),
        allow_dir: list[Path] = _allow_dir_option()) -> None:
    """Run a scenario."""
    from mnemarket.experiments.pipeline import create_runner
    from mnemarket.providers import check_llm_spec
    from mnemarket.run.models_file import load_models_file
    from mnemarket.run.records import RunOptions

    if not scenario.exists():
        _fail(f"scenario {str(scenario)!r} not found; try config/demo.yaml")
    out = out or Path("runs") / scenario.stem
    if model is not None:
        check_llm_spec(model)
    profiles = load_models_file(models_file) if models_file is not None else {}
    with allow_dirs(allow_dir or ()):
        runner = create_runner(scenario, out, RunOptions(model=model, sessions=sessions, turns=turns, db=db, seed=seed,
                                                         record=record, spend_cap_usd=spend_cap, token_cap=token_cap,
                                                         profiles=profiles))
    try:
        status = _run_with_progress(runner, scenario.stem)
    finally:
        runner.close()
    _stop_if_provider_failed(status)
    _print_summary(out)


@_command()
def resume(run_dir: Path, spend_cap: float = typer.Option(None, help="raise the spend cap before resuming"),
           token_cap: int = typer.Option(None, help="raise the token cap before resuming")) -> None:
    """Continue a run that was stopped (killed, or by its budget)."""
    from mnemarket.experiments.pipeline import open_runner

    runner = open_runner(run_dir, spend_cap_usd=spend_cap, token_cap=token_cap)
    try:
        status = _run_with_progress(runner, f"resume {run_dir.name}")
    finally:
        runner.close()
    _stop_if_provider_failed(status)
    _print_summary(run_dir)


def _view(run_dir: Path):
    """The run opened read-only (inspection never writes, locks or loads a model)."""
    from mnemarket.reports.inspect import RunView

    return RunView(run_dir)


@_command()
def inspect(run_dir: Path, agent: str = typer.Option(None, help="one agent's figures and recent actions"),
            as_json: bool = typer.Option(False, "--json", help="print the summary as JSON")) -> None:
    """Show what a run holds (read-only)."""
    with _view(run_dir) as view:
        summary = view.summary()
        if agent is not None and agent not in summary["agents"]:
            _fail(f"no agent {agent!r} in this run; agents: {', '.join(summary['agents'])}")
        if as_json:
            saved = run_dir / "summary.json"  # the runner's record of what each model applied
            models = json.loads(saved.read_text()).get("models", {}) if saved.exists() else {}
            data = summary | {"models": models} if agent is None else {"agent": agent, **summary["agents"][agent]}
            sys.stdout.write(json.dumps(data, indent=2) + "\n")
            return
        if agent is None:
            saved = run_dir / "summary.json"
            # The runner's summary.json also says how the run ended; figures are recomputed.
            extra = read_json_object(saved) or {}  # a damaged one only loses how the run ended
            _print_summary(run_dir, {**extra, **summary})
            return
        console.print(summary["agents"][agent])
        for event in deque(view.world.iter_events(principal=agent), maxlen=15):  # its last 15, read a page at a time
            status = "[green]OK[/green]" if event.success else "[red]FAILED[/red]"
            console.print(f"t{event.tick} {escape(event.action_type)} {escape(str(event.action.get('method') or ''))} "
                          f"{status} {escape(str(event.result.get('message', '')))}")


@models_app.command("check")
@_errors_to_exit_codes
def models_check(model: str = typer.Argument(..., help="a model string, e.g. gemini:gemini-3.6-flash or "
                                                       "openai:http://127.0.0.1:8080/v1:local"),
                 profile: Path = typer.Option(None, help="models.yaml holding this model's profile"),
                 as_json: bool = typer.Option(False, "--json", help="print what the call showed as JSON")) -> None:
    """One real call with the agents' reply schema: structured mode, model version, price, latency."""
    from mnemarket.experiments.model_check import check_model
    from mnemarket.providers import check_llm_spec
    from mnemarket.run.models_file import load_models_file

    check_llm_spec(model)
    result = check_model(model, load_models_file(profile).get(model) if profile is not None else None)
    if as_json:
        sys.stdout.write(json.dumps({"model": model, "ok": result.ok, **result.details}, indent=2) + "\n")
    if not result.ok:
        _fail(result.line, 3)
    if not as_json:
        typer.echo(result.line)


@memory_app.command("search")
@_errors_to_exit_codes
def memory_search(run_dir: Path, query: str, store: str = typer.Option(..., "--store", help="memory store id"),
                  k: int = typer.Option(5, "-k", min=1, max=50)) -> None:
    """Search one memory store of a run (read-only: does not touch recency)."""
    from mnemarket.reports.inspect import memory_stores

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
        for title, store_id in (("long-term", found.store_id), ("episodic", found.episodic_store_id)):
            records = view.store(store_id).records()
            console.rule(f"{agent}: {title} ({len(records)} entries)")
            for record in records:
                archived = " archived" if record.archived else ""
                console.print(Text.assemble((f"{record.id} {record.kind} imp={record.importance:.2f} "
                                             f"t={record.created:g}{archived}", "dim"), " ", record.text))


@_command()
def replay(run_dir: Path, out: Path = typer.Option(None, help="where to re-execute (default RUN_DIR-replay)")) -> None:
    """Re-execute a recorded run from its recordings and report whether it matched."""
    from mnemarket.experiments.pipeline import replay_run

    result = replay_run(run_dir, out)
    if result.matched:
        console.print(f"[green]replay matched[/green]: {result.events} events, balances and artifacts identical "
                      f"({result.out_dir})")
    else:
        console.print(f"[red]replay diverged[/red]: {escape(result.detail)}")
        raise typer.Exit(code=1)


@_command()
def validate(path: Path, allow_dir: list[Path] = _allow_dir_option()) -> None:
    """Check agent, scenario or genesis YAML files (a file or a directory) without running anything."""
    from mnemarket.experiments.validate import validate_path

    if not path.exists():
        _fail(f"{str(path)!r} does not exist")
    warnings: list[str] = []
    with allow_dirs(allow_dir or ()):
        problems, checked = validate_path(path, warnings)
    for problem in problems:
        typer.echo(f"invalid: {problem}", err=True)
    for warning in warnings:
        typer.echo(f"warning: {warning}", err=True)
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
    from mnemarket.run.output_dirs import prepare_output_dir

    scenario = demo_scenario()
    if scenario is None:
        _fail(f"{DEMO_SCENARIO} not found at or above {Path.cwd()} nor beside the mnemarket source; "
              "run it from a checkout of the repository")
    prepare_output_dir(out, "demo")
    console.print(f"running {scenario} with model {model!r} (offline); run directory {out}")
    run(scenario, model=model, sessions=sessions, turns=turns, out=out, db=None, seed=None, record=True,
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
    from mnemarket.experiments.experiment import load_experiment, run_experiment
    from mnemarket.experiments.model_check import check_model, needs_check

    if not experiment.exists():
        _fail(f"experiment {str(experiment)!r} not found; try config/experiments/local_vs_scripted.yaml")
    if not report_only:  # one call per remote model before any cell spends on it
        matrix = load_experiment(experiment).config
        for model in (m for m in matrix.models if needs_check(m)):
            checked = check_model(model, matrix.profiles.get(model))
            if not checked.ok:
                _fail(checked.line, 3)
            console.print(escape(checked.line))

    warned: set[str] = set()  # a configuration's warning repeats in each of its cells: say it once

    def report(kind: str, cell, outcome: dict) -> None:
        colour = "green" if outcome.get("state") == "finished" else "red"
        console.print(f"[{colour}]{escape(str(outcome.get('state')))}[/{colour}] {escape(cell.id)} "
                      f"{outcome.get('seconds', '')}s {escape(str(outcome.get('message', '')))}")
        for warning in outcome.get("warnings") or []:
            if warning not in warned:
                warned.add(warning)
                console.print(f"[yellow]warning ({escape(cell.id)}): {escape(warning)}[/yellow]")
    with allow_dirs(allow_dir or ()):  # the cells' configurations are written here, before any cell runs
        path = run_experiment(experiment, out, max_workers=workers, only_report=report_only, progress=report,
                              executor=executor, address=address)
    document = json.loads(path.read_text())
    failed = [c for c in document["cells"] if c["status"] != "finished"]
    console.print(f"{len(document['cells']) - len(failed)}/{len(document['cells'])} cells finished; "
                  f"reports: {path}, {path.with_suffix('.md')}, {path.with_suffix('.html')}")
    if failed:
        console.print(f"[yellow]unfinished: {escape(', '.join(c['id'] for c in failed))}; run the same command again "
                      "to resume them[/yellow]")
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

