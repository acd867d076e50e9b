"""A scenario's names, as people typed them, rewritten to catalog names (models/names.py).

Applied by the loader after the catalog is resolved and before the references are checked:
a workload may name its model by Hugging Face id, an offer its GPU by instance type, a zone by
the account's AWS zone name (through ``zone_names``). What resolves is rewritten to the catalog
name (an instance type also fills the offer's ``instance_type`` and ``gpus_per_node`` where the
offer leaves them out); what does not is left as typed, for the reference check to refuse with
the closest names.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypeVar

from models.catalog import LlmSpec
from models.errors import InputError, Problem
from models.measured import MeasuredCapacity
from models.names import ZoneName, precision_hint, resolve_gpu, resolve_model, zone_id_for
from models.offers import AssumedFigure, Offer, OwnedTerms, ReservedTerms, Zone
from models.workload import Workload

_Led = TypeVar("_Led", ReservedTerms, OwnedTerms)


def model_aliases(models: Sequence[LlmSpec]) -> dict[str, tuple[str, ...]]:
    """Catalog model name → the aliases its entry declares."""
    return {m.name: m.aliases for m in models}


def _gpu(name: str, gpus: Sequence[str]) -> str:
    found, _, _ = resolve_gpu(name, gpus)
    return found or name


def _model(name: str, models: Mapping[str, Sequence[str]]) -> str:
    found, _ = resolve_model(name, models)
    return found or name


def canonical_workloads(workloads: Sequence[Workload], gpus: Sequence[str],
                        models: Mapping[str, Sequence[str]], file: str
                        ) -> tuple[tuple[Workload, ...], list[Problem]]:
    """Workloads with their model and allowed GPUs in catalog names, and the precision a
    quantised model id states (``-AWQ`` → int4) where the workload states none; a stated
    precision the id contradicts is a problem (the checkpoint's weights are what is served)."""
    out: list[Workload] = []
    problems: list[Problem] = []
    for i, wl in enumerate(workloads):
        allowed = None if wl.allowed_gpus is None else tuple(
            dict.fromkeys(_gpu(g, gpus) for g in wl.allowed_gpus))
        update: dict[str, object] = {"model": _model(wl.model, models), "allowed_gpus": allowed}
        hint = precision_hint(wl.model)
        if hint is not None and "precision" not in wl.model_fields_set:
            update["precision"] = hint
        elif hint is not None and wl.precision is not hint:
            problems.append(Problem(
                file, f"workloads[{i}].precision", f"{wl.precision.value}, but the model "
                f"`{wl.model}` is a {hint.value} checkpoint",
                f"set precision: {hint.value}, or name the unquantised model"))
        out.append(wl.model_copy(update=update))
    return tuple(out), problems


def canonical_measured(rows: Sequence[MeasuredCapacity], gpus: Sequence[str],
                       models: Mapping[str, Sequence[str]]) -> tuple[MeasuredCapacity, ...]:
    """Measured rows with their GPU and model in catalog names."""
    return tuple(r.model_copy(update={"gpu": _gpu(r.gpu, gpus),
                                      "model": _model(r.model, models)}) for r in rows)


def defaulted(offer: Offer) -> tuple[AssumedFigure, ...]:
    """Figures an offer written by hand leaves to their defaults (so they are assumed), with
    those it already says are assumed."""
    found = set(offer.assumed)
    if offer.spot is not None and "interruption_rate_per_hour" not in offer.spot.model_fields_set:
        found.add(AssumedFigure.spot_interruption_rate)
    if offer.on_demand is not None and "startup_minutes" not in offer.on_demand.model_fields_set:
        found.add(AssumedFigure.on_demand_startup)
    return tuple(f for f in AssumedFigure if f in found)


def _lead_time_flagged(terms: _Led) -> _Led:
    """Reserved or owned terms marked ``lead_time_assumed`` where the scenario gives no
    ``lead_time_weeks`` (its 0 weeks is then nobody's figure)."""
    if "lead_time_weeks" in terms.model_fields_set or terms.lead_time_assumed:
        return terms
    return terms.model_copy(update={"lead_time_assumed": True})


def _offer(offer: Offer, gpus: Sequence[str]) -> Offer:
    found, per_node, _ = resolve_gpu(offer.gpu, gpus)
    update: dict[str, object] = {"assumed": defaulted(offer)}
    if isinstance(offer.reserved, tuple):
        update["reserved"] = tuple(_lead_time_flagged(q) for q in offer.reserved)
    elif offer.reserved is not None:
        update["reserved"] = _lead_time_flagged(offer.reserved)
    if offer.owned is not None:
        update["owned"] = _lead_time_flagged(offer.owned)
    if found is None:
        return offer.model_copy(update=update)
    update["gpu"] = found
    if per_node is not None:
        update["instance_type"] = offer.instance_type or offer.gpu
        update["gpus_per_node"] = offer.gpus_per_node or per_node
    return offer.model_copy(update=update)


def canonical_zones(zones: Sequence[Zone], gpus: Sequence[str],
                    zone_map: Mapping[str, ZoneName] | None, file: str
                    ) -> tuple[tuple[Zone, ...], list[Problem]]:
    """Zones by id (AWS names through ``zone_map``, kept as the zone's ``name``), offers by
    catalog GPU name; an AWS zone name that does not resolve is a problem."""
    out: list[Zone] = []
    problems: list[Problem] = []
    for i, zone in enumerate(zones):
        try:
            zone_id, name = zone_id_for(zone.id, zone_map, (), file, f"zones[{i}].id")
        except InputError as exc:
            problems.extend(exc.problems)
            zone_id, name = zone.id, None
        out.append(zone.model_copy(update={
            "id": zone_id, "name": zone.name or name,
            "offers": tuple(_offer(o, gpus) for o in zone.offers)}))
    return tuple(out), problems


def named_zones(zones: Sequence[Zone], zone_map: Mapping[str, ZoneName] | None
                ) -> tuple[Zone, ...]:
    """Every zone the mapping knows gets the account's name for it (shown beside the id)."""
    names = {z.zone_id: z.name for z in (zone_map or {}).values()}
    return tuple(z if z.name or z.id not in names else z.model_copy(update={"name": names[z.id]})
                 for z in zones)
