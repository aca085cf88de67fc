"""The ids an agent can name in its reply now, and what its step's menu allows (its reply schema)."""

from __future__ import annotations

from itertools import islice

from mnemarket.agents.decision import WorldView, args_schema
from mnemarket.agents.menu import StepMenu
from mnemarket.genesis import ANSWER_STEP_FORMS, STORE_TYPE, Genesis
from mnemarket.kernel import World

MAX_VIEW_IDS = 60
"""Ids of one kind a reply schema offers (a long list would swamp the grammar and the model)."""


def world_view(world: World, genesis: Genesis, me: str, store_id: str, menu: StepMenu,
               avoid: tuple[str, str, str] | None, order: tuple[str, ...], *, answer_step: bool = False) -> WorldView:
    """The ids ``me`` can name now (bounded lists) and what ``menu`` allows; ``avoid`` is an action
    the loop breaker takes off the menu, ``store_id`` its own long-term store; with ``answer_step``
    an answer claim's form names the bounty alone (`genesis.ANSWER_STEP_FORMS`). Read from the
    world's artifact index, so the cost follows the size of the lists, not of the world."""
    forms = ANSWER_STEP_FORMS if answer_step else {}
    index = world.index
    own = sorted(index.newest_owned(me, MAX_VIEW_IDS))
    public = index.public
    readable = (sorted({*public, *(i for _, i in index.owned(me)), *index.shared_with(me)})
                if len(public) <= MAX_VIEW_IDS else None)
    if readable is None or len(readable) > MAX_VIEW_IDS:  # keep what matters most: its own, services, stores
        readable = sorted({*own, *world.invokables, *index.of_type(STORE_TYPE)[:MAX_VIEW_IDS]})[:MAX_VIEW_IDS]
    principals = list(islice((p for p in world.principal_ids() if p != me and p not in world.invokables),
                             MAX_VIEW_IDS))
    services = tuple((inv.artifact_id, name, args_schema(forms.get(form, form)))
                     for inv in world.invokables.values() for name, spec in inv.methods.items()
                     if menu.allows_method(inv.artifact_id, name) for form in spec.forms())
    # Its own long-term store first, then stores it may search, then the rest (to preview or
    # license): a small model tends to take the first choice it is offered.
    store_ids = index.of_type(STORE_TYPE)
    if len(store_ids) > MAX_VIEW_IDS:  # bounded work: its own and readable ones are what it can use
        can_read = set(readable)
        store_ids = sorted({*(i for i in store_ids if i in can_read), store_id})
    artifacts = [a for i in store_ids if (a := world.get(i)) is not None and not a.deleted]
    stores = [a.id for a in sorted(artifacts, key=lambda a: (
        a.id != store_id, not a.access.allows("read", me, a.owner), a.id))][:MAX_VIEW_IDS]
    bounties = sorted(genesis.bounty.claimable_by(me, world), key=lambda b: b.id)[:MAX_VIEW_IDS]
    return WorldView(readable=tuple(readable), own=tuple(own), principals=tuple(principals), services=services,
                     avoid=avoid, stores=tuple(stores), bounties=tuple(b.id for b in bounties),
                     answer_bounties=tuple(b.id for b in bounties if b.kind == "answer"),
                     artifact_bounties=tuple(b.id for b in bounties if b.kind == "artifact"),
                     action_types=None if menu.action_types is None else tuple(sorted(menu.action_types)),
                     order=order)
