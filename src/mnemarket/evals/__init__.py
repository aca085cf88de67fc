"""Standard memory datasets played through an agent of the world (LoCoMo first; plans/locomo-eval.md).

Layer: between the command line and the run layer (it builds worlds, agents and bounties the way
a run does, and never reaches into the command line)."""

from mnemarket.evals.locomo_data import CATEGORY_NAMES, Conversation, Question, Turn, load_conversations
from mnemarket.evals.scoring import abstained, exact_match, locomo_f1, normalize_answer, token_f1

__all__ = ["CATEGORY_NAMES", "Conversation", "Question", "Turn", "abstained", "exact_match", "load_conversations",
           "locomo_f1", "normalize_answer", "token_f1"]
