r"""The fleet program over planning periods and demand scenarios (docs/program.md, "Planning
periods"): one copy of the single-period program per block :math:`b = (\xi, q)` — demand
scenario and period — coupled only through the orders of committed capacity.

Sets: demand scenarios :math:`\Xi` with probabilities :math:`p_\xi`; periods :math:`Q`
(:math:`m` months each); committed pools :math:`(z, g, k)`, :math:`k \in \{R, O\}`, each with
order options :math:`j` (a reserved quote: term :math:`T_j` months, lead time
:math:`\lambda_j`; owned hardware: life, lead time) usable from a period :math:`a`, ordered by
:math:`o_{ja} = t_a - \lambda_j`.

Each block is today's program (C1–C6 and its cuts) on the period's demand and capacity rows,
with its committed pools priced at zero (they are paid through orders) and no budget row.
Variables added: orders :math:`u^\xi_{zgkja} \in \mathbb{Z}_{\ge 0}` (nodes). Held in period
:math:`q`: :math:`H^\xi_{zgkq} = I_{zgkq} + \sum_{j, a \le q < a + \kappa_j} u^\xi_{zgkja}`,
:math:`\kappa_j = \lfloor T_j / m \rfloor` (owned: its life).

- P1 holdings (``terms``): :math:`\sum_o y^b_{zgk\,o} \le H^\xi_{zgkq}` — a pool runs at most
  the nodes held; an order is held (and paid) for its whole term.
- P2 ``inventory``: :math:`I` counts in :math:`H` (owned and reserved nodes already held).
- P3 ``lead_time``: :math:`u^\xi_{ja} = 0` where :math:`o_{ja}` is before the plan date.
- P4 ``order_stock``: :math:`n_{zg} \sum_{a \le q < a + \kappa_j} u^\xi_{zgkja} \le \sigma_j`.
- P5 ``here_and_now``: :math:`u^\xi_{ja} = u^{\xi_0}_{ja}` where :math:`o_{ja}` is before the
  next re-plan: decisions due now are one decision for every demand scenario.
- P6 ``period_budget``: the monthly cost of each block (elastic and held) :math:`\le B`.

Objective: :math:`\sum_\xi p_\xi\, c_\xi` (``robust``: :math:`\max_\xi c_\xi` through
:math:`\theta \ge c_\xi`), :math:`c_\xi = \sum_q m\, E_{\xi q} + \sum_{R} \pi_j n_{zg} H_m
T_j u + \sum_O \omega_j (\text{months from } a \text{ to the end}) u` — elastic capacity per
month of each period, a reservation for its whole term (``commitments: inside_horizon``: its
months inside the horizon), owned hardware its amortised capital, power and hosting per month
held. What is held already (inventory) costs the same whatever the plan: reported, not in the
objective.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

import pulp

from models.capacity import CapacityTable
from models.common import COMMITTED_KINDS, PurchaseKind
from models.errors import InputError, Problem
from models.horizon import CommitmentCost, DemandScenario, add_months
from models.scenario import Scenario
from solver.program.build import build_program
from solver.program.data import OfferTerm, ProgramData, build_program_data
from solver.program.families import FAMILIES
from solver.program.keys import PoolKey
from solver.program.orders import (
    OrderOption,
    order_by,
    order_options,
    plan_date_of,
    replan_from,
)
from solver.program.variables import Program

#: Name of the one demand scenario of a scenario that lists none.
BASE = "base"


@dataclass(frozen=True)
class Period:
    """One planning period."""

    index: int
    start: dt.date
    end: dt.date
    """The day after the period's last day."""
    months: float


@dataclass(frozen=True)
class OrderKey:
    """Nodes of one order option usable from one period."""

    option: OrderOption
    arrival: int


@dataclass(frozen=True)
class Block:
    """One demand scenario in one period: today's program on that period's demand."""

    scenario: str
    period: int
    workloads: Scenario
    """The scenario as it stands in that period and demand scenario (single-period)."""
    data: ProgramData
    table: CapacityTable


@dataclass(frozen=True)
class HorizonData:
    """Everything the program over periods is built from (pure: no solver)."""

    periods: tuple[Period, ...]
    scenarios: tuple[DemandScenario, ...]
    blocks: tuple[Block, ...]
    options: tuple[OrderOption, ...]
    held: Mapping[tuple[PoolKey, int], int]
    """Inventory nodes held through each period [nodes]."""
    plan_date: dt.date
    replan_date: dt.date
    commitments: CommitmentCost
    hours_per_month: float
    monthly_budget: float | None
    lead_times: bool = True
    """Single-period brownfield plans have no dates to order by."""
    whole_terms: bool = True
    """Orders are held and paid for their whole term (``False``: for their arrival period
    only, as if bought month by month — the coupling a test removes)."""

    def block(self, scenario: str, period: int) -> Block:
        """The block of a demand scenario and period."""
        return next(b for b in self.blocks if (b.scenario, b.period) == (scenario, period))

    def order_by(self, key: OrderKey) -> dt.date:
        """Last day to place an order that is in service from its arrival period."""
        return order_by(self.periods[key.arrival].start, key.option.lead_time_weeks)

    def held_periods(self, key: OrderKey) -> range:
        """Periods an order's nodes are held (its term's whole periods inside the horizon)."""
        months = self.periods[0].months
        length = max(1, math.floor(key.option.term_months / months + 1e-9))
        if not self.whole_terms:
            length = 1
        return range(key.arrival, min(key.arrival + length, len(self.periods)))

    def paid_months(self, key: OrderKey) -> float:
        """Months an order is charged in the objective (module docstring) [months]."""
        if not self.whole_terms:
            return self.periods[key.arrival].months
        left = sum(p.months for p in self.periods[key.arrival:])
        if key.option.pool.purchase is PurchaseKind.owned:
            return left
        if self.commitments is CommitmentCost.whole_term and self.lead_times:
            return float(key.option.term_months)
        return min(float(key.option.term_months), left)

    def order_cost(self, key: OrderKey) -> float:
        """Cost of one node of an order over the months it is charged [currency/node]."""
        return key.option.cost_per_node_month * self.paid_months(key)

    @property
    def order_keys(self) -> tuple[OrderKey, ...]:
        """Every order option usable from every period."""
        return tuple(OrderKey(o, a) for o in self.options for a in range(len(self.periods)))


def _periods(scenario: Scenario, plan_date: dt.date) -> tuple[Period, ...]:
    horizon = scenario.horizon
    if horizon is None:  # brownfield, one period: a month from the plan date
        return (Period(0, plan_date, add_months(plan_date, 1), 1.0),)
    return tuple(Period(q, horizon.period_start(q), horizon.period_start(q + 1),
                        float(horizon.period_months)) for q in range(horizon.count))


def block_scenario(scenario: Scenario, demand: DemandScenario, period: Period,
                   dated: bool) -> Scenario:
    """The single-period scenario of one block: demand grown, events added, migrations done,
    measured rows aged to the period's start, or ``policy.as_of`` where later (``dated``:
    :meth:`Scenario.rows_aged_to`): :meth:`Scenario.in_period`."""
    return scenario.in_period(period.index, demand,
                              scenario.rows_aged_to(period.start) if dated else None)


def inventory_held(scenario: Scenario, periods: tuple[Period, ...]
                   ) -> dict[tuple[PoolKey, int], int]:
    """Inventory nodes held through each whole period, per committed pool."""
    out: dict[tuple[PoolKey, int], int] = {}
    for line in scenario.inventory:
        assert line.gpu is not None
        pool = PoolKey(line.zone, line.gpu, line.purchase.pool_kind)
        for p in periods:
            if line.held_through(p.start, p.end):
                out[(pool, p.index)] = out.get((pool, p.index), 0) + line.nodes
    return out


def _node_sizes(scenario: Scenario, options: Iterable[OrderOption]) -> dict[PoolKey, int]:
    """GPUs per node of each committed pool; inventory of another node size is refused."""
    sizes = {o.pool: o.gpus_per_node for o in options}
    problems = []
    for i, line in enumerate(scenario.inventory):
        assert line.gpu is not None and line.gpus_per_node is not None
        pool = PoolKey(line.zone, line.gpu, line.purchase.pool_kind)
        if sizes.setdefault(pool, line.gpus_per_node) != line.gpus_per_node:
            problems.append(Problem(
                "inventory", f"inventory[{i}].gpus_per_node",
                f"{line.gpus_per_node}-GPU {line.gpu} nodes held in {line.zone}, where the zone "
                f"sells {sizes[pool]}-GPU nodes: one pool holds one node size",
                "state the node size the zone sells, or hold them under another zone id"))
    if problems:
        raise InputError(problems)
    return sizes


def _committed_offers(
    data: ProgramData, options: tuple[OrderOption, ...], sizes: Mapping[PoolKey, int],
    held: Mapping[tuple[PoolKey, int], int], period: int,
) -> ProgramData:
    """Block data: the elastic offers as they are, one pool per committed (zone, GPU, kind)
    priced at zero (paid through orders), its stock what may be held then; no budget."""
    elastic = [o for o in data.offers if o.purchase not in COMMITTED_KINDS]
    committed = []
    for pool, node in sorted(sizes.items(), key=lambda kv: (kv[0].zone, kv[0].gpu,
                                                             kv[0].purchase.value)):
        stock = node * held.get((pool, period), 0) + sum(
            o.stock_gpus for o in options if o.pool == pool)
        instance = next((o.instance_type for o in options if o.pool == pool), None)
        committed.append(OfferTerm(pool.zone, pool.gpu, pool.purchase, node, 0.0, stock,
                                   instance_type=instance))
    offers = tuple(sorted([*elastic, *committed], key=lambda o: (o.zone, o.gpu,
                                                                  _kind_order(o.purchase))))
    return dataclasses.replace(data, offers=offers, monthly_budget=None)


def _kind_order(kind: PurchaseKind) -> int:
    return list(PurchaseKind).index(kind)


def build_horizon_data(
    scenario: Scenario, table_for: Callable[[Scenario], CapacityTable],
) -> HorizonData:
    """Blocks, order options and inventory of a multi-period (or brownfield) scenario.

    ``table_for`` builds the capacity table of a block's scenario (the caller may cache it).
    """
    plan_date = plan_date_of(scenario)
    periods = _periods(scenario, plan_date)
    demands = scenario.demand_scenarios or (DemandScenario(name=BASE, probability=1.0),)
    options = order_options(scenario)
    sizes = _node_sizes(scenario, options)
    held = inventory_held(scenario, periods)
    blocks = []
    for demand in demands:
        for period in periods:
            sc = block_scenario(scenario, demand, period, dated=scenario.horizon is not None)
            table = table_for(sc)
            data = _committed_offers(build_program_data(sc, table), options, sizes, held,
                                     period.index)
            blocks.append(Block(demand.name, period.index, sc, data, table))
    horizon = scenario.horizon
    replan = add_months(replan_from(scenario), horizon.replan_interval_months if horizon else 1)
    return HorizonData(
        periods=periods, scenarios=tuple(demands), blocks=tuple(blocks), options=options,
        held=held, plan_date=plan_date, replan_date=replan,
        commitments=horizon.commitments if horizon else CommitmentCost.inside_horizon,
        hours_per_month=scenario.policy.hours_per_month,
        monthly_budget=scenario.policy.monthly_budget, lead_times=horizon is not None)


# --- the program ---------------------------------------------------------------------------


@dataclass
class HorizonProgram:
    """The joint program: one PuLP problem holding every block's variables and rows."""

    prob: pulp.LpProblem
    data: HorizonData
    blocks: dict[tuple[str, int], Program]
    orders: dict[tuple[str, OrderKey], pulp.LpVariable] = field(default_factory=dict)
    cost: dict[str, pulp.LpAffineExpression] = field(default_factory=dict)
    """Cost of each demand scenario over the horizon [currency]."""
    worst: pulp.LpVariable | None = None
    ties: list[list[int]] = field(default_factory=list)
    """Groups of blocks (indices into ``data.blocks``) that run one fleet (:func:`add_ties`)."""
    budget_rows: dict[tuple[str, int], str] = field(default_factory=dict)
    """Name of each block's budget row (P6), by (demand scenario, period)."""


Coupling = Callable[[HorizonProgram], None]


def held_expr(hp: HorizonProgram, scenario: str, pool: PoolKey, period: int,
              inventory: bool = True) -> pulp.LpAffineExpression:
    r""":math:`H^\xi_{zgkq}`: nodes of a committed pool held in a period (P1, P2)."""
    terms = [(var, 1.0) for (s, key), var in hp.orders.items()
             if s == scenario and key.option.pool == pool
             and period in hp.data.held_periods(key)]
    expr = pulp.LpAffineExpression(terms)
    return expr + (hp.data.held.get((pool, period), 0) if inventory else 0)


def _pool_nodes(program: Program, pool: PoolKey) -> pulp.LpAffineExpression:
    """Nodes a block runs in a committed pool, summed over owners (dedicated pools)."""
    return pulp.lpSum(y for key, y in program.v.nodes.items()
                      if (key[0], key[1], key[2]) == (pool.zone, pool.gpu, pool.purchase))


def _pools(hp: HorizonProgram) -> list[PoolKey]:
    pools = {o.pool for o in hp.data.options} | {p for p, _ in hp.data.held}
    return sorted(pools, key=lambda p: (p.zone, p.gpu, p.purchase.value))


def add_holdings(hp: HorizonProgram, inventory: bool = True) -> None:
    """P1 (with P2 when ``inventory``): each block runs at most the nodes held; an order is
    held for its term (``HorizonData.whole_terms``)."""
    for (scenario, period), program in hp.blocks.items():
        for pool in _pools(hp):
            nodes = _pool_nodes(program, pool)
            hp.prob += nodes <= held_expr(hp, scenario, pool, period, inventory), (
                f"held_{scenario}_{period}_{pool.zone}_{pool.gpu}_{pool.purchase.value}")


def add_lead_time(hp: HorizonProgram) -> None:
    """P3: no order whose order-by date is before the plan date."""
    if not hp.data.lead_times:
        return
    for (_, key), var in hp.orders.items():
        if hp.data.order_by(key) < hp.data.plan_date:
            var.upBound = 0


def add_order_stock(hp: HorizonProgram) -> None:
    """P4: GPUs of one order option held at once ≤ its stock (only additions count)."""
    for scenario in hp.data.scenarios:
        for option in hp.data.options:
            for period in range(len(hp.data.periods)):
                held = [var for (s, key), var in hp.orders.items()
                        if s == scenario.name and key.option == option
                        and period in hp.data.held_periods(key)]
                if held:
                    hp.prob += option.gpus_per_node * pulp.lpSum(held) <= option.stock_gpus, (
                        f"ostock_{scenario.name}_{_option_label(option)}_{period}")


def add_here_and_now(hp: HorizonProgram) -> None:
    """P5: orders due before the next re-plan are the same in every demand scenario."""
    first = hp.data.scenarios[0].name
    for (scenario, key), var in hp.orders.items():
        if scenario != first and hp.data.order_by(key) < hp.data.replan_date:
            hp.prob += var == hp.orders[(first, key)], (
                f"now_{scenario}_{_option_label(key.option)}_{key.arrival}")


def monthly_cost(hp: HorizonProgram, scenario: str, period: int) -> pulp.LpAffineExpression:
    """Monthly cost of a block: its elastic capacity and every order held [currency/month]."""
    held = [(var, key.option.cost_per_node_month) for (s, key), var in hp.orders.items()
            if s == scenario and period in hp.data.held_periods(key)]
    return hp.blocks[(scenario, period)].v.cost + pulp.LpAffineExpression(held)


def add_period_budget(hp: HorizonProgram) -> None:
    """P6: each block's monthly cost within the policy's budget."""
    if hp.data.monthly_budget is None:
        return
    for (scenario, period) in hp.blocks:
        name = hp.budget_rows[(scenario, period)] = f"budget_{scenario}_{period}"
        hp.prob += monthly_cost(hp, scenario, period) <= hp.data.monthly_budget, name


def _option_label(option: OrderOption) -> str:
    pool = option.pool
    return f"{pool.zone}_{pool.gpu}_{pool.purchase.value}_{option.quote}"


#: Couplings of the blocks by name (tests drop one to show it matters). Two more names switch
#: parts of P1: ``terms`` (orders held and paid for their whole term) and ``inventory``.
COUPLINGS: dict[str, Coupling] = {
    "holdings": add_holdings,
    "lead_time": add_lead_time,
    "order_stock": add_order_stock,
    "here_and_now": add_here_and_now,
    "period_budget": add_period_budget,
}


def scenario_cost(hp: HorizonProgram, scenario: str) -> pulp.LpAffineExpression:
    """:math:`c_\\xi`: elastic capacity per month of each period, and the orders [currency]."""
    elastic = pulp.lpSum(p.months * hp.blocks[(scenario, p.index)].v.cost
                         for p in hp.data.periods)
    orders = [(var, hp.data.order_cost(key)) for (s, key), var in hp.orders.items()
              if s == scenario]
    return elastic + pulp.LpAffineExpression(orders)


def tied_blocks(data: HorizonData, couplings: Iterable[str] = (*COUPLINGS, "inventory")
                ) -> list[list[int]]:
    """Groups (two or more, indices into ``data.blocks``) of blocks of one period under several
    demand scenarios that are one program holding the same nodes whatever the orders: equal
    data (demand, capacity, stock), and every order that could be held in that period one
    decided for every demand scenario (due before the re-plan, P5) or one that cannot be placed
    (P3). Such blocks are interchangeable: with the orders fixed each is planned on its own, so
    the cheapest fleet of one is the cheapest of all (with ``robust`` too: it raises no
    scenario's cost), and one fleet for all of them keeps an optimum. The first period of a
    horizon is such a period when every demand scenario starts from the same demand (no order
    arrives in it)."""
    chosen = set(couplings)
    groups: list[list[int]] = []
    for q in range(len(data.periods)):
        free = [k for k in data.order_keys if q in data.held_periods(k)
                and not ("lead_time" in chosen and data.lead_times
                         and data.order_by(k) < data.plan_date)]
        if any(not ("here_and_now" in chosen and data.order_by(k) < data.replan_date)
               for k in free):
            continue  # an order a demand scenario decides on its own may be held then
        same: list[list[int]] = []
        for i, b in enumerate(data.blocks):
            if b.period != q:
                continue
            group = next((g for g in same if data.blocks[g[0]].data == b.data), None)
            if group is None:
                same.append([i])
            else:
                group.append(i)
        groups += [g for g in same if len(g) > 1]
    return groups


def add_ties(hp: HorizonProgram, groups: list[list[int]]) -> None:
    """One fleet for each group of :func:`tied_blocks`: every column of a block equal to the
    same column of the group's first block (rows only; HiGHS's presolve folds them).

    Without them the joint program holds the same fleet several times over, and a search
    closing it may leave two demand scenarios running different fleets for the same demand and
    the same nodes held (qa1: "if demand follows `low`, run 16 more H100" in a first quarter
    where low's demand is base's)."""
    programs = list(hp.blocks.values())
    hp.ties = groups
    for group in groups:
        first = {_unprefixed(v.name): v for v in programs[group[0]].prob.variables()}
        for i in group[1:]:
            for var in programs[i].prob.variables():
                name = _unprefixed(var.name)
                hp.prob += var - first[name] == 0, f"tie_b{i}_{name}"


def _unprefixed(name: str) -> str:
    """A block's column name without the ``b{i}_`` prefix :func:`_merge` gives it."""
    return name.split("_", 1)[1]


def build_horizon_program(
    data: HorizonData, couplings: Iterable[str] = (*COUPLINGS, "terms", "inventory"),
    robust: bool = False, cuts: bool = True, ties: bool = True,
) -> HorizonProgram:
    """Blocks (today's program each), orders, then the couplings, the ties of interchangeable
    blocks (``ties``: :func:`tied_blocks`), then the objective."""
    chosen = set(couplings)
    if "terms" not in chosen:
        data = dataclasses.replace(data, whole_terms=False)
    prob = pulp.LpProblem("fleet_periods", pulp.LpMinimize)
    blocks: dict[tuple[str, int], Program] = {}
    families = [f for f in FAMILIES if f != "budget"]
    for i, block in enumerate(data.blocks):
        program = build_program(block.data, families=families, symmetry=False, cuts=cuts)
        _merge(prob, program, f"b{i}_")
        blocks[(block.scenario, block.period)] = program
    hp = HorizonProgram(prob, data, blocks)
    for s in data.scenarios:
        for key in data.order_keys:
            option = key.option
            hp.orders[(s.name, key)] = prob.add_variable(
                f"u_{s.name}_{_option_label(option)}_a{key.arrival}", 0, cat="Integer")
    for name, add in COUPLINGS.items():
        if name == "holdings" and name in chosen:
            add_holdings(hp, inventory="inventory" in chosen)
        elif name in chosen:
            add(hp)
    if ties:
        add_ties(hp, tied_blocks(data, chosen))
    hp.cost = {s.name: scenario_cost(hp, s.name) for s in data.scenarios}
    if robust:
        hp.worst = prob.add_variable("theta", 0)
        for s in data.scenarios:
            prob += hp.worst >= hp.cost[s.name], f"worst_{s.name}"
        prob += pulp.LpAffineExpression([(hp.worst, 1.0)])
    else:
        prob += pulp.lpSum(s.probability * hp.cost[s.name] for s in data.scenarios)
    return hp


def _merge(prob: pulp.LpProblem, program: Program, prefix: str) -> None:
    """Move a block's variables and rows into the joint problem under a prefix of its own."""
    for var in program.prob.variables():
        var.name = prefix + var.name  # registered with the joint problem by its rows
    for row in program.prob.constraints():
        prob.addConstraint(row, prefix + row.name)
