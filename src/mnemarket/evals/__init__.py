"""Standard memory datasets played through an agent of the world (LoCoMo first; plans/locomo-eval.md).

Layer: between the command line and the run layer (it builds worlds, agents and bounties the way
a run does, and never reaches into the command line)."""

from typing import TYPE_CHECKING

from mnemarket.evals.locomo_data import ADVERSARIAL, CATEGORY_NAMES, Conversation, Question, Turn, load_conversations
from mnemarket.evals.scoring import abstained, exact_match, locomo_f1, normalize_answer, token_f1
from mnemarket.lazy_front import lazy_exports

# A LoCoMo run and its outputs (the agent, the world, the reports) load when one of their names is first used.
_LAZY = {"locomo_run": ["OPTIONS_FILE", "ROWS_FILE", "LocomoOptions", "check_options", "open_options", "question_order",
                        "read_rows", "run_locomo"],
         "outputs": ["ANSWERABLE", "category_table", "write_outputs"], "reader": ["EXTRACTIVE"],
         "comparison": ["category_rows", "effect_section", "group_summary", "scored_groups", "write_locomo_comparison"]}
if not TYPE_CHECKING:  # mypy reads the imports below, so a name missing from them is an error
    __getattr__ = lazy_exports(__name__, _LAZY)

if TYPE_CHECKING:
    from mnemarket.evals.comparison import (
        category_rows,
        effect_section,
        group_summary,
        scored_groups,
        write_locomo_comparison,
    )
    from mnemarket.evals.locomo_run import (
        OPTIONS_FILE,
        ROWS_FILE,
        LocomoOptions,
        check_options,
        open_options,
        question_order,
        read_rows,
        run_locomo,
    )
    from mnemarket.evals.outputs import ANSWERABLE, category_table, write_outputs
    from mnemarket.evals.reader import EXTRACTIVE

__all__ = [
    "ADVERSARIAL", "CATEGORY_NAMES", "Conversation", "Question", "Turn", "abstained", "exact_match", "load_conversations",
    "locomo_f1", "normalize_answer", "token_f1", "LocomoOptions", "run_locomo", "category_table", "write_outputs",
    "OPTIONS_FILE", "ROWS_FILE", "check_options", "open_options", "question_order", "read_rows", "ANSWERABLE", "EXTRACTIVE",
    "category_rows", "effect_section", "group_summary", "scored_groups", "write_locomo_comparison",
]
