"""Prices of a configuration: cheapest offer per purchase kind, cost per million tokens."""

from __future__ import annotations

import math

from models.capacity import CapacityRow
from models.common import PurchaseKind
from models.scenario import Scenario
from models.workload import SECONDS_PER_HOUR

#: Tokens per million.


TOKENS_PER_MILLION = 1e6


def cheapest_prices(scenario: Scenario, gpu: str) -> dict[PurchaseKind, float]:
    """Cheapest price per GPU-hour of each purchase kind any zone sells ``gpu`` at."""
    out: dict[PurchaseKind, float] = {}
    for zone in scenario.zones:
        for offer in zone.offers:
            if offer.gpu != gpu:
                continue
            for kind in PurchaseKind:
                terms = offer.terms(kind)
                if terms is not None:
                    out[kind] = min(out.get(kind, math.inf), terms.price_per_gpu_hour)
    return {k: out[k] for k in PurchaseKind if k in out}


def cost_per_million_tokens(
    price_per_gpu_hour: float, gpus: int, tokens_per_s: float
) -> float:
    """Cost of a million tokens (input + output) on a replica run flat out at its rate."""
    return price_per_gpu_hour * gpus / (tokens_per_s * SECONDS_PER_HOUR) * TOKENS_PER_MILLION


def cost_key(row: CapacityRow) -> float:
    """Sort key: cheapest cost per million tokens bought reserved or on demand, else spot."""
    cost = row.cost_per_million_tokens
    firm = [v for k, v in cost.items() if k is not PurchaseKind.spot]
    return min(firm or list(cost.values()), default=math.inf)
