"""The `mnemarket` command line."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="Agent world simulations in an artifact economy where memory is tradable.")
console = Console()


@app.callback()
def _root() -> None:
    """Keep subcommands explicit even while there is only one."""


@app.command()
def demo(out: Path = typer.Option(Path("runs/demo"), help="run directory")) -> None:
    """Run the offline demo and print what happened."""
    from mnemarket.sim.kernel_demo import run_kernel_demo

    outcome = run_kernel_demo(out)
    table = Table(title="kernel demo: every action, as the acting principal saw it")
    for column in ("tick", "who", "ok", "result / fix"):
        table.add_column(column)
    for who, result in outcome.steps:
        text = result.message if result.success else f"{result.message}\n[dim]fix: {result.hint}[/dim]"
        table.add_row(str(result.tick), who, "[green]yes[/green]" if result.success else "[red]no[/red]", text)
    console.print(table)
    console.print(f"balances: {outcome.balances}")
    console.print(f"scrip conserved: {outcome.supply_ok}; events: {outcome.events}; "
                  f"reopened from disk identical: {outcome.reopened_identical}")
    console.print(f"database: {outcome.db_path}")
    if not (outcome.supply_ok and outcome.reopened_identical):
        raise typer.Exit(code=1)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
